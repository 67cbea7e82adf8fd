//! `reclaim reap --watch` (the systemd service): a supervisor that never works inside a trash
//! itself. Every second it looks for trashes (root: every user's, as bounded by discovery);
//! each one that may have work (it changed, or a grace window or a back-off ended) and no
//! reaper holds is queued, fairly across users (`queue::Fair`), and at most `MAX_PASSES`
//! passes run at once, each `reclaim reap --trash T --once --json --log=WHERE` as the
//! trash's owner in a thread of its own; what a child reports when it ends is logged. Each
//! child logs its own freed entries and failures (to the journal or syslog itself, so the
//! journal knows which user's process said it); the lines it prints go through this process's
//! log. A slow, huge or hostile trash holds up only its own slot; the loop itself never waits
//! for one. Out of threads or processes, a pass waits for its next turn (never a panic); on
//! SIGTERM the children are asked to stop and the supervisor is gone within seconds.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use super::queue::{Due, Fair};
use super::ReapSummary;
use crate::asuser::{self, ChildError, Identity};
use crate::cli::ReapArgs;
use crate::interrupt;
use crate::logging::{Priority, Record, Sink, Target};
use crate::quote::quote;
use crate::report::plural;
use crate::trash;
use crate::trash::meta::now_unix;

/// Set to a file to have `reap --watch` append one JSON line per look (`t`, `pass_s`: how long
/// the look took, `running`: children at work, `queued`: trashes waiting for a pass), for the
/// hostile soak.
pub const TRACE_ENV: &str = "RECLAIM_WATCH_TRACE";

/// At most this many passes (children) at once, whatever the number of trashes and users.
pub const MAX_PASSES: usize = 4;

/// How often the trashes are looked for.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How long a stopping supervisor waits for its children to stop.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// What the supervisor knows of one trash.
#[derive(Default)]
struct Known {
    /// The directory's (inode, mtime, ctime) when its last child started.
    seen: Option<(u64, i64, i64, i64, i64)>,
    /// When something in it is due next (a grace window or a back-off ends).
    next_due: Option<f64>,
    running: bool,
    /// Problems already logged (each is logged once until it changes).
    logged: HashSet<String>,
}

/// `reclaim reap --watch`; returns the exit code (0 when stopped by a signal: a service stop).
pub fn command(a: &ReapArgs) -> u8 {
    let dest = a.log.unwrap_or(Target::Auto).resolve(false, true);
    let mut child_args: Vec<OsString> = crate::pace::EntryPacing::from(&a.pace).to_args();
    if let Some(t) = a.threads {
        child_args.push(format!("--threads={t}").into());
    }
    child_args.extend(super::child_log_args(dest));
    let lines = super::relay_sink(dest, a.log_prefix);
    let say = |priority: Priority, line: String| {
        lines.write(&Record::new(priority, line), Some("reclaim reap"));
    };
    // A line about one trash (which the journal keeps as RECLAIM_TRASH).
    let say_of = |trash: &std::path::Path, priority: Priority, line: String| {
        let rec = Record::new(priority, line).path("RECLAIM_TRASH", trash);
        lines.write(&rec, Some("reclaim reap"));
    };
    let me = trash::uid();
    let mut known: HashMap<PathBuf, Known> = HashMap::new();
    let (tx, rx) = mpsc::channel::<(PathBuf, Result<ReapSummary, ChildError>)>();
    let mut running = 0usize;
    let mut queue: Fair<(u64, i64, i64, i64, i64)> = Fair::default();
    // What discovery keeps from one look to the next (names squatting others' trashes).
    let mut memo = trash::Memo::default();
    // Users whose trashes were not all looked at, as last said (said again when it changes).
    let mut skipped_said: HashMap<u32, u64> = HashMap::new();
    // A pass that could not start (no thread): said once until one starts again.
    let mut no_thread_said = false;
    // For the hostile soak (bench): one line per look, with how long it took.
    let trace = std::env::var_os(TRACE_ENV).map(PathBuf::from);
    let mut ended: Vec<(PathBuf, Result<ReapSummary, ChildError>)> = Vec::new();
    let mut next_look = std::time::Instant::now();
    say(Priority::Info, format!("watching the trashes (uid {me})"));
    loop {
        ended.extend(rx.try_iter());
        for (path, result) in ended.drain(..) {
            running -= 1;
            let k = known.entry(path.clone()).or_default();
            k.running = false;
            match result {
                Ok(s) => {
                    k.next_due = super::min_opt(s.next_grace_unix, s.next_retry_unix);
                    if s.entries_freed > 0 {
                        say_of(
                            &path,
                            Priority::Info,
                            format!(
                                "{}: freed {} ({}, {})",
                                quote(&path),
                                plural(s.entries_freed, "entry", "entries"),
                                plural(s.files, "file", "files"),
                                crate::format::bytes(s.bytes_freed)
                            ),
                        );
                    }
                    // Each failure in the trash was logged by the child (as the trash's owner); what
                    // stopped the child's run as a whole is logged here, once until it changes.
                    let mut now_logged = HashSet::new();
                    if let Some(e) = &s.error {
                        let line = format!("{}: {e}", quote(&path));
                        if !k.logged.contains(&line) {
                            say_of(&path, Priority::Err, line.clone());
                        }
                        now_logged.insert(line);
                    }
                    k.logged = now_logged;
                }
                Err(e) => {
                    let e = e.to_string();
                    if k.logged.insert(e.clone()) {
                        say_of(&path, Priority::Err, format!("{}: {e}", quote(&path)));
                    }
                    k.next_due = Some(now_unix() + 60.0);
                }
            }
        }
        if interrupt::stopping() {
            break;
        }
        let pass = std::time::Instant::now();
        let looked = pass >= next_look;
        if looked {
            next_look = pass + LOOK_EVERY;
            let found = trash::discover_with(me, Some(&mut memo));
            for u in &found.unreachable {
                // Once per mount until it answers again.
                let k = known.entry(PathBuf::from(&u.path)).or_default();
                if k.logged.insert(u.reason.clone()) {
                    say(
                        Priority::Warning,
                        format!("warning: {} {}", quote(&u.path), u.reason),
                    );
                }
            }
            for s in &found.skipped {
                // Said again only when it doubled or halved since (not at each decoy made).
                let said = skipped_said.get(&s.uid).copied();
                if said.map_or(true, |n| s.trashes >= 2 * n || 2 * s.trashes <= n) {
                    skipped_said.insert(s.uid, s.trashes);
                    say(
                        Priority::Warning,
                        format!(
                            "uid {}: {} more trashes not looked at (at most {} per user and \
                             file system)",
                            s.uid,
                            crate::format::group(s.trashes),
                            trash::discover::MAX_PER_USER
                        ),
                    );
                }
            }
            skipped_said.retain(|u, _| found.skipped.iter().any(|s| s.uid == *u));
            for t in found.trashes {
                let k = known.entry(t.path.clone()).or_default();
                if k.running || queue.contains(&t.path) {
                    continue;
                }
                let due = k.next_due.is_some_and(|d| d <= now_unix());
                if Some(t.signature) == k.seen && !due {
                    continue;
                }
                // Another reaper (a detached one) is at work there: it frees what is due.
                if t.holder().is_some() {
                    continue;
                }
                // Nothing in it: nothing to do until it changes.
                if t.is_idle_and_empty() {
                    k.seen = Some(t.signature);
                    continue;
                }
                queue.push(Due {
                    uid: t.uid,
                    path: t.path,
                    note: t.signature,
                });
            }
        }
        // At most MAX_PASSES children at once, users in turn.
        while running < MAX_PASSES {
            let Some(due) = queue.take_next() else {
                break;
            };
            let tx = tx.clone();
            let args = child_args.clone();
            let (path, uid) = (due.path.clone(), due.uid);
            let lines = lines.clone();
            let started = std::thread::Builder::new()
                .name("reclaim-pass".into())
                .spawn(move || {
                    let r = reap_child(&path, uid, &args, &lines);
                    let _ = tx.send((path, r));
                });
            match started {
                Ok(_) => {
                    no_thread_said = false;
                    let k = known.entry(due.path.clone()).or_default();
                    k.seen = Some(due.note);
                    k.next_due = None;
                    k.running = true;
                    running += 1;
                }
                Err(e) => {
                    // Out of threads (EAGAIN) for now: this pass waits for the next turn.
                    if !no_thread_said {
                        say(
                            Priority::Warning,
                            format!("cannot start a pass now ({e}); trying again"),
                        );
                        no_thread_said = true;
                    }
                    queue.put_back(due);
                    break;
                }
            }
        }
        if let Some(t) = trace.as_ref().filter(|_| looked) {
            let line = format!(
                "{{\"t\":{:.3},\"pass_s\":{:.6},\"running\":{running},\"queued\":{}}}\n",
                now_unix(),
                pass.elapsed().as_secs_f64(),
                queue.len()
            );
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(t)
                .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        }
        // Until the next look, or a pass ends (its slot is free again), or a stop signal.
        while !interrupt::stopping() {
            let left = next_look.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok(m) => {
                    ended.push(m);
                    break;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(left.min(Duration::from_millis(50)))
                }
            }
        }
    }
    // Stopping: the children are asked to stop too (they stop at a consistent point within a
    // moment); what is not back within STOP_WAIT is left to end with its parent-death signal.
    asuser::terminate_children();
    let deadline = std::time::Instant::now() + STOP_WAIT;
    while running > 0 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(_) => running -= 1,
            Err(_) => break,
        }
    }
    say(Priority::Info, "stopped".into());
    0
}

/// Runs one `reap --once` pass over `path` as its owner `uid` in a child process; what it
/// prints on stderr goes to `lines`.
fn reap_child(
    path: &std::path::Path,
    uid: u32,
    args: &[OsString],
    lines: &Sink,
) -> Result<ReapSummary, ChildError> {
    let mut argv: Vec<OsString> = vec![
        "reap".into(),
        "--trash".into(),
        path.as_os_str().to_owned(),
        "--once".into(),
        "--json".into(),
    ];
    argv.extend(args.iter().cloned());
    let who = if asuser::needed(uid) {
        Some(Identity::of(uid))
    } else {
        None
    };
    let mut relay = |l: &str| lines.relay(l, Some("reclaim reap"));
    asuser::run_json::<ReapSummary>(who.as_ref(), &argv, &mut relay).map(|(s, _)| s)
}
