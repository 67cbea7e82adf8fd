//! One-off measurements of a file system's metadata round trip (`round_trip`) and of whether
//! its client keeps the names it looked up (`names_kept`), by looking up names that are not
//! there. It creates nothing and never prints.

use std::time::{Duration, Instant};

/// The time of a metadata round trip to the file system holding `dir`: the median of a few
/// lookups of names that are not there (never asked before, so no cache can answer: a LOOKUP
/// on NFS and FUSE, a dentry miss on a local file system). A `statx` forced to sync would
/// do on NFS, but a FUSE daemon may answer it from what it knows the client just changed.
/// With it, whether the client keeps the names it looked up (see `Lookups::kept`). `None` if
/// it cannot be asked (another error than "no such file").
pub fn round_trip(dir: impl std::os::fd::AsFd) -> Option<(Duration, bool)> {
    let l = Lookups::take(dir.as_fd(), "round-trip", 5, false)?;
    Some((l.median(), l.kept))
}

/// Whether the client keeps a name it looked up (see `Lookups::kept`): a client that cannot
/// be asked is taken to keep them.
pub fn names_kept(dir: impl std::os::fd::AsFd) -> bool {
    Lookups::take(dir.as_fd(), "names-kept", 4, true).is_none_or(|l| l.kept)
}

/// Lookups of names that are not there, each asked again at once until the answers tell
/// whether the client keeps them.
struct Lookups {
    /// The first lookup of each name: a round trip each.
    firsts: Vec<Duration>,
    /// Whether the client keeps the names it looked up. NFS mounted `lookupcache=none` or
    /// `noac`, or a FUSE daemon whose entries time out at once, asks the server again, and
    /// every unlink then asks for its name again, whatever looked it up before. Told by
    /// whether a repeat waited: a lookup the server answers puts the thread to sleep until
    /// the reply (a voluntary context switch), one answered from the client's cache never
    /// does, however loaded the machine. Times alone misled there: a first lookup that
    /// waited for the CPU looks slow beside its repeat, and a repeat preempted looks like a
    /// round trip (judged by times, 3 of 8 runs beside three busy loops on 2 cores said
    /// "kept" of a client that keeps nothing, and a loaded CI run "not kept" of one that
    /// does). One repeat in all that waited (for a lock, say) is forgiven; two end the
    /// asking. Where no first lookup waited either (a local file system, a server that
    /// answered before the thread slept), the times judge: every repeat within a quarter of
    /// the fastest first.
    kept: bool,
}

impl Lookups {
    /// `n` names (fewer with `told`: none after the answer is known).
    fn take(dir: std::os::fd::BorrowedFd<'_>, what: &str, n: usize, told: bool) -> Option<Lookups> {
        use crate::sys::process::waits_of_this_thread as waits;
        use rustix::fs::{statx, AtFlags, StatxFlags};
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let pid = std::process::id();
        // Its time, and whether the thread waited for the answer.
        let lookup = |name: &str| {
            let w = waits();
            let t = Instant::now();
            let r = statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE);
            let took = t.elapsed();
            let waited = matches!((w, waits()), (Some(a), Some(b)) if b > a);
            match r {
                Err(rustix::io::Errno::NOENT) | Ok(_) => Some((took, waited)),
                Err(_) => None,
            }
        };
        let mut firsts = Vec::with_capacity(n);
        let (mut firsts_waited, mut repeats_waited) = (0, 0);
        let mut slowest_repeat = Duration::ZERO;
        for i in 0..n {
            if told && repeats_waited >= 2 {
                break;
            }
            let name = format!(".reclaim-{what}.{pid}.{nonce}.{i}");
            let (first, waited) = lookup(&name)?;
            firsts.push(first);
            firsts_waited += usize::from(waited);
            if repeats_waited < 2 {
                let (again, waited) = lookup(&name)?;
                slowest_repeat = slowest_repeat.max(again);
                repeats_waited += usize::from(waited);
            }
        }
        let fastest = firsts.iter().min().copied().unwrap_or_default();
        let kept = if firsts_waited > 0 {
            repeats_waited < 2
        } else {
            slowest_repeat * 4 <= fastest
        };
        Some(Lookups { kept, firsts })
    }

    fn median(&self) -> Duration {
        let mut t = self.firsts.clone();
        t.sort();
        t[t.len() / 2]
    }
}
