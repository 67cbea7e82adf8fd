//! Asking on the terminal as GNU `rm` does: the file type in gnulib's words, and an answer
//! read as `yesno` reads it in the C locale (a line starting with `y` or `Y` is yes; anything
//! else, or end of input, is no).

use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::FileType;

use crate::sys::dirfd::Facts;

/// gnulib's `file_type`: what the prompt calls the file.
pub fn file_type_name(f: &Facts) -> &'static str {
    match f.file_type {
        FileType::RegularFile if f.size == 0 => "regular empty file",
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character special file",
        FileType::BlockDevice => "block special file",
        FileType::Unknown => "weird file",
    }
}

/// Reads one answer line from stdin, a byte at a time, so nothing after the line is consumed
/// (a script's next command reads the rest of its input, as after GNU `rm`).
pub fn yes_or_no() -> bool {
    // stdio's end-of-file is sticky: after one, every later question is answered no without
    // reading (a terminal's ^D ends all the answers, as with GNU rm).
    static EOF: AtomicBool = AtomicBool::new(false);
    if EOF.load(Ordering::Relaxed) {
        return false;
    }
    let mut line = Vec::new();
    let stdin = std::io::stdin();
    let mut byte = [0u8; 1];
    if crate::sys::interrupt::stopping() {
        return false;
    }
    // Waiting for an answer nothing is half done: a stop signal ends rm here, as GNU's does.
    let _default = DefaultSignals::install();
    loop {
        match rustix::io::read(&stdin, &mut byte) {
            Ok(0) => {
                EOF.store(true, Ordering::Relaxed);
                break;
            }
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    matches!(line.first(), Some(b'y' | b'Y'))
}

/// While it lives, SIGINT, SIGTERM and SIGHUP have their default action (the process ends);
/// the handlers that were there come back when it is dropped.
struct DefaultSignals {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl DefaultSignals {
    fn install() -> Self {
        let mut old = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: sigaction with valid pointers to zeroed (SIG_DFL) and output structs.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &dfl, &mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        DefaultSignals { old }
    }
}

impl Drop for DefaultSignals {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores the disposition saved by `install`.
            unsafe {
                libc::sigaction(*sig, prev, std::ptr::null_mut());
            }
        }
    }
}
