//! One-off measurements of a file system's metadata round trip (`round_trip`) and of whether
//! its client keeps the names it looked up (`names_kept`), by looking up names that are not
//! there. It creates nothing and never prints.

use std::time::{Duration, Instant};

/// The time of a metadata round trip to the file system holding `dir`: the median of a few
/// lookups of names that are not there (never asked before, so no cache can answer: a LOOKUP
/// on NFS and FUSE, a dentry miss on a local file system). A `statx` forced to sync would
/// do on NFS, but a FUSE daemon may answer it from what it knows the client just changed.
/// With it, whether the client keeps the names it looked up: the last name looked up twice
/// more, answered from the cache (a quarter of the round trip or less) or not (NFS mounted
/// `lookupcache=none` or `noac`, a FUSE daemon whose entries time out at once: every unlink
/// then asks the server for its name again, whatever looked it up before). `None` if it
/// cannot be asked (another error than "no such file").
pub fn round_trip(dir: impl std::os::fd::AsFd) -> Option<(Duration, bool)> {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    const SAMPLES: usize = 5;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let pid = std::process::id();
    let lookup = |name: &str| {
        let t = Instant::now();
        match statx(&dir, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE) {
            Err(rustix::io::Errno::NOENT) | Ok(_) => Some(t.elapsed()),
            Err(_) => None,
        }
    };
    let name = |i: usize| format!(".reclaim-round-trip.{pid}.{nonce}.{i}");
    let mut took = (0..SAMPLES)
        .map(|i| lookup(&name(i)))
        .collect::<Option<Vec<_>>>()?;
    took.sort();
    let median = took[SAMPLES / 2];
    let again = lookup(&name(SAMPLES - 1))?.min(lookup(&name(SAMPLES - 1))?);
    Some((median, again * 4 <= median))
}

/// Whether the client keeps a name it looked up (see `round_trip`), from one name that is not
/// there looked up twice: the second answered in a quarter of the first's time or less.
pub fn names_kept(dir: impl std::os::fd::AsFd) -> bool {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    let name = format!(
        ".reclaim-names-kept.{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    );
    let lookup = || {
        let t = Instant::now();
        let r = statx(
            &dir,
            name.as_str(),
            AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::TYPE,
        );
        matches!(r, Ok(_) | Err(rustix::io::Errno::NOENT)).then(|| t.elapsed())
    };
    match (lookup(), lookup()) {
        (Some(first), Some(again)) => again * 4 <= first,
        _ => true,
    }
}
