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
    let l = Lookups::take(dir.as_fd(), "round-trip", 5)?;
    Some((l.median(), l.kept))
}

/// Whether the client keeps a name it looked up (see `Lookups::kept`): a client that cannot
/// be asked is taken to keep them.
pub fn names_kept(dir: impl std::os::fd::AsFd) -> bool {
    Lookups::take(dir.as_fd(), "names-kept", 4).map_or(true, |l| l.kept)
}

/// Lookups of names that are not there, each asked again at once while the answers say the
/// client may keep them.
struct Lookups {
    /// The first lookup of each name: a round trip each.
    firsts: Vec<Duration>,
    /// Whether the client keeps the names it looked up: every name asked again was answered
    /// from the client's cache, in a quarter of the fastest first lookup's time or less. NFS
    /// mounted `lookupcache=none` or `noac`, or a FUSE daemon whose entries time out at once,
    /// asks the server again, and every unlink then asks for its name again, whatever looked
    /// it up before. Each name is asked again, and the slowest answer judged against the
    /// fastest first: on a loaded machine a first lookup that waited for the CPU looks slow
    /// beside its repeat (one repeat judged against the median of five said "kept" in 3 of 8
    /// runs beside three busy loops on 2 cores), but it cannot make every first slow and no
    /// repeat slow. A repeat as slow as a quarter of its own first ends the asking: the
    /// client asked the server again.
    kept: bool,
}

impl Lookups {
    fn take(dir: std::os::fd::BorrowedFd<'_>, what: &str, n: usize) -> Option<Lookups> {
        use rustix::fs::{statx, AtFlags, StatxFlags};
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let pid = std::process::id();
        let lookup = |name: &str| {
            let t = Instant::now();
            match statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE) {
                Err(rustix::io::Errno::NOENT) | Ok(_) => Some(t.elapsed()),
                Err(_) => None,
            }
        };
        let mut firsts = Vec::with_capacity(n);
        let mut slowest_again = Duration::ZERO;
        let mut kept = true;
        for i in 0..n {
            let name = format!(".reclaim-{what}.{pid}.{nonce}.{i}");
            let first = lookup(&name)?;
            firsts.push(first);
            if kept {
                let again = lookup(&name)?;
                slowest_again = slowest_again.max(again);
                kept = again * 4 <= first;
            }
        }
        let fastest = firsts.iter().min().copied().unwrap_or_default();
        Some(Lookups {
            kept: kept && slowest_again * 4 <= fastest,
            firsts,
        })
    }

    fn median(&self) -> Duration {
        let mut t = self.firsts.clone();
        t.sort();
        t[t.len() / 2]
    }
}
