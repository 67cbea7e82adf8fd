//! The reaper's wait loops: passes over every trash again after each grace window, holding
//! nothing open meanwhile (`reap_all`), and the wait for another reaper holding a trash
//! (`after_reaper`; another user's only so long). Never frees anything itself.

use std::path::PathBuf;
use std::time::Duration;

use super::pass::{pass_over, GONE_CHECK};
use super::records::say_gone;
use super::{
    pressure, state, ChildArgs, Locked, OnProgress, Progress, ReapOptions, ReapSummary, Until,
};
use crate::sys::format::now_unix;
use crate::sys::interrupt;
use crate::sys::logging::Sink;
use crate::sys::quote::quote;
use crate::trash::{self, Found, Gone};

/// Why the trashes to reap cannot be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The trash named with `--trash` cannot be used.
    #[error("cannot use trash {}: {error}", quote(.path))]
    Named {
        path: PathBuf,
        error: trash::TrashError,
    },
}

/// Frees every trash this process may act on as `opts` says: its own in this process, other
/// users' (when root) each in a child running as that user. With `Locked::Wait`, a trash
/// another reaper holds is taken up after all the others: this waits for that reaper to
/// finish (telling `on_progress` what it does), then makes its own pass. With `Until::Empty`,
/// grace windows are waited out holding nothing open (trashes are opened again after each
/// wait).
pub fn reap_all(
    open: &dyn Fn() -> Result<Vec<Found>, OpenError>,
    opts: &ReapOptions,
    child_args: &ChildArgs,
    on_progress: OnProgress<'_>,
    on_line: &mut dyn FnMut(&str),
) -> ReapSummary {
    let mut sum = ReapSummary::default();
    // Failed entries are tried (at most) once per run, not again after each grace wait.
    let mut later = opts.clone();
    later.retry_failed = false;
    let mut first = true;
    // The trashes as first found: a later one at the same path must be the same directory.
    let mut seen: Vec<Found> = Vec::new();
    // Their file systems' free space while waiting: short of it, a pass frees grace entries.
    let mut watch = crate::sys::space::Watch::new(opts.floor);
    loop {
        let mut trashes = match open() {
            Ok(t) => t,
            // Gone since it was last looked at: said, and nothing left to do.
            Err(_) if !first && seen.iter().all(|t| t.still_there().is_err()) => {
                for t in &seen {
                    if let Err(why) = t.still_there() {
                        say_gone(t, &why, &opts.log);
                    }
                }
                return sum;
            }
            Err(e) => {
                sum.error = Some(e.to_string());
                return sum;
            }
        };
        if first {
            seen = trashes.clone();
        } else {
            trashes.retain(|t| {
                let replaced = seen.iter().any(|s| s.path == t.path && s.ident != t.ident);
                if replaced {
                    say_gone(t, &Gone::Replaced, &opts.log);
                    seen.retain(|s| s.path != t.path);
                }
                !replaced
            });
            if trashes.is_empty() {
                return sum;
            }
        }
        let pass_opts = if first { opts } else { &later };
        let pass = pass_over_all(&trashes, pass_opts, child_args, on_progress, on_line);
        let next = pass.next_grace_unix;
        let (remaining, waiting, last_grace) = (pass.remaining, pass.waiting, pass.last_grace_unix);
        sum.merge(pass);
        // What is left after the last pass (not a sum over passes).
        sum.remaining = remaining;
        sum.waiting = waiting;
        sum.last_grace_unix = last_grace;
        first = false;
        let Some(next) = next.filter(|_| opts.until == Until::Empty && !sum.interrupted) else {
            break;
        };
        // Say that this process waits (status shows it), unless another live one already
        // waits for these trashes at least as early: then it is theirs, and this one leaves.
        if waited_for_elsewhere(&trashes, next) {
            break;
        }
        let watching = (&mut watch, sum.last_grace_unix.unwrap_or(next));
        match wait_for(next, &mut trashes, &mut seen, watching, &opts.log) {
            Waited::Due | Waited::Pressed => {}
            Waited::AllGone => return sum,
            Waited::Emptied => break,
            Waited::Stopped => {
                sum.interrupted = true;
                break;
            }
        }
        sum.next_grace_unix = None;
    }
    sum
}

/// Whether another live process already waits for all of `trashes` (this process's own) to be
/// due by `next`; if not, this process says in each that it waits (status shows it). Each is
/// opened for the moment it takes to read or write its `reaper.json`.
fn waited_for_elsewhere(trashes: &[Found], next: f64) -> bool {
    let own: Vec<&Found> = trashes
        .iter()
        .filter(|t| !crate::sys::asuser::needed(t.uid))
        .collect();
    let covered = !own.is_empty()
        && own.len() == trashes.len()
        && own.iter().all(|f| {
            f.open()
                .ok()
                .and_then(|t| state::read(&t.dir, t.uid))
                .is_some_and(|st| {
                    st.pid != std::process::id()
                        && st.state == "waiting"
                        && st.next_due_unix.is_some_and(|d| d <= next)
                        && st.alive()
                })
        });
    if !covered {
        for f in &own {
            if let Ok(t) = f.open() {
                state::write_waiting(&t.dir, next);
            }
        }
    }
    covered
}

/// How a wait for a grace window ended.
enum Waited {
    /// The time came.
    Due,
    /// Every trash waited for is gone.
    AllGone,
    /// Nothing is left in the trashes (restored, or freed by `reap --now`): nothing to wait for.
    Emptied,
    /// A stop signal.
    Stopped,
    /// A file system of its trashes ran short of space: entries in their grace window are to
    /// be freed early (`pressure`).
    Pressed,
}

/// How often a waiting reaper looks whether its trashes still hold entries.
const EMPTIED_CHECK: Duration = Duration::from_secs(1);

/// Waits until `until`, holding nothing of the file system (a `umount` can go ahead
/// meanwhile) but for a look each `EMPTIED_CHECK` at whether `trashes` still hold entries
/// (each opened in turn, for that look only): a restore or `reap --now` that empties them ends
/// the wait (and the reaper) at once; so does a file system of this user's trashes running
/// short of space (`watch`, for entries held until `last`: the last grace window's end). Every
/// `GONE_CHECK` it looks whether `trashes` are still there: one that is gone (unmounted,
/// removed, replaced) is said (to `log`) and left, also in `seen`.
fn wait_for(
    until: f64,
    trashes: &mut Vec<Found>,
    seen: &mut Vec<Found>,
    (watch, last): (&mut crate::sys::space::Watch, f64),
    log: &Sink,
) -> Waited {
    let mut gone_checked = std::time::Instant::now();
    while now_unix() < until {
        let slice = (until - now_unix()).clamp(0.05, EMPTIED_CHECK.as_secs_f64());
        if !interrupt::sleep(Duration::from_secs_f64(slice)) {
            return Waited::Stopped;
        }
        if gone_checked.elapsed() >= GONE_CHECK {
            gone_checked = std::time::Instant::now();
            trashes.retain(|t| match t.still_there() {
                Ok(()) => true,
                Err(why) => {
                    say_gone(t, &why, log);
                    seen.retain(|s| s.path != t.path);
                    false
                }
            });
            if trashes.is_empty() {
                return Waited::AllGone;
            }
        }
        if trashes
            .iter()
            .all(|f| f.open().is_ok_and(|t| t.entries().is_empty()))
        {
            for f in trashes
                .iter()
                .filter(|f| !crate::sys::asuser::needed(f.uid))
            {
                if let Ok(t) = f.open() {
                    state::remove_mine(&t.dir, t.uid);
                }
            }
            return Waited::Emptied;
        }
        if pressure::pressed_while_waiting(trashes, watch, last) {
            return Waited::Pressed;
        }
    }
    Waited::Due
}

/// How often a reaper waiting for another one looks whether it finished.
const WAIT_POLL: Duration = Duration::from_millis(200);

/// How long root's `reap` waits, in all, for reapers of other users to let go of their trashes:
/// a user's own reaper can be slowed down at will (`--iops 1`), so that user could otherwise
/// hold root's `reap` (and the cron jobs behind it) for as long as they like.
const FOREIGN_LOCK_WAIT: Duration = Duration::from_secs(30);

/// One pass over each of `trashes`; with `Locked::Wait`, those another reaper held are taken
/// up after all the others (reapers of other users waited for `FOREIGN_LOCK_WAIT` at most, all
/// together).
fn pass_over_all(
    trashes: &[Found],
    opts: &ReapOptions,
    child_args: &ChildArgs,
    on_progress: OnProgress<'_>,
    on_line: &mut dyn FnMut(&str),
) -> ReapSummary {
    let mut pass = ReapSummary::default();
    let mut held: Vec<(&Found, ReapSummary)> = Vec::new();
    for t in trashes {
        if interrupt::stopping() {
            pass.interrupted = true;
            break;
        }
        let s = pass_over(t, opts, child_args, on_progress, on_line);
        if opts.locked == Locked::Wait && !s.skipped_locked.is_empty() && !s.interrupted {
            held.push((t, s));
        } else {
            pass.merge(s);
        }
    }
    let foreign_deadline = std::time::Instant::now() + FOREIGN_LOCK_WAIT;
    for (t, skipped) in held {
        let s = after_reaper(
            t,
            skipped,
            opts,
            child_args,
            on_progress,
            on_line,
            foreign_deadline,
        );
        pass.merge(s);
    }
    pass
}

/// `Locked::Wait` for the trash `t` that `skipped` found held: waits until no process holds
/// its lock (read from `/proc/locks`, so root opens nothing of another user's trash), then
/// makes a pass over it, and again if another reaper took the lock first. Stopped by a
/// signal while waiting: `skipped`, marked interrupted. In another user's trash only a
/// `reclaim` process is waited for: a lock that user holds with anything else would hold up
/// root's `reap` for as long as they like; it is skipped, and said. A holder of another uid
/// than this process's is waited for until `foreign_deadline` only, and not at all while it is
/// stopped (SIGSTOP): the trash is then skipped, and said (that reaper frees what is due).
#[allow(clippy::too_many_arguments)]
fn after_reaper(
    t: &Found,
    mut skipped: ReapSummary,
    opts: &ReapOptions,
    child_args: &ChildArgs,
    on_progress: OnProgress<'_>,
    on_line: &mut dyn FnMut(&str),
    foreign_deadline: std::time::Instant,
) -> ReapSummary {
    let me = rustix::process::geteuid().as_raw();
    loop {
        while let Some(pid) = t.holder() {
            if crate::sys::asuser::needed(t.uid) && !crate::sys::process::runs_this_program(pid) {
                on_line(&format!(
                    "reclaim reap: not waiting for {}: its lock is held by process {pid}, which is not reclaim",
                    quote(&t.path)
                ));
                return skipped;
            }
            if let Some((uid, stopped)) =
                crate::sys::process::euid_and_stopped(pid).filter(|(uid, _)| *uid != me)
            {
                let why = if stopped {
                    Some("which is stopped".to_string())
                } else {
                    (std::time::Instant::now() >= foreign_deadline)
                        .then(|| format!("for more than {} s", FOREIGN_LOCK_WAIT.as_secs()))
                };
                if let Some(why) = why {
                    on_line(&format!(
                        "reclaim reap: not waiting for {}: its lock is held by process {pid} of \
                         uid {uid}, {why}; that reaper frees what is due",
                        quote(&t.path)
                    ));
                    return skipped;
                }
            }
            // Another user's trash is read only as that user: root knows the pid alone (one's
            // own is opened for the look only).
            let st = (!crate::sys::asuser::needed(t.uid))
                .then(|| t.open().ok())
                .flatten()
                .and_then(|open| state::read(&open.dir, open.uid))
                .filter(|st| st.pid == pid);
            let freeing = st.as_ref().and_then(|st| {
                let e = st.entry.as_deref()?;
                Some((e, st.freed_bytes, st.rate_bps))
            });
            on_progress(&Progress::WaitingFor {
                trash: &t.path,
                pid,
                freeing,
            });
            if !interrupt::sleep(WAIT_POLL) {
                skipped.interrupted = true;
                return skipped;
            }
        }
        let s = pass_over(t, opts, child_args, on_progress, on_line);
        if s.skipped_locked.is_empty() || s.interrupted {
            return s;
        }
        // Taken again before this pass could (or its holder is not in /proc/locks): look
        // again a moment later.
        skipped = s;
        if !interrupt::sleep(WAIT_POLL) {
            skipped.interrupted = true;
            return skipped;
        }
    }
}
