//! What `/proc` says of a process: its effective uid, whether it is stopped, its start time,
//! whether it runs this program. Read only; a process that is gone (or hidden) is `None`.

/// The effective uid of process `pid` and whether it is stopped (`T`, `t`), from `/proc`.
pub fn euid_and_stopped(pid: u32) -> Option<(u32, bool)> {
    let status =
        crate::sys::safeopen::kernel::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    let uid = field("Uid:")?.split_whitespace().nth(1)?.parse().ok()?;
    let state = field("State:")?;
    Some((uid, state.starts_with('T') || state.starts_with('t')))
}

/// Whether process `pid` runs the same executable as this one.
pub fn runs_this_program(pid: u32) -> bool {
    let theirs = crate::sys::safeopen::kernel::read_link(format!("/proc/{pid}/exe"));
    matches!((theirs, crate::sys::safeopen::kernel::read_link("/proc/self/exe")), (Ok(a), Ok(b)) if a == b)
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, clock ticks after boot).
pub fn start_time(pid: u32) -> Option<u64> {
    let text = crate::sys::safeopen::kernel::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The calling thread's voluntary context switches so far (`getrusage(RUSAGE_THREAD)`): one
/// more each time it waited for something (a reply from a server, a lock, I/O); `None` where
/// the kernel does not say.
pub fn waits_of_this_thread() -> Option<u64> {
    // SAFETY: `getrusage` writes only into the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    (rc == 0).then_some(u.ru_nvcsw as u64)
}
