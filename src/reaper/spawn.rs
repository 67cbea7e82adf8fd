//! Starting a detached reaper for one trash (like `git gc --auto`): its own process group,
//! hangups ignored, stdin/stdout/stderr on /dev/null (it logs into the trash's `reaper.log`
//! one line at a time), `/` as its directory (so it holds nothing of the file system while it
//! waits), at a lower CPU and I/O priority. The reaper itself decides, by the trash's lock,
//! whether it runs.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use crate::trash::Trash;

/// Set to `1` to stop `reclaim rm --background` from starting a reaper (tests inspect the
/// trash and run `reclaim reap` themselves).
pub const NO_SPAWN_ENV: &str = "RECLAIM_NO_SPAWN";

/// Starts `reclaim reap --trash <trash> --detached ARGS...` in the background; returns its pid.
pub fn detached(trash: &Trash, args: &[OsString]) -> std::io::Result<u32> {
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0("reclaim")
        .arg("reap")
        .arg("--trash")
        .arg(&trash.path)
        .arg("--detached")
        .args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a ^C at the terminal does not reach it, and it ignores the
        // hangup when the terminal closes (`detach`). No pre_exec hook, so the standard library
        // can use posix_spawn, which costs the caller less time.
        .process_group(0);
    let child = cmd.spawn()?;
    Ok(child.id())
}

/// Detaches in spirit: ignores the terminal's hangup, lowers this process's CPU (nice 10) and
/// I/O priority (best effort, lowest level; not the idle class, which a busy disk could starve
/// forever and leave the space never freed), and moves to `/`.
pub fn detach() {
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
    let _ = std::env::set_current_dir("/");
}
