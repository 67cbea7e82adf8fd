//! `reclaim reap`: frees what can be freed in the trashes now (`reaper::reap_all`), as a
//! detached reaper started by `rm --background`, or supervises them (`--watch`,
//! `reaper::watch`); then reports what was freed.

use crate::cmd::exit::Exit;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::engine::remove;
use crate::reaper::{self, spawn, watch, Locked, OpenError, ReapOptions, ReapSummary, Until};
use crate::sys::error::ErrorEntry;
use crate::sys::format::{self, plural};
use crate::sys::interrupt;
use crate::sys::logging::{Dest, Sink, Target};
use crate::sys::quote::quote;
use crate::trash::meta::EntryPacing;
use crate::trash::{self, Found, Trash};
use crate::ui::report::Progress;

/// What `reclaim reap` was asked.
#[derive(Clone, Debug, Default)]
pub struct ReapCommand {
    /// Keep running (the systemd service).
    pub watch: bool,
    /// One pass over what is due now.
    pub once: bool,
    /// Only this trash.
    pub trash: Option<PathBuf>,
    pub json: bool,
    /// Started by `rm --background`: lower priority, no output but the log.
    pub detached: bool,
    /// The trash's lock, held through this inherited fd (`--lock-fd`).
    pub lock_fd: Option<i32>,
    /// Try entries that failed before now.
    pub retry_failed: bool,
    /// Where to log (`None`: auto).
    pub log: Option<Target>,
    /// Each stderr log line starts with its priority.
    pub log_prefix: bool,
    /// The pacing flags, when one was given (otherwise each entry's own).
    pub pace: Option<EntryPacing>,
    /// `--min-free`: the free space to leave the others.
    pub min_free: crate::sys::space::Floor,
    /// `--early JSON` (a pass the supervisor asked for): the file system was found short of
    /// space so; entries freed before their grace ended are recorded with it.
    pub early: Option<crate::sys::space::Pressure>,
    /// `--metrics FILE` (with `--watch`): Prometheus text for node_exporter.
    pub metrics: Option<PathBuf>,
    pub threads: Option<u16>,
    /// `--now`: these entries, or all, freed now (also in their grace window).
    pub now: Option<Now>,
    /// `--wait`: also wait for the file systems' cleaners (btrfs) where subvolumes were
    /// deleted whole.
    pub wait: bool,
}

/// What `reclaim reap --now` frees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Now {
    All,
    Ids(Vec<String>),
}

/// `reclaim reap`.
pub fn run(o: &ReapCommand) -> ExitCode {
    crate::sys::limits::raise_nofile();
    // A detached reaper ignores the terminal's hangup; the rest stop at a consistent point on
    // SIGINT/SIGTERM/SIGHUP.
    super::catch_signals(!o.detached);
    if o.detached {
        spawn::detach();
        if let Some(fd) = o.lock_fd.and_then(spawn::inherited) {
            reaper::adopt_lock(fd);
        }
    }
    let log = o.log.unwrap_or(Target::Auto);
    if o.watch {
        // Stopped by a signal: a service stop, exit 0.
        let metrics = o.metrics.as_ref().map(|m| match std::env::current_dir() {
            Ok(here) if m.is_relative() => here.join(m),
            _ => m.clone(),
        });
        let asked = watch::Asked {
            floor: o.min_free,
            metrics,
        };
        watch::run(log, o.log_prefix, child_args(o), &asked);
        return ExitCode::SUCCESS;
    }
    if let Some(Now::Ids(ids)) = &o.now {
        if let Some(code) = unknown_ids(o, ids) {
            return code;
        }
    }
    let dest = log.resolve(o.detached, false);
    let progress = Progress::start(!o.json && !o.detached);
    let child_args = reaper::ChildArgs::new(child_args(o), dest);
    let started = std::time::Instant::now();
    // Messages of this process and what children (other users' passes) print: on stderr, or
    // with the log when it goes to the journal or syslog.
    let lines = reaper::relay_sink(dest, o.log_prefix);
    let mut relay = |line: &str| progress.suspend(|| lines.relay(line, None));
    let mut sum = reaper::reap_all(
        &|| open(o.trash.as_ref()),
        &reap_options(o, dest),
        &child_args,
        &|p| progress.show(&crate::ui::report::reaping(p)),
        &mut relay,
    );
    if o.wait && sum.subvolumes_deleted > 0 && !interrupt::stopping() {
        let waited = std::time::Instant::now();
        wait_cleaners(o, &|line| progress.show(line), &mut |line| {
            progress.suspend(|| eprintln!("reclaim reap: {line}"))
        });
        sum.cleaner_waited_s = Some(waited.elapsed().as_secs_f64());
    }
    progress.finish();
    report(o, &sum, started.elapsed())
}

/// `--wait` after btrfs subvolumes were deleted whole: waits for the cleaner of each btrfs
/// file system holding a trash reaped here (once per file system) to free what it has queued
/// now, telling `show` what it waits for; says on `warn` why it cannot (`CAP_SYS_ADMIN` and
/// kernel 6.8+ are needed).
fn wait_cleaners(o: &ReapCommand, show: &dyn Fn(&str), warn: &mut dyn FnMut(&str)) {
    let Ok(found) = open(o.trash.as_ref()) else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    for f in &found {
        if interrupt::stopping() {
            return;
        }
        let Ok(t) = f.open() else { continue };
        if !crate::sys::btrfs::is_btrfs(&t.dir) || !seen.insert(t.ident.dev) {
            continue;
        }
        show(&format!(
            "waiting for btrfs's cleaner on {} to free the deleted subvolumes",
            quote(&t.mount)
        ));
        if let Err(e) = crate::sys::btrfs::wait_cleaner(&t.dir, None) {
            warn(&format!(
                "not waiting for btrfs's cleaner on {} ({}): subvolumes deleted there may \
                 still be freed in the background (`reclaim status` shows them)",
                quote(&t.mount),
                crate::sys::error::errno_text(e)
            ));
        }
    }
}

/// `--now ID...`: refuses (exit 1, one line per ID, nothing freed) if an ID is in no trash this
/// user may see. Each trash is opened in turn (and checked to be the one found), never all at
/// once.
fn unknown_ids(o: &ReapCommand, ids: &[String]) -> Option<ExitCode> {
    let trashes = match open(o.trash.as_ref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("reclaim reap: {e}");
            return Some(Exit::Failed.into());
        }
    };
    let mut unknown: Vec<&String> = ids.iter().collect();
    for found in &trashes {
        if unknown.is_empty() {
            break;
        }
        if let Ok(t) = found.open() {
            unknown.retain(|id| !t.has_entry(id));
        }
    }
    for id in &unknown {
        eprintln!(
            "reclaim reap: no entry {} in any trash this user may see (`reclaim status` lists them)",
            quote(id)
        );
    }
    (!unknown.is_empty()).then(|| Exit::Failed.into())
}

/// The trashes to reap: the one named, or every one this user may see (at most
/// `discover::MAX_PER_USER` per user and file system; the rest counted, one line per user).
fn open(only: Option<&PathBuf>) -> Result<Vec<Found>, OpenError> {
    match only {
        Some(p) => Trash::open_path(p)
            .and_then(|t| Found::of(&t).map_err(trash::TrashError::from))
            .map(|t| vec![t])
            .map_err(|error| OpenError::Named {
                path: p.clone(),
                error,
            }),
        None => {
            let found = trash::discover(trash::uid());
            for u in &found.unreachable {
                eprintln!("reclaim reap: warning: {} {}", quote(&u.path), u.reason);
            }
            for k in &found.skipped {
                eprintln!(
                    "reclaim reap: uid {}: {} more trashes not looked at (at most {} per \
                     user and file system)",
                    k.uid,
                    format::group(k.trashes),
                    trash::discover::MAX_PER_USER
                );
            }
            Ok(found.trashes)
        }
    }
}

/// The flags every child pass gets (another user's pass, the service's passes): the pacing,
/// the floor of free space (so a user's configuration does not set it for root's passes) and
/// the workers asked for.
fn child_args(o: &ReapCommand) -> Vec<OsString> {
    let mut args = spawn::pace_args(&o.pace.clone().unwrap_or_default());
    args.push(format!("--min-free={}", o.min_free.arg()).into());
    if let Some(t) = o.threads {
        args.push(format!("--threads={t}").into());
    }
    args
}

fn reap_options(o: &ReapCommand, dest: Dest) -> ReapOptions {
    let mut engine = remove::Settings {
        // 0: chosen per file system when a tree is freed (`free_tree`).
        threads: 0,
        ..remove::Settings::default()
    };
    if let Some(t) = o.threads {
        engine.threads = t.into();
    }
    ReapOptions {
        // Only a detached reaper waits out grace windows (`reap` frees what it can now and
        // exits; `--watch` starts a pass when a window ends).
        until: if o.detached {
            Until::Empty
        } else {
            Until::Once
        },
        // `reap` waits for a reaper at work to finish, then frees what it left; a detached
        // reaper and the service's passes leave the trash to it.
        locked: if o.once || o.detached {
            Locked::Skip
        } else {
            Locked::Wait
        },
        // Freed early for want of space (the supervisor's `--early`): at full speed, never
        // more harshly than `rm`.
        pacing: match &o.early {
            Some(_) => Some(EntryPacing {
                fast: true,
                ..EntryPacing::default()
            }),
            None => o.pace.clone(),
        },
        engine,
        only: match &o.now {
            Some(Now::Ids(ids)) => Some(ids.clone()),
            _ => None,
        },
        log: Sink::new(dest).prefixed(o.log_prefix),
        // `reap` (not `--once`, whose passes the service repeats) frees what it can now; a
        // detached reaper tries a failed entry once when it starts.
        retry_failed: !o.once || o.retry_failed,
        now: o.now.is_some(),
        floor: o.min_free,
        // A pass of the service (or of root's `reap` for another user) leaves the order of
        // early frees to its parent, which sees every user's entries.
        relieve: !o.once,
        early: o.early.clone(),
    }
}

/// Damaged entries named in `reap`'s summary on the terminal (the rest counted).
const MAX_DAMAGED_SHOWN: usize = 3;

/// The JSON object or the lines about what was freed and what failed; the exit code.
fn report(o: &ReapCommand, sum: &ReapSummary, took: std::time::Duration) -> ExitCode {
    let failed = !sum.errors.is_empty() || sum.error.is_some();
    if o.json {
        println!(
            "{}",
            serde_json::to_string(sum).expect("summary serializes")
        );
    } else {
        if let Some(e) = &sum.error {
            eprintln!("reclaim reap: {e}");
        }
        // Damaged entries (anyone can make thousands): the first few, then a count.
        let damaged = |e: &&ErrorEntry| e.error.starts_with("damaged: ");
        for e in sum.errors.iter().filter(|e| !damaged(e)) {
            eprintln!("reclaim reap: cannot free {e}");
        }
        let bad: Vec<&ErrorEntry> = sum.errors.iter().filter(damaged).collect();
        for e in bad.iter().take(MAX_DAMAGED_SHOWN) {
            eprintln!("reclaim reap: cannot free {e}");
        }
        if bad.len() > MAX_DAMAGED_SHOWN {
            eprintln!(
                "reclaim reap: ... and {} more damaged entries, left alone (`reclaim status \
                 --json` lists them)",
                format::group((bad.len() - MAX_DAMAGED_SHOWN) as u64)
            );
        }
        if !o.detached {
            eprintln!("{}", crate::ui::reap::human(sum, took));
        }
    }
    if let Some(sig) = interrupt::requested() {
        if !o.json && !o.detached {
            eprintln!(
                "reclaim: interrupted by {}: {} left in the trash; `reclaim reap` continues",
                interrupt::name(sig),
                plural(sum.remaining, "entry", "entries")
            );
        }
        return super::stopped_by(sig);
    }
    Exit::failed_if(failed).into()
}
