//! `reclaim reap --watch` (the systemd service): a supervisor that never works inside a trash
//! itself. Every second it looks for trashes (root: every user's); for each one that may have
//! work (it changed, or a grace window or a back-off ended) and no reaper holds, it starts
//! `reclaim reap --trash T --once --json` as the trash's owner, at most one child per trash,
//! and logs what the child reports when it ends. A slow, huge or hostile trash holds up only
//! its own child; the loop itself never waits for one.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use super::{ReapSummary, Trash};
use crate::asuser::{self, ChildError, Identity};
use crate::cli::ReapArgs;
use crate::interrupt;
use crate::quote::quote;
use crate::report::plural;
use crate::trash;
use crate::trash::meta::now_unix;

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

/// `reclaim reap --watch`; returns the exit code (0 when stopped by a signal: a service stop).
pub fn command(a: &ReapArgs) -> u8 {
    let mut child_args: Vec<OsString> = crate::pace::EntryPacing::from(&a.pace).to_args();
    if let Some(t) = a.threads {
        child_args.push(format!("--threads={t}").into());
    }
    let me = trash::uid();
    let mut known: HashMap<PathBuf, Known> = HashMap::new();
    let (tx, rx) = mpsc::channel::<(PathBuf, Result<ReapSummary, ChildError>)>();
    let mut running = 0usize;
    // For the hostile soak (bench): one line per pass, with how long the pass took.
    let trace = std::env::var_os(TRACE_ENV).map(PathBuf::from);
    eprintln!("reclaim reap: watching the trashes (uid {me})");
    loop {
        let pass = std::time::Instant::now();
        while let Ok((path, result)) = rx.try_recv() {
            running -= 1;
            let k = known.entry(path.clone()).or_default();
            k.running = false;
            match result {
                Ok(s) => {
                    k.next_due = super::min_opt(s.next_grace_unix, s.next_retry_unix);
                    if s.entries_freed > 0 {
                        eprintln!(
                            "reclaim reap: {}: freed {} ({}, {})",
                            quote(&path),
                            plural(s.entries_freed, "entry", "entries"),
                            plural(s.files, "file", "files"),
                            crate::format::bytes(s.bytes_freed)
                        );
                    }
                    let mut now_logged = HashSet::new();
                    for e in &s.errors {
                        let line = format!("cannot free {e}");
                        if !k.logged.contains(&line) {
                            eprintln!("reclaim reap: {line}");
                        }
                        now_logged.insert(line);
                    }
                    if let Some(e) = &s.error {
                        eprintln!("reclaim reap: {}: {e}", quote(&path));
                    }
                    k.logged = now_logged;
                }
                Err(e) => {
                    let e = e.to_string();
                    if k.logged.insert(e.clone()) {
                        eprintln!("reclaim reap: {}: {e}", quote(&path));
                    }
                    k.next_due = Some(now_unix() + 60.0);
                }
            }
        }
        if interrupt::stopping() {
            break;
        }
        let found = trash::discover(me);
        for u in &found.unreachable {
            // Once per mount until it answers again.
            let k = known.entry(PathBuf::from(&u.path)).or_default();
            if k.logged.insert(u.reason.clone()) {
                eprintln!("reclaim reap: warning: {} {}", quote(&u.path), u.reason);
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
            drop(t);
            std::thread::spawn(move || {
                let r = reap_child(&path, uid, &args);
                let _ = tx.send((path, r));
            });
        }
        if let Some(t) = &trace {
            let line = format!(
                "{{\"t\":{:.3},\"pass_s\":{:.6},\"running\":{running}}}\n",
                now_unix(),
                pass.elapsed().as_secs_f64()
            );
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(t)
                .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
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
    eprintln!("reclaim reap: stopped");
    0
}

/// Runs one `reap --once` pass over `path` as its owner `uid` in a child process.
fn reap_child(
    path: &std::path::Path,
    uid: u32,
    args: &[OsString],
) -> Result<ReapSummary, ChildError> {
    let mut argv: Vec<OsString> = vec![
        "reap".into(),
        "--trash".into(),
        path.as_os_str().to_owned(),
        "--once".into(),
        "--json".into(),
        "--log-stderr".into(),
    ];
    argv.extend(args.iter().cloned());
    let who = if asuser::needed(uid) {
        Some(Identity::of(uid))
    } else {
        None
    };
    let mut lines = |l: &str| eprintln!("reclaim reap: {l}");
    asuser::run_json::<ReapSummary>(who.as_ref(), &argv, &mut lines).map(|(s, _)| s)
}
