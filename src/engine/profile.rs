//! File system profiles (docs/ARCHITECTURE.md): what kind of file system a directory is on — local
//! on an SSD, on a rotational disk, in memory, on the network, or a local FUSE file system — from
//! its `statfs` magic, the mount table's type (FUSE subtypes included) and the backing disk's
//! `queue/rotational`, and the defaults that follow: how many workers to start with (the
//! concurrency controller measures from there) and at most, how many of them inside one directory,
//! whether small directories' entries are `lstat`ed (a round trip each on a network file system),
//! and whether the governor steers the workers by default. A FUSE file system whose metadata round
//! trip, measured, is a network's is taken for one (most FUSE network file systems show as plain
//! `fuse`). Decides defaults only; flags always win.

use std::os::fd::AsFd;

use serde::Serialize;

/// The kinds of file system whose removal behaves differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// A local file system on a solid-state (or virtual) disk: CPU- and lock-bound.
    LocalSsd,
    /// A local file system on a disk that says it is rotational: seek-bound, shared.
    Rotational,
    /// tmpfs, ramfs: CPU-bound.
    Memory,
    /// NFS, SMB, CephFS, Lustre, GPFS, BeeGFS, 9p, network FUSE (sshfs, ...): round-trip bound.
    Network,
    /// Another FUSE file system (bindfs, ...): each call a trip to a daemon.
    Fuse,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::LocalSsd => "local-ssd",
            Class::Rotational => "rotational",
            Class::Memory => "memory",
            Class::Network => "network",
            Class::Fuse => "fuse",
        }
    }

    /// From `--profile NAME`.
    pub fn parse(name: &str) -> Option<Class> {
        Some(match name {
            "local-ssd" | "ssd" | "local" => Class::LocalSsd,
            "rotational" | "hdd" => Class::Rotational,
            "memory" | "tmpfs" => Class::Memory,
            "network" | "nfs" => Class::Network,
            "fuse" => Class::Fuse,
            _ => return None,
        })
    }
}

/// What a profile decides, and what it was decided from.
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    pub class: Class,
    /// The mount table's type (`ext4`, `nfs4`, `fuse.sshfs`, ...), if known.
    pub fs_type: String,
    /// Workers for a fixed count (scan).
    pub workers: usize,
    /// Workers a removal starts with; it measures from there (`pace::concurrency`) ...
    pub start: usize,
    /// ... up to this many.
    pub max_workers: usize,
    /// The metadata round trip measured when the profile was made (lookups of names that are
    /// not there: `pace::concurrency::round_trip`), in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_trip_ms: Option<f64>,
    /// Whether the client keeps the names it looked up (measured with the round trip): only
    /// then does looking names up ahead of their unlinks, or stating a small directory's
    /// entries, cost nothing more than the unlinks' own lookups (a network file system).
    pub names_cached: bool,
    /// On a disk that says it is rotational: the mean time of the walk's first directory
    /// reads (`remove::Start`), in milliseconds, where there were some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_read_ms: Option<f64>,
    /// Workers at once inside one large directory (its lock serializes them).
    pub batch_threads: usize,
    /// `lstat` each entry of directories with few entries, to meet large files there.
    pub stat_small_dirs: bool,
    /// The governor steers the active workers by default (on a rotational disk only once the
    /// latency probe confirms the disk answers like one).
    pub governed: bool,
    /// "detected", or "--profile" when given.
    pub source: &'static str,
    /// What changed a default, and why (a disk that says rotational but is fast).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Operations a network file system keeps in flight where nothing measures (scan): a Linux
/// NFS client's slot table (bench/RESULTS.md: 64 was the best of the sweep on the emulated NFS
/// at RTT 0.2, 0.5 and 2 ms, 1.1-1.5x faster than 32; on a real NFS server 64 and 32 were
/// equal).
pub const NETWORK_WORKERS: usize = 64;

/// Where a removal on a network file system starts, and the most it may reach: the
/// controller doubles from 8 while that pays (64 slots: three doublings), and steps back to
/// the client's or server's real limit (4 or 16 slots) when it does not. Starting at 16, the
/// first doubling put 32 requests on a 4-slot client: 16 ms of queue that the latency
/// governor took for harm.
pub const NETWORK_START: usize = 8;
pub const NETWORK_MAX: usize = 128;

/// A metadata round trip this long or longer (measured) is a network's: a local FUSE daemon
/// answers a GETATTR in tens of microseconds, a server on a LAN in a hundred or more.
pub const REMOTE_ROUND_TRIP: std::time::Duration = std::time::Duration::from_micros(100);

/// `statfs` magic numbers (linux/magic.h and the file systems' own headers).
mod magic {
    pub const EXT: u64 = 0xEF53;
    pub const TMPFS: u64 = 0x0102_1994;
    pub const RAMFS: u64 = 0x8584_58f6;
    pub const NFS: u64 = 0x6969;
    pub const SMB: u64 = 0x517B;
    pub const SMB2: u64 = 0xFE53_4D42;
    pub const CIFS: u64 = 0xFF53_4D42;
    pub const CEPH: u64 = 0x00C3_6400;
    pub const LUSTRE: u64 = 0x0BD0_0BD0;
    pub const GPFS: u64 = 0x4750_4653;
    pub const BEEGFS: u64 = 0x1983_0326;
    pub const V9FS: u64 = 0x0102_1997;
    pub const AFS: u64 = 0x5346_414F;
    pub const FUSE: u64 = 0x6573_5546;
}

/// FUSE subtypes (`fuse.NAME` in the mount table) that are network file systems.
const NETWORK_FUSE: &[&str] = &[
    "sshfs",
    "rclone",
    "s3fs",
    "gcsfuse",
    "goofys",
    "blobfuse",
    "blobfuse2",
    "glusterfs",
    "ceph-fuse",
    "cephfs",
    "lustre",
    "moosefs",
    "mfs",
    "juicefs",
    "seaweedfs",
    "beegfs",
    "davfs",
    "curlftpfs",
    "smbnetfs",
    "nfs",
];

/// Mount table types of network file systems (kernel clients).
const NETWORK_TYPES: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "ceph",
    "lustre",
    "gpfs",
    "beegfs",
    "9p",
    "afs",
    "glusterfs",
    "ocfs2",
    "gfs2",
    "orangefs",
    "pvfs2",
    "davfs",
];

impl Profile {
    /// The profile of the file system holding `dir`.
    pub fn detect(dir: impl AsFd) -> Profile {
        let dir = dir.as_fd();
        let fs_type = crate::sys::dirfd::fstat(dir)
            .ok()
            .and_then(|f| crate::sys::mounts::by_id(f.mnt_id))
            .map(|m| m.fstype)
            .unwrap_or_default();
        let magic = rustix::fs::fstatfs(dir).map_or(0, |s| s.f_type as u64);
        let class = classify(magic, &fs_type, || {
            crate::sys::dirfd::fstat(dir)
                .map(|f| rotational(f.ident.dev, f.mnt_id))
                .unwrap_or(false)
        });
        let measured = crate::engine::pace::concurrency::round_trip(dir);
        let round_trip = measured.map(|(r, _)| r);
        let remote = class == Class::Fuse && round_trip.is_some_and(|r| r >= REMOTE_ROUND_TRIP);
        let class = if remote { Class::Network } else { class };
        let mut p = Profile::of(class, fs_type, magic == magic::EXT, "detected");
        p.round_trip_ms = round_trip.map(|r| r.as_secs_f64() * 1e3);
        p.names_cached = measured.is_none_or(|(_, cached)| cached);
        if class == Class::Network && !p.names_cached {
            // A stat of a small directory's entry is a lookup more for each: its unlink
            // looks the name up again (bench/RESULTS.md, 2026-11-29).
            p.stat_small_dirs = false;
        }
        let notes = [
            remote.then(|| {
                format!(
                    "a FUSE file system with a metadata round trip of {:.2} ms (measured): a \
                     network file system",
                    round_trip.unwrap_or_default().as_secs_f64() * 1e3
                )
            }),
            (class == Class::Network && !p.names_cached).then(|| {
                "the client keeps no names it looked up (measured): no lookups ahead of the \
                 unlinks, small directories not stated"
                    .to_string()
            }),
        ];
        let notes: Vec<String> = notes.into_iter().flatten().collect();
        p.note = (!notes.is_empty()).then(|| notes.join("; "));
        p
    }

    /// The profile of the file system holding `dir`: the class `--profile` named, or the
    /// detected one.
    pub fn asked(class: Option<Class>, dir: impl AsFd) -> Profile {
        match class {
            Some(class) => Profile::named(class, dir),
            None => Profile::detect(dir),
        }
    }

    /// The profile named on the command line, for the file system holding `dir`.
    pub fn named(class: Class, dir: impl AsFd) -> Profile {
        let d = Profile::detect(dir);
        let ext = d.fs_type.starts_with("ext");
        let mut p = Profile::of(class, d.fs_type, ext, "--profile");
        p.round_trip_ms = d.round_trip_ms;
        p.names_cached = d.names_cached;
        p
    }

    /// A disk that says it is rotational and whose first directory reads (`reads`: how many,
    /// their mean) took a spinning disk's time, or were not seen; not probed (the probe's few
    /// synchronous writes cost more than a removal of a few thousand files: `remove::Start`):
    /// one worker to start, as `rm -rf`, more only as the measured concurrency finds they pay
    /// (a spinning disk gains nothing from a second), not governed. On
    /// the emulated 7200 rpm disk next to a WAL-bound PostgreSQL a governor never let a
    /// second worker in, and its own synchronous probe writes put the neighbours' p99 1.24x
    /// `rm -rf`'s; one worker without it was level with `rm -rf` (bench/RESULTS.md,
    /// 2026-11-26, "Gentle trees on a spinning disk").
    pub fn start_rotational(&mut self, reads: Option<(u64, std::time::Duration)>) {
        self.governed = false;
        self.start = 1;
        self.first_read_ms = reads.map(|(_, mean)| mean.as_secs_f64() * 1e3);
        let read = reads.map_or(String::new(), |(n, mean)| {
            format!(
                " (its first {n} directory reads took {:.2} ms on average, measured)",
                mean.as_secs_f64() * 1e3
            )
        });
        self.note = Some(format!(
            "says rotational{read}: one worker to start, as rm -rf, more only as measured to \
             pay; not governed (--max-latency governs)"
        ));
    }

    /// A disk that says it is rotational but whose `n` first directory reads took `mean` on
    /// average, an SSD's or the page cache's time (`remove::Start`): the profile's workers to
    /// start, not governed.
    pub fn reads_fast(&mut self, n: u64, mean: std::time::Duration) {
        self.governed = false;
        self.first_read_ms = Some(mean.as_secs_f64() * 1e3);
        self.note = Some(format!(
            "says rotational, but its first {n} directory reads took {:.2} ms on average \
             (measured): started as on an SSD; not governed (--max-latency governs)",
            mean.as_secs_f64() * 1e3
        ));
    }

    /// Where the workers start, in words (the concurrency report).
    pub fn start_reason(&self) -> String {
        format!(
            "the {} profile{}",
            self.class.name(),
            if self.source == "detected" {
                ""
            } else {
                " (--profile)"
            }
        )
    }

    fn of(class: Class, fs_type: String, ext: bool, source: &'static str) -> Profile {
        let cpus = cpus();
        // ext2/3/4 gain from a second worker per CPU (it overlaps cold directory and
        // inode-table reads); xfs loses (its per-allocation-group locks contend): RESULTS.md.
        let local = if ext { 2 * cpus } else { cpus };
        // btrfs starts with one (the controller adds more only if they pay): every unlink of a
        // subvolume modifies its one b-tree, and a second worker spent 1.8x the CPU for the
        // same tree of 200,000 files and finished later (12.1 s against `rm -rf`'s 9.9 s on one
        // CPU: bench/RESULTS.md, 2026-11-26).
        let first = if fs_type == "btrfs" { 1 } else { local };
        let (start, max_workers) = match class {
            Class::Network => (NETWORK_START, NETWORK_MAX),
            Class::LocalSsd | Class::Rotational => (first, (4 * local).max(8)),
            Class::Memory | Class::Fuse => (cpus, (4 * cpus).max(16)),
        };
        // Workers at once in one large directory: its lock serializes the unlinks, and a
        // second worker overlaps only what follows (freeing the inode). On xfs that second
        // worker contends with xfs's own background inode inactivation instead: one directory of
        // 1,000,000 files took 71 s with two, 51 s with one, 47 s for one thread unlinking the
        // known names and 45 s for `find -delete` (bench/RESULTS.md, 2026-11-26).
        let per_dir = if fs_type == "xfs" { 1 } else { cpus };
        let (workers, batch_threads, stat_small_dirs, governed) = match class {
            Class::LocalSsd => (local, per_dir, true, false),
            Class::Rotational => (local, per_dir, true, true),
            Class::Memory => (cpus, cpus, true, false),
            // Unlinks in one directory are serialized by its lock (on the client), so more
            // than one worker there only waits. Small directories' entries are stated as the
            // client has them cached (AT_STATX_DONT_SYNC): free after a READDIRPLUS listing,
            // NFS's default (measured on the emulator: within noise; +20% without it).
            Class::Network => (NETWORK_WORKERS, 1, true, true),
            Class::Fuse => (cpus, cpus, true, false),
        };
        Profile {
            class,
            fs_type,
            workers,
            start,
            max_workers,
            round_trip_ms: None,
            names_cached: true,
            first_read_ms: None,
            batch_threads,
            stat_small_dirs,
            governed,
            source,
            note: None,
        }
    }
}

/// Whether `statfs`'s magic says a network or FUSE file system (where a lookup may be a round
/// trip): what can be known without the mount table.
pub fn remote_magic(magic: u64) -> bool {
    use magic::*;
    matches!(
        magic,
        NFS | SMB | SMB2 | CIFS | CEPH | LUSTRE | GPFS | BEEGFS | V9FS | AFS | FUSE
    )
}

/// The class of a file system from its magic and mount type (`rotational` asked only for a
/// local block file system).
fn classify(magic: u64, fs_type: &str, rotational: impl FnOnce() -> bool) -> Class {
    use magic::*;
    if let Some(sub) = fs_type
        .strip_prefix("fuse.")
        .or(fs_type.strip_prefix("fuseblk."))
    {
        return if NETWORK_FUSE.contains(&sub) {
            Class::Network
        } else {
            Class::Fuse
        };
    }
    if NETWORK_TYPES.contains(&fs_type) {
        return Class::Network;
    }
    match magic {
        NFS | SMB | SMB2 | CIFS | CEPH | LUSTRE | GPFS | BEEGFS | V9FS | AFS => Class::Network,
        FUSE => Class::Fuse,
        TMPFS | RAMFS => Class::Memory,
        _ if fs_type == "tmpfs" || fs_type == "ramfs" => Class::Memory,
        _ if rotational() => Class::Rotational,
        _ => Class::LocalSsd,
    }
}

/// Whether the disk under block device `dev` (through partitions, loop devices and
/// device-mapper, as the pacer finds it) says it is rotational.
fn rotational(dev: u64, mnt_id: u64) -> bool {
    let chain = crate::engine::pace::signals::backing_chain(dev, mnt_id);
    chain.last().is_some_and(|disk| {
        crate::sys::safeopen::kernel::read_to_string(format!("/sys/block/{disk}/queue/rotational"))
            .is_ok_and(|t| t.trim() == "1")
    })
}

/// CPUs this process may run on (its affinity and cgroup quota, read once, when first asked:
/// a removal that stays small never asks).
pub fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_by_magic_and_type() {
        let no = || false;
        assert_eq!(classify(magic::NFS, "nfs4", no), Class::Network);
        assert_eq!(classify(magic::FUSE, "fuse.sshfs", no), Class::Network);
        assert_eq!(classify(magic::FUSE, "fuse.bindfs", no), Class::Fuse);
        assert_eq!(classify(magic::FUSE, "fuse", no), Class::Fuse);
        assert_eq!(classify(magic::TMPFS, "tmpfs", no), Class::Memory);
        assert_eq!(classify(magic::EXT, "ext4", no), Class::LocalSsd);
        assert_eq!(classify(magic::EXT, "ext4", || true), Class::Rotational);
        assert_eq!(classify(0x5846_5342, "xfs", || true), Class::Rotational);
        assert_eq!(classify(0, "cifs", no), Class::Network);
        assert_eq!(classify(magic::CEPH, "ceph", || true), Class::Network);
    }

    #[test]
    fn network_defaults_keep_tens_in_flight() {
        let p = Profile::of(Class::Network, "nfs4".into(), false, "detected");
        assert_eq!(p.workers, NETWORK_WORKERS);
        assert_eq!(p.batch_threads, 1);
        assert!(p.stat_small_dirs && p.governed);
        let p = Profile::of(Class::LocalSsd, "ext4".into(), true, "detected");
        assert_eq!(p.workers, 2 * cpus());
        assert!(p.stat_small_dirs && !p.governed);
        let p = Profile::of(Class::Rotational, "xfs".into(), false, "detected");
        assert_eq!(p.batch_threads, 1, "one worker per directory on xfs");
        assert_eq!(p.start, cpus());
        let p = Profile::of(Class::LocalSsd, "btrfs".into(), false, "detected");
        assert_eq!(p.start, 1, "btrfs removals start with one worker");
        assert!(p.max_workers >= 8, "and may measure more");
        assert_eq!(p.workers, cpus(), "scan keeps its workers");
        assert_eq!(Class::parse("network"), Some(Class::Network));
        assert_eq!(Class::parse("floppy"), None);
    }

    #[test]
    fn detects_this_process_root() {
        let fd = crate::sys::dirfd::open_dir_path(std::path::Path::new("/")).unwrap();
        let p = Profile::detect(&fd);
        assert!(!p.fs_type.is_empty());
        assert!(p.workers >= 1);
    }
}
