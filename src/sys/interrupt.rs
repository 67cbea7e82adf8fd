//! The signals that end a run from a terminal or a service manager (SIGINT, SIGTERM, SIGHUP):
//! the handler only notes them; long loops (the engine's workers, the shrinker's steps, the
//! reaper's entries) look here and stop at a consistent point, and the command says what is
//! left. Never acts in the handler itself.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// A signal whose handler could not be installed (the run goes on; that signal ends it).
#[derive(Debug, thiserror::Error)]
#[error("cannot catch signal {signal}: {error}")]
pub struct Uncaught {
    pub signal: i32,
    pub error: std::io::Error,
}

/// Notes SIGINT, SIGTERM and (unless `hangup` is false: a detached reaper ignores it) SIGHUP
/// instead of dying. Call once, early. Returns the signals it could not catch.
pub fn install(hangup: bool) -> Vec<Uncaught> {
    let mut signals = vec![libc::SIGINT, libc::SIGTERM];
    if hangup {
        signals.push(libc::SIGHUP);
    }
    let mut uncaught = Vec::new();
    for sig in signals {
        // SAFETY: the action only stores to atomics, which is async-signal-safe.
        let r = unsafe {
            signal_hook::low_level::register(sig, move || {
                SIGNAL.store(sig, Ordering::SeqCst);
                COUNT.fetch_add(1, Ordering::SeqCst);
            })
        };
        if let Err(error) = r {
            uncaught.push(Uncaught { signal: sig, error });
        }
    }
    uncaught
}

/// Restores SIGPIPE's default action (Rust ignores it, so a write to a closed pipe would be
/// an error, and `println!` panics on it): a closed stdout then ends the process silently.
pub fn default_sigpipe() {
    // SAFETY: sets the disposition of one signal to its default; called before any thread
    // starts, and no handler of ours is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The signal that asked this run to stop, if one did.
pub fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Whether a stop was asked for.
pub fn stopping() -> bool {
    requested().is_some()
}

/// How many stop signals arrived (a second one ends what the first let finish).
pub fn count() -> usize {
    COUNT.load(Ordering::SeqCst)
}

/// The signal's name for messages.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Sleeps `d`, in slices, returning early (false) when a stop is asked for.
pub fn sleep(d: std::time::Duration) -> bool {
    const SLICE: std::time::Duration = std::time::Duration::from_millis(50);
    let until = std::time::Instant::now() + d;
    loop {
        if stopping() {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(SLICE));
    }
}
