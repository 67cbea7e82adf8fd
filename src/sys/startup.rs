//! The process's start and end without std's runtime start. reclaim's `main` is the C entry
//! (`#![no_main]` in main.rs): std's start (`lang_start`) asks glibc for the main thread's stack
//! bounds, which glibc finds by reading and parsing `/proc/self/maps`, and gives the main
//! thread and every thread it spawns a signal stack (an mmap, an mprotect, a `sigaltstack`), all
//! for the message of a stack overflow (which then ends the process by SIGSEGV instead). That
//! was 3-4% of a small removal's CPU (bench/RESULTS.md, 2026-11-29, "Fixed costs: std's
//! runtime start left out").
//! The rest of what it did is done here: standard fds that were closed are opened on
//! `/dev/null` (else the first file reclaim opens would become its stdout or stderr), SIGPIPE
//! ignored as std leaves it (main.rs restores it where a command wants it), and stdout flushed
//! at the end.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::ExitCode;

use rustix::io::{fcntl_setfd, FdFlags};

use super::interrupt::ignore_sigpipe;
use super::safeopen;

/// What std's start did that reclaim needs, before anything else runs.
pub fn begin() {
    standard_fds_open();
    ignore_sigpipe();
}

/// Ends the process with `code`, stdout flushed.
pub fn exit(code: ExitCode) -> ! {
    let _ = std::io::stdout().flush();
    // `ExitCode` says its number only by comparison.
    let n = (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .map_or(1, i32::from);
    std::process::exit(n)
}

/// Opens each of fds 0, 1 and 2 that is closed on `/dev/null` (one `poll` tells which; where
/// it cannot, `fcntl` asks fd by fd, as std does); where that cannot be done the process ends at
/// once (status 127), as std's start aborts: its output could otherwise land in a file it opens.
fn standard_fds_open() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    let polled = loop {
        // SAFETY: `fds` is a valid array of three pollfds; a zero timeout never blocks, and
        // POLLNVAL only says an fd is closed.
        if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0 {
            break true;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break false;
        }
    };
    for p in fds {
        let closed = if polled {
            p.revents & libc::POLLNVAL != 0
        } else {
            // SAFETY: F_GETFD only reads the fd's flags; EBADF says it is closed.
            let flags = unsafe { libc::fcntl(p.fd, libc::F_GETFD) };
            flags == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
        };
        if closed && open_null_on(p.fd).is_err() {
            std::process::exit(127);
        }
    }
}

/// `/dev/null` on fd `n`, inherited by children as a standard fd is.
fn open_null_on(n: i32) -> Result<(), rustix::io::Errno> {
    let fd: OwnedFd = safeopen::null_device()?;
    if fd.as_raw_fd() == n {
        fcntl_setfd(&fd, FdFlags::empty())?;
        std::mem::forget(fd);
        return Ok(());
    }
    // SAFETY: `n` is closed (polled above); dup2 makes it a copy of `fd`, without CLOEXEC.
    let r = unsafe { libc::dup2(fd.as_raw_fd(), n) };
    if r == n {
        Ok(())
    } else {
        Err(rustix::io::Errno::BADF)
    }
}
