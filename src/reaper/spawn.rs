//! Starting a detached reaper for one trash (like `git gc --auto`): its own process group,
//! hangups ignored, stdin/stdout closed, stderr appended to the trash's `reaper.log`, at a lower
//! CPU and I/O priority. The reaper itself decides, by the trash's lock, whether it runs.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use rustix::fs::{openat, Mode, OFlags};

use crate::trash::{Trash, LOG};

/// Set to `1` to stop `reclaim rm --background` from starting a reaper (tests inspect the
/// trash and run `reclaim reap` themselves).
pub const NO_SPAWN_ENV: &str = "RECLAIM_NO_SPAWN";

/// Starts `reclaim reap --trash <trash> --detached ARGS...` in the background; returns its pid.
pub fn detached(trash: &Trash, args: &[OsString]) -> std::io::Result<u32> {
    let log = openat(
        &trash.dir,
        LOG,
        OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map(Stdio::from)
    .unwrap_or_else(|_| Stdio::null());
    let exe = Path::new("/proc/self/exe");
    let mut cmd = Command::new(exe);
    cmd.arg("reap")
        .arg("--trash")
        .arg(&trash.path)
        .arg("--detached")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Its own process group: a ^C at the terminal does not reach it, and it ignores the
        // hangup when the terminal closes (`lower_priority`). No pre_exec hook, so the
        // standard library can use posix_spawn, which costs the caller less time.
        .process_group(0);
    let child = cmd.spawn()?;
    Ok(child.id())
}

/// Detaches in spirit: ignores the terminal's hangup, and lowers this process's CPU (nice 10)
/// and I/O priority (best effort, lowest level; not the idle class, which a busy disk could
/// starve forever and leave the space never freed).
pub fn lower_priority() {
    // SAFETY: signal, setpriority and ioprio_set take integers and touch no memory of ours.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
        const IOPRIO_WHO_PROCESS: libc::c_long = 1;
        const IOPRIO_CLASS_BE: libc::c_long = 2;
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            (IOPRIO_CLASS_BE << 13) | 7,
        );
    }
}
