//! `reclaim reap --watch` (the systemd service): a supervisor that never works inside a trash
//! itself. Every second it looks for trashes (root: every user's); for each one that may have
//! work (it changed, or a grace window or a back-off ended) and no reaper holds, it starts
//! `reclaim reap --trash T --once --json --log=WHERE` as the trash's owner, at most one child
//! per trash, and logs what the child reports when it ends. Each child logs its own freed
//! entries and failures (to the journal or syslog itself, so the journal knows which user's
//! process said it); the lines it prints go through this process's log. A slow, huge or
//! hostile trash holds up only its own child; the loop itself never waits for one.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use super::{ReapSummary, Trash};
use crate::sys::asuser::{self, ChildError, Identity};
use crate::sys::format::now_unix;
use crate::sys::format::plural;
use crate::sys::interrupt;
use crate::sys::logging::{Priority, Record, Sink, Target};
use crate::sys::quote::quote;
use crate::trash;

/// Set to a file to have `reap --watch` append one JSON line per pass (`t`, `pass_s`:
/// how long the pass took, `running`: children at work), for the hostile soak.
pub const TRACE_ENV: &str = "RECLAIM_WATCH_TRACE";

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

/// The (inode, mtime, ctime) of a trash directory: entries added or removed change it.
fn signature(t: &Trash) -> Option<(u64, i64, i64, i64, i64)> {
    let st = rustix::fs::fstat(&t.dir).ok()?;
    Some((
        st.st_ino,
        st.st_mtime,
        st.st_mtime_nsec as i64,
        st.st_ctime,
        st.st_ctime_nsec as i64,
    ))
}

/// `reclaim reap --watch`: supervises until a stop signal. `log` is where the reapers log,
/// `log_prefix` starts each stderr line with its priority, `child_args` are the flags every
/// child pass gets (pacing, threads).
pub fn run(log: Target, log_prefix: bool, child_args: &[OsString]) {
    let dest = log.resolve(false, true);
    let mut child_args = child_args.to_vec();
    child_args.extend(super::child_log_args(dest));
    let lines = super::relay_sink(dest, log_prefix);
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
    // For the hostile soak (bench): one line per pass, with how long the pass took.
    let trace = std::env::var_os(TRACE_ENV).map(PathBuf::from);
    say(Priority::Info, format!("watching the trashes (uid {me})"));
    loop {
        let pass = std::time::Instant::now();
        while let Ok((path, result)) = rx.try_recv() {
            running -= 1;
            let k = known.entry(path.clone()).or_default();
            k.running = false;
            child_done(k, &path, result, &say_of);
        }
        if interrupt::stopping() {
            break;
        }
        let found = trash::discover(me);
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
        for t in found.trashes {
            let k = known.entry(t.path.clone()).or_default();
            if k.running {
                continue;
            }
            let sig = signature(&t);
            let due = k.next_due.is_some_and(|d| d <= now_unix());
            if sig.is_some() && sig == k.seen && !due {
                continue;
            }
            // Another reaper (a detached one) is at work there: it frees what is due.
            if super::holder(&t).is_some() {
                continue;
            }
            k.seen = sig;
            k.next_due = None;
            k.running = true;
            running += 1;
            let tx = tx.clone();
            let args = child_args.clone();
            let (path, uid) = (t.path.clone(), t.uid);
            let lines = lines.clone();
            drop(t);
            std::thread::spawn(move || {
                let r = reap_child(&path, uid, &args, &lines);
                let _ = tx.send((path, r));
            });
        }
        if let Some(t) = &trace {
            trace_pass(t, pass.elapsed(), running);
        }
        if !interrupt::sleep(Duration::from_secs(1)) {
            break;
        }
    }
    // Stopping: the children got the signal too (same group, or their parent-death signal);
    // wait for them to stop at a consistent point.
    while running > 0 {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(_) => running -= 1,
            Err(_) => break,
        }
    }
    say(Priority::Info, "stopped".into());
}

/// What the supervisor makes of a child's end for trash `path`: when `k` is due next, and the
/// lines about it (what it freed; what stopped it, once until that changes).
fn child_done(
    k: &mut Known,
    path: &std::path::Path,
    result: Result<ReapSummary, ChildError>,
    say_of: &dyn Fn(&std::path::Path, Priority, String),
) {
    match result {
        Ok(s) => {
            k.next_due = super::min_opt(s.next_grace_unix, s.next_retry_unix);
            if s.entries_freed > 0 {
                say_of(
                    path,
                    Priority::Info,
                    format!(
                        "{}: freed {} ({}, {})",
                        quote(path),
                        plural(s.entries_freed, "entry", "entries"),
                        plural(s.files, "file", "files"),
                        crate::sys::format::bytes(s.bytes_freed)
                    ),
                );
            }
            // Each failure in the trash was logged by the child (as the trash's owner); what
            // stopped the child's run as a whole is logged here, once until it changes.
            let mut now_logged = HashSet::new();
            if let Some(e) = &s.error {
                let line = format!("{}: {e}", quote(path));
                if !k.logged.contains(&line) {
                    say_of(path, Priority::Err, line.clone());
                }
                now_logged.insert(line);
            }
            k.logged = now_logged;
        }
        Err(e) => {
            let e = e.to_string();
            if k.logged.insert(e.clone()) {
                say_of(path, Priority::Err, format!("{}: {e}", quote(path)));
            }
            k.next_due = Some(now_unix() + 60.0);
        }
    }
}

/// One line of the hostile soak's trace: when, how long the pass took, children at work.
fn trace_pass(t: &std::path::Path, took: Duration, running: usize) {
    let line = format!(
        "{{\"t\":{:.3},\"pass_s\":{:.6},\"running\":{running}}}\n",
        now_unix(),
        took.as_secs_f64()
    );
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(t)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
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
