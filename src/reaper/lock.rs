//! A trash's lock (`<trash>/lock`, an exclusive `flock`): one reaper per trash. Owns taking
//! it, the handover from `rm --background` to the reaper it starts (`adopt_lock`), and who
//! holds it (`holder`, from `/proc/locks`). Never waits for a lock: the wait loops are `wait`'s.

use std::os::fd::OwnedFd;

use rustix::io::Errno;

use crate::sys::dirfd;
use crate::sys::locks;
use crate::trash::{safefile, Trash, LOCK};

/// Holds a trash's lock while alive.
pub struct TrashLock(OwnedFd);

impl TrashLock {
    /// The open lock file (to hand the lock over to a reaper being started).
    pub fn fd(&self) -> &OwnedFd {
        &self.0
    }
}

/// Why a trash's lock cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// The `lock` is not a plain file of the trash's owner (it was not opened).
    #[error("damaged: lock {0}")]
    Damaged(safefile::Bad),
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(Errno),
}

/// A trash lock this process was started holding (`rm --background` takes it before it starts
/// the reaper, so that no `status` in between finds the trash without one): used by the first
/// `TrashLock::try_take` of that trash.
static HANDED_OVER: std::sync::Mutex<Option<OwnedFd>> = std::sync::Mutex::new(None);

/// Adopts the trash lock held through `fd` (inherited from the process that started this one).
pub fn adopt_lock(fd: OwnedFd) {
    *HANDED_OVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(fd);
}

/// The handed-over lock if it is `lock` (the same file), made this process's own in
/// `/proc/locks` (a holder's pid is the process that took the lock: turned shared and back,
/// which nothing but this open file holds meanwhile). `None` if none is, or it was lost.
fn handed_over(lock: &OwnedFd) -> Option<OwnedFd> {
    let mut g = HANDED_OVER.lock().unwrap_or_else(|e| e.into_inner());
    let same = g.as_ref().is_some_and(
        |h| matches!((dirfd::fstat(h), dirfd::fstat(lock)), (Ok(a), Ok(b)) if a.ident == b.ident),
    );
    if !same {
        return None;
    }
    let fd = g.take()?;
    use rustix::fs::{flock, FlockOperation as Op};
    (flock(&fd, Op::NonBlockingLockShared).is_ok()
        && flock(&fd, Op::NonBlockingLockExclusive).is_ok())
    .then_some(fd)
}

impl TrashLock {
    /// Takes the trash's lock if no other reaper holds it. A `lock` that is not a plain file
    /// of the trash's owner is refused (never opened).
    pub fn try_take(trash: &Trash) -> Result<Option<TrashLock>, LockError> {
        let fd = safefile::open_lock(&trash.dir, LOCK, trash.uid).map_err(LockError::Damaged)?;
        if let Some(held) = handed_over(&fd) {
            return Ok(Some(TrashLock(held)));
        }
        match locks::try_exclusive(&fd) {
            Ok(true) => Ok(Some(TrashLock(fd))),
            Ok(false) => Ok(None),
            Err(e) => Err(LockError::Os(e)),
        }
    }
}

/// The pid of the reaper working on `trash`, if one is.
pub fn holder(trash: &Trash) -> Option<u32> {
    let f = dirfd::lstat_at(&trash.dir, LOCK).ok()?;
    locks::holder(locks::Kind::Flock, f.ident)
}
