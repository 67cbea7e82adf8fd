//! Which archive `pack` may act on: only one it can prove its own. An archive found under the
//! final name (a pack to resume, a directory already packed) is used only if it is a regular
//! file with one link, owned by the caller or root, in a directory no one else may rename in
//! (`others_may_move_names`: the trash's placement rule); and a new archive is written only
//! where that holds too, so that no one else can take it away once the originals are gone.
//! Opening never follows a symlink nor blocks on a FIFO (`safeopen`). Decides nothing about
//! the originals: `unlink` compares each one with the archive's bytes.

use std::ffi::CStr;
use std::os::fd::OwnedFd;

use rustix::io::Errno;

use crate::sys::safeopen::{self, Access, Bad};

/// Why an archive (or the directory it is in) is not trusted, in a few words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOurs(pub String);

fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether the directory `dir` keeps what the caller puts there: owned by the caller or root,
/// and writable by no one else unless sticky. Why not, if not.
pub fn placement(dir: &OwnedFd) -> Result<(), NotOurs> {
    let st = rustix::fs::fstat(dir).map_err(|e| NotOurs(crate::sys::error::errno_text(e)))?;
    match safeopen::others_may_move_names(&st, me()) {
        None => Ok(()),
        Some(why) => Err(NotOurs(format!(
            "it is in a directory where {why}, so another user could remove or replace it"
        ))),
    }
}

/// Opens the archive `name` in `dir` (read-only, close-on-exec) if it is there and provably
/// the caller's own: `Ok(None)` if nothing has the name; `Err` with why it is not trusted
/// (a symlink, a FIFO or anything but a regular file, another owner, another link, a
/// directory others may rename in).
pub fn open_own(dir: &OwnedFd, name: &CStr) -> Result<Option<(OwnedFd, u64)>, NotOurs> {
    let (fd, st) = match safeopen::open_file_at(dir, name, Access::Read) {
        Ok(v) => v,
        Err(Bad::Missing) => return Ok(None),
        Err(Bad::NotRegular(what)) => return Err(NotOurs(format!("it is a {what}"))),
        // A FIFO without a writer, opened O_NONBLOCK: it never blocks.
        Err(Bad::Os(Errno::NXIO)) => return Err(NotOurs("it is a FIFO".into())),
        Err(e) => return Err(NotOurs(format!("it cannot be opened: it {e}"))),
    };
    let me = me();
    if st.st_uid != me && st.st_uid != 0 {
        return Err(NotOurs(format!(
            "it is owned by uid {}, not by you{}",
            st.st_uid,
            if me == 0 { "" } else { " or root" }
        )));
    }
    if st.st_nlink != 1 {
        return Err(NotOurs(format!(
            "it has {} hard links (another name could change it)",
            st.st_nlink
        )));
    }
    placement(dir)?;
    Ok(Some((fd, st.st_size as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_an_own_regular_file_in_a_kept_directory_is_trusted() {
        let d = tempfile::tempdir().unwrap();
        let dir = safeopen::open_dir_path(d.path()).unwrap();
        assert_eq!(open_own(&dir, c"none").unwrap().map(|_| ()), None);
        std::fs::write(d.path().join("a.sqfs"), b"x").unwrap();
        assert!(open_own(&dir, c"a.sqfs").unwrap().is_some());
        std::fs::hard_link(d.path().join("a.sqfs"), d.path().join("b.sqfs")).unwrap();
        assert!(open_own(&dir, c"a.sqfs")
            .unwrap_err()
            .0
            .contains("hard links"));
        std::os::unix::fs::symlink("b.sqfs", d.path().join("l.sqfs")).unwrap();
        assert!(open_own(&dir, c"l.sqfs")
            .unwrap_err()
            .0
            .contains("symbolic link"));
        safeopen::mknod_at(&dir, c"p.sqfs", rustix::fs::FileType::Fifo, 0o644, 0).unwrap();
        assert!(open_own(&dir, c"p.sqfs").unwrap_err().0.contains("FIFO"));
        std::fs::write(d.path().join("c.sqfs"), b"x").unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(open_own(&dir, c"c.sqfs")
            .unwrap_err()
            .0
            .contains("another user"));
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(open_own(&dir, c"c.sqfs").unwrap().is_some());
    }
}
