//! Starting a detached reaper for one trash (like `git gc --auto`): its own process group,
//! hangups ignored, stdin/stdout/stderr on /dev/null (it logs into the trash's `reaper.log`
//! one line at a time), `/` as its directory (so it holds nothing of the file system while it
//! waits), at a lower CPU and I/O priority. The reaper itself decides, by the trash's lock,
//! whether it runs.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use crate::trash::meta::EntryPacing;
use crate::trash::Trash;

/// Starts `reclaim reap --trash <trash> --detached ARGS...` in the background; returns its pid.
/// With `lock` (the trash's lock, held), the reaper starts holding it (`--lock-fd`): the lock
/// is never free between this call and the reaper's start, so a `status` meanwhile sees a
/// reaper starting, and no other reaper takes the trash.
pub fn detached(trash: &Trash, args: &[OsString], lock: Option<&OwnedFd>) -> std::io::Result<u32> {
    // A copy without close-on-exec for the child (this process is not starting others now);
    // closed here when this function returns.
    let inherited = lock.map(rustix::io::dup).transpose()?;
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0("reclaim")
        .arg("reap")
        .arg("--trash")
        .arg(&trash.path)
        .arg("--detached");
    if let Some(fd) = &inherited {
        cmd.arg(format!("--lock-fd={}", fd.as_raw_fd()));
    }
    cmd.args(args)
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

/// The fd `raw` this process inherited (`--lock-fd`): taken over if it is open and not one of
/// stdin, stdout, stderr; marked close-on-exec from now on.
pub fn inherited(raw: i32) -> Option<OwnedFd> {
    if raw <= 2 {
        return None;
    }
    // SAFETY: fcntl(F_GETFD) only asks whether `raw` is an open descriptor.
    if unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
        return None;
    }
    // SAFETY: `raw` is open (checked above), was handed to this process for this purpose by
    // its parent, and nothing else in this process owns it.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    let _ = rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC);
    Some(fd)
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

/// The flags that ask for `pacing`, for a reaper's command line (a record made from flags
/// gives them back: the flags parsed again are the same pacing).
pub fn pace_args(pacing: &EntryPacing) -> Vec<OsString> {
    let mut v: Vec<OsString> = Vec::new();
    if pacing.fast {
        v.push("--fast".into());
    }
    if let Some(d) = pacing.max_latency {
        v.push(format!("--max-latency={}", micros(d)).into());
    }
    if let Some(r) = pacing.rate {
        v.push(format!("--rate={r}").into());
    }
    if let Some(n) = pacing.iops {
        v.push(format!("--iops={n}").into());
    }
    v
}

/// A duration in microseconds as `--max-latency` reads it back to the nanosecond: `20000us`,
/// `1234.500us`.
fn micros(d: std::time::Duration) -> String {
    let (us, ns) = (d.as_micros(), d.subsec_nanos() % 1000);
    if ns == 0 {
        format!("{us}us")
    } else {
        format!("{us}.{ns:03}us")
    }
}

/// Whether detached reapers may be started: not when `RECLAIM_NO_SPAWN=1` (tests inspect the
/// trash and run `reclaim reap` themselves).
pub fn enabled() -> bool {
    std::env::var_os(crate::sys::asuser::NO_SPAWN_ENV).is_none_or(|v| v != "1")
}
