//! Write leases (`fcntl(F_SETLEASE, F_WRLCK)`): the kernel's proof that no other open file
//! description (no other opener, no mapping) holds a file, kept while we work on it: anyone
//! who opens it meanwhile starts breaking the lease, which `still_held` sees. Used before a
//! file is shrunk (`engine::shrink`), counted as freed (`freed`) or unlinked as packed
//! (`engine::pack`). Owns the calls; decides nothing.

use std::os::fd::{AsFd, AsRawFd};

use rustix::io::Errno;

/// Why no write lease was granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoLease {
    #[error("another process has it open")]
    OpenElsewhere,
    #[error("this file system cannot prove nobody else has it open (no leases)")]
    Unsupported,
    #[error("only its owner may prove nobody else has it open (no lease for others)")]
    NotOwner,
    #[error("no write lease ({})", crate::sys::error::errno_text(*.0))]
    Os(Errno),
}

/// Takes a write lease on `fd`: granted only when no other file description has the file
/// open. Lease-break notices (SIGIO) are ignored; `still_held` polls instead.
pub fn take_write(fd: impl AsFd) -> Result<(), NoLease> {
    // SAFETY: setting SIGIO to SIG_IGN has no memory-safety preconditions.
    unsafe { libc::signal(libc::SIGIO, libc::SIG_IGN) };
    // SAFETY: F_SETLEASE takes an int argument and touches no memory of ours.
    let rc = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    Err(match e {
        libc::EAGAIN | libc::EBUSY => NoLease::OpenElsewhere,
        libc::EINVAL | libc::ENOLCK | libc::EOPNOTSUPP => NoLease::Unsupported,
        libc::EACCES => NoLease::NotOwner,
        _ => NoLease::Os(Errno::from_raw_os_error(e)),
    })
}

/// False once another process has opened the file (the kernel is breaking our lease).
pub fn still_held(fd: impl AsFd) -> bool {
    // SAFETY: F_GETLEASE takes no argument and touches no memory of ours.
    let rc = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_GETLEASE) };
    rc == libc::F_WRLCK
}

/// Gives a lease taken on `fd` back (closing the fd does too).
pub fn release(fd: impl AsFd) {
    // SAFETY: F_SETLEASE takes an int argument and touches no memory of ours.
    unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
}
