//! Per-operation counters of netfs: how many requests of each kind, how long they
//! queued for a slot, how long the real backing call took and how long the caller
//! waited in all. Written as JSON by `--stats FILE` (on SIGUSR1 and at exit).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Every FUSE request netfs answers. The first group are RPCs (they wait the RTT
/// and take a slot); the rest are answered at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Lookup,
    Getattr,
    Setattr,
    Readlink,
    Mknod,
    Mkdir,
    Unlink,
    Rmdir,
    Symlink,
    Rename,
    Link,
    Open,
    Read,
    Write,
    Fsync,
    Opendir,
    Readdir,
    Readdirplus,
    Fsyncdir,
    Statfs,
    Create,
    Fallocate,
    // Free (no round trip):
    Flush,
    Release,
    Releasedir,
    Forget,
    /// `renameat2` with a flag: EINVAL at once, as the NFS client answers it.
    RenameFlags,
    /// A GETATTR answered from the post-op attributes of this mount's own last change
    /// of the inode (NFS wcc data), without a round trip.
    GetattrWcc,
}

pub const OPS: [Op; 28] = [
    Op::Lookup,
    Op::Getattr,
    Op::Setattr,
    Op::Readlink,
    Op::Mknod,
    Op::Mkdir,
    Op::Unlink,
    Op::Rmdir,
    Op::Symlink,
    Op::Rename,
    Op::Link,
    Op::Open,
    Op::Read,
    Op::Write,
    Op::Fsync,
    Op::Opendir,
    Op::Readdir,
    Op::Readdirplus,
    Op::Fsyncdir,
    Op::Statfs,
    Op::Create,
    Op::Fallocate,
    Op::Flush,
    Op::Release,
    Op::Releasedir,
    Op::Forget,
    Op::RenameFlags,
    Op::GetattrWcc,
];

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Lookup => "lookup",
            Op::Getattr => "getattr",
            Op::Setattr => "setattr",
            Op::Readlink => "readlink",
            Op::Mknod => "mknod",
            Op::Mkdir => "mkdir",
            Op::Unlink => "unlink",
            Op::Rmdir => "rmdir",
            Op::Symlink => "symlink",
            Op::Rename => "rename",
            Op::Link => "link",
            Op::Open => "open",
            Op::Read => "read",
            Op::Write => "write",
            Op::Fsync => "fsync",
            Op::Opendir => "opendir",
            Op::Readdir => "readdir",
            Op::Readdirplus => "readdirplus",
            Op::Fsyncdir => "fsyncdir",
            Op::Statfs => "statfs",
            Op::Create => "create",
            Op::Fallocate => "fallocate",
            Op::Flush => "flush",
            Op::Release => "release",
            Op::Releasedir => "releasedir",
            Op::Forget => "forget",
            Op::RenameFlags => "rename_flags",
            Op::GetattrWcc => "getattr_wcc",
        }
    }

    /// Whether this operation is a round trip (waits the RTT, takes a slot).
    pub fn is_rpc(self) -> bool {
        !matches!(
            self,
            Op::Flush
                | Op::Release
                | Op::Releasedir
                | Op::Forget
                | Op::RenameFlags
                | Op::GetattrWcc
        )
    }

    fn index(self) -> usize {
        OPS.iter()
            .position(|&o| o == self)
            .expect("every Op is in OPS")
    }
}

#[derive(Default, Debug)]
struct Counters {
    count: AtomicU64,
    errors: AtomicU64,
    /// Directory entries returned (readdir/readdirplus).
    items: AtomicU64,
    /// From arrival to a slot (client slot table and server cap).
    queue_ns: AtomicU64,
    /// The real backing call(s).
    service_ns: AtomicU64,
    /// From arrival to the reply: what the caller waited.
    total_ns: AtomicU64,
}

#[derive(Debug)]
pub struct Stats {
    ops: Vec<Counters>,
    started: Instant,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            ops: OPS.iter().map(|_| Counters::default()).collect(),
            started: Instant::now(),
        }
    }

    pub fn record(&self, op: Op, ok: bool, queue: Duration, service: Duration, total: Duration) {
        let c = &self.ops[op.index()];
        c.count.fetch_add(1, Ordering::Relaxed);
        if !ok {
            c.errors.fetch_add(1, Ordering::Relaxed);
        }
        c.queue_ns
            .fetch_add(queue.as_nanos() as u64, Ordering::Relaxed);
        c.service_ns
            .fetch_add(service.as_nanos() as u64, Ordering::Relaxed);
        c.total_ns
            .fetch_add(total.as_nanos() as u64, Ordering::Relaxed);
    }

    /// A free operation: counted, no wait.
    pub fn record_free(&self, op: Op, ok: bool) {
        self.record(op, ok, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    }

    pub fn add_items(&self, op: Op, n: u64) {
        self.ops[op.index()].items.fetch_add(n, Ordering::Relaxed);
    }

    pub fn count(&self, op: Op) -> u64 {
        self.ops[op.index()].count.load(Ordering::Relaxed)
    }

    pub fn errors(&self, op: Op) -> u64 {
        self.ops[op.index()].errors.load(Ordering::Relaxed)
    }

    /// Round trips answered so far (all RPC kinds).
    pub fn rpcs(&self) -> u64 {
        OPS.iter()
            .filter(|o| o.is_rpc())
            .map(|&o| self.count(o))
            .sum()
    }

    /// `"ops": {...}` body: one object per operation seen at least once, plus
    /// `rpcs` (total round trips) and `uptime_s`.
    pub fn json_fields(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "\"uptime_s\": {:.3}, \"rpcs\": {}, \"ops\": {{",
            self.started.elapsed().as_secs_f64(),
            self.rpcs()
        );
        let mut first = true;
        for (op, c) in OPS.iter().zip(&self.ops) {
            let n = c.count.load(Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            let ms = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = write!(
                s,
                "{}\n    \"{}\": {{\"count\": {}, \"errors\": {}, \"items\": {}, \
                 \"queue_ms\": {:.3}, \"service_ms\": {:.3}, \"total_ms\": {:.3}, \
                 \"mean_ms\": {:.4}, \"rpc\": {}}}",
                if first { "" } else { "," },
                op.name(),
                n,
                c.errors.load(Ordering::Relaxed),
                c.items.load(Ordering::Relaxed),
                ms(&c.queue_ns),
                ms(&c.service_ns),
                ms(&c.total_ns),
                ms(&c.total_ns) / n as f64,
                op.is_rpc()
            );
            first = false;
        }
        s.push_str("\n  }");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_table_is_complete_and_named_uniquely() {
        let mut names: Vec<_> = OPS.iter().map(|o| o.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), OPS.len());
        for (i, op) in OPS.iter().enumerate() {
            assert_eq!(op.index(), i);
        }
    }

    #[test]
    fn counts_rpcs_not_free_ops() {
        let s = Stats::new();
        let ms = Duration::from_millis(1);
        s.record(Op::Lookup, true, ms, ms, ms * 2);
        s.record(Op::Unlink, false, ms, ms, ms * 2);
        s.record_free(Op::Release, true);
        s.record_free(Op::RenameFlags, false);
        assert_eq!(s.rpcs(), 2);
        assert_eq!(s.count(Op::Release), 1);
        assert_eq!(s.errors(Op::Unlink), 1);
        let j = s.json_fields();
        assert!(
            j.contains("\"lookup\": {\"count\": 1, \"errors\": 0"),
            "{j}"
        );
        assert!(j.contains("\"rename_flags\""), "{j}");
        assert!(!j.contains("\"getattr\""), "{j}");
    }
}
