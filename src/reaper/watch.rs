//! `reclaim reap --watch` (the systemd service): a supervisor that never works inside a trash
//! itself. Every second it looks for trashes (root: every user's, as bounded by discovery);
//! each one that may have work (it changed, or a grace window or a back-off ended) and no
//! reaper holds is queued, fairly across users (`queue::Fair`), and at most `MAX_PASSES`
//! passes run at once, each `reclaim reap --trash T --once --json --log=WHERE` as the
//! trash's owner in a thread of its own; what a child reports when it ends is logged. Each
//! child logs its own freed entries and failures (to the journal or syslog itself, so the
//! journal knows which user's process said it); the lines it prints go through this process's
//! log. A slow, huge or hostile trash holds up only its own slot; the loop itself never waits
//! for one. Each file system holding entries is watched for space (`sys::space::Watch`, about
//! once a second): short of it, a thread of its own frees the entries in their grace window
//! there, every user's, oldest first (`relief`). It speaks systemd's notification protocol and
//! writes the metrics file (`service`). Out of threads or processes, a pass waits for its next
//! turn (never a panic); on SIGTERM the children are asked to stop and the supervisor is gone
//! within seconds.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::child::{pass_as_owner, Ask, ChildArgs};
use super::queue::{Due, Fair};
use super::service::{Service, STATUS_EVERY};
use super::space::FsSpace;
use super::ReapSummary;
use crate::sys::asuser::{self, ChildError};
use crate::sys::format::{self, now_unix, plural};
use crate::sys::interrupt;
use crate::sys::logging::{Priority, Record, Sink, Target};
use crate::sys::quote::quote;
use crate::sys::space::{Floor, Watch};
use crate::trash;

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

/// A trash directory's (inode, mtime, ctime): entries added or removed change it.
type Signature = (u64, i64, i64, i64, i64);

/// What a pass's thread sends back when its child ended.
type Ended = (PathBuf, Result<ReapSummary, ChildError>);

/// What the supervisor's threads send back.
enum Msg {
    /// A pass ended.
    Ended(Box<Ended>),
    /// A relief of the file system (by device) ended: each child it ran.
    Relieved(u64, super::relief::Relieved),
    /// The trashes' status, per file system.
    Status(Vec<FsSpace>),
}

/// After a relief that freed nothing (everything held by other reapers, or nothing in a grace
/// window), the file system is not relieved again for this long.
const RELIEF_BACKOFF: Duration = Duration::from_secs(5);

/// A file system's relief: running, or when one may start again; the shortage said last.
#[derive(Default)]
struct Relief {
    running: bool,
    not_before: Option<Instant>,
    said: Option<String>,
}

/// What the supervisor knows of one trash.
#[derive(Default)]
struct Known {
    /// The directory's signature when its last child started.
    seen: Option<Signature>,
    /// When something in it is due next (a grace window or a back-off ends).
    next_due: Option<f64>,
    running: bool,
    /// Held nothing when last looked at (at `seen`).
    empty: bool,
    /// Problems already logged (each is logged once until it changes).
    logged: HashSet<String>,
}

/// The supervisor's state from one look to the next.
struct Supervisor {
    me: u32,
    lines: Sink,
    child_args: ChildArgs,
    known: HashMap<PathBuf, Known>,
    queue: Fair<Signature>,
    running: usize,
    /// What discovery keeps from one look to the next (names squatting others' trashes).
    memo: trash::Memo,
    /// Users whose trashes were not all looked at, as last said (said again when it changes).
    skipped_said: HashMap<u32, u64>,
    /// A pass that could not start (no thread): said once until one starts again.
    no_thread_said: bool,
    tx: mpsc::Sender<Msg>,
    /// The trashes of the last look that may hold entries, and their file systems' mount
    /// points (for the metrics).
    holding: Vec<trash::Found>,
    mounts: HashMap<PathBuf, String>,
    /// Each file system's space, watched (by device), and its relief.
    watches: HashMap<u64, Watch>,
    relief: HashMap<u64, Relief>,
    /// systemd and the metrics file; a status being taken, and when the next is due.
    service: Service,
    taking_status: bool,
    next_status: Instant,
}

/// What the service is asked for besides the passes: the floor of free space, the metrics
/// file.
#[derive(Clone, Debug, Default)]
pub struct Asked {
    pub floor: Floor,
    pub metrics: Option<PathBuf>,
}

/// `reclaim reap --watch`: supervises until a stop signal. `log` is where the reapers log,
/// `log_prefix` starts each stderr line with its priority, `child_args` are the flags every
/// child pass gets (pacing, floor, threads).
pub fn run(log: Target, log_prefix: bool, child_args: Vec<OsString>, asked: &Asked) {
    let dest = log.resolve(false, true);
    let child_args = ChildArgs::new(child_args, dest);
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut sup = Supervisor {
        me: trash::uid(),
        lines: super::relay_sink(dest, log_prefix),
        child_args,
        known: HashMap::new(),
        queue: Fair::default(),
        running: 0,
        memo: trash::Memo::default(),
        skipped_said: HashMap::new(),
        no_thread_said: false,
        tx,
        holding: Vec::new(),
        mounts: HashMap::new(),
        watches: HashMap::new(),
        relief: HashMap::new(),
        service: Service::new(asked.metrics.clone(), asked.floor),
        taking_status: false,
        next_status: Instant::now(),
    };
    // For the hostile soak (bench): one line per look, with how long it took.
    let trace = std::env::var_os(TRACE_ENV).map(PathBuf::from);
    let mut msgs: Vec<Msg> = Vec::new();
    let mut next_look = Instant::now();
    let mut ready = false;
    sup.say(
        Priority::Info,
        format!("watching the trashes (uid {})", sup.me),
    );
    loop {
        msgs.extend(rx.try_iter());
        for m in msgs.drain(..) {
            sup.received(m);
        }
        if interrupt::stopping() {
            break;
        }
        let pass = Instant::now();
        let looked = pass >= next_look;
        if looked {
            next_look = pass + LOOK_EVERY;
            sup.look();
            sup.watch_space();
            if !ready {
                sup.service.ready();
                ready = true;
            }
        }
        sup.start_passes();
        sup.take_status();
        sup.service.beat();
        if let Some(t) = trace.as_ref().filter(|_| looked) {
            trace_pass(t, pass.elapsed(), sup.running, sup.queue.len());
        }
        let until = sup
            .service
            .next_beat()
            .map_or(next_look, |b| b.min(next_look));
        if let Some(m) = wait_turn(&rx, until) {
            msgs.push(m);
        }
    }
    sup.service.stopping();
    // Stopping: the children are asked to stop too (they stop at a consistent point within a
    // moment); what is not back within STOP_WAIT is left to end with its parent-death signal.
    asuser::terminate_children();
    let deadline = Instant::now() + STOP_WAIT;
    while sup.running > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Msg::Ended(_)) => sup.running -= 1,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    sup.say(Priority::Info, "stopped".into());
}

/// Waits until `next_look`, or a thread sends word (a pass ended: its slot is free again;
/// returned), or a stop signal.
fn wait_turn(rx: &mpsc::Receiver<Msg>, next_look: Instant) -> Option<Msg> {
    while !interrupt::stopping() {
        let left = next_look.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match rx.recv_timeout(left.min(Duration::from_millis(50))) {
            Ok(m) => return Some(m),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(left.min(Duration::from_millis(50)))
            }
        }
    }
    None
}

/// A line about one trash (which the journal keeps as RECLAIM_TRASH).
fn say_of(lines: &Sink, trash: &Path, priority: Priority, line: String) {
    let rec = Record::new(priority, line).path("RECLAIM_TRASH", trash);
    lines.write(&rec, Some("reclaim reap"));
}

impl Supervisor {
    fn say(&self, priority: Priority, line: String) {
        self.lines
            .write(&Record::new(priority, line), Some("reclaim reap"));
    }

    /// Looks for the trashes: says what could not be looked at, and queues each one that may
    /// have work and no reaper holds.
    fn look(&mut self) {
        let found = trash::discover_with(self.me, Some(&mut self.memo));
        for u in &found.unreachable {
            // Once per mount until it answers again.
            let k = self.known.entry(PathBuf::from(&u.path)).or_default();
            if k.logged.insert(u.reason.clone()) {
                self.say(
                    Priority::Warning,
                    format!("warning: {} {}", quote(&u.path), u.reason),
                );
            }
        }
        for s in &found.skipped {
            // Said again only when it doubled or halved since (not at each decoy made).
            let said = self.skipped_said.get(&s.uid).copied();
            if said.is_none_or(|n| s.trashes >= 2 * n || 2 * s.trashes <= n) {
                self.skipped_said.insert(s.uid, s.trashes);
                self.say(
                    Priority::Warning,
                    format!(
                        "uid {}: {} more trashes not looked at (at most {} per user and \
                         file system)",
                        s.uid,
                        format::group(s.trashes),
                        trash::discover::MAX_PER_USER
                    ),
                );
            }
        }
        self.skipped_said
            .retain(|u, _| found.skipped.iter().any(|s| s.uid == *u));
        self.holding.clear();
        for t in found.trashes {
            self.mounts
                .entry(t.path.clone())
                .or_insert_with(|| t.mount.to_string_lossy().into_owned());
            let k = self.known.entry(t.path.clone()).or_default();
            if !(k.empty && Some(t.signature) == k.seen) {
                self.holding.push(t.clone());
            }
            if k.running || self.queue.contains(&t.path) {
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
            k.empty = t.is_idle_and_empty();
            if k.empty {
                k.seen = Some(t.signature);
                continue;
            }
            self.queue.push(Due {
                uid: t.uid,
                path: t.path,
                note: t.signature,
            });
        }
    }

    /// Takes in what a thread sent: a pass's end, a relief's, the trashes' status.
    fn received(&mut self, m: Msg) {
        match m {
            Msg::Ended(ended) => {
                let (path, result) = *ended;
                self.running -= 1;
                if let (Ok(s), Some(mount)) = (&result, self.mounts.get(&path)) {
                    self.service.done(mount, s);
                }
                let k = self.known.entry(path.clone()).or_default();
                k.running = false;
                child_done(k, &path, result, &|p, pr, l| say_of(&self.lines, p, pr, l));
            }
            Msg::Relieved(dev, results) => {
                let mut early = 0u64;
                let mut mount = None;
                for (path, r) in results {
                    match r {
                        Ok(s) => {
                            early += s.freed_early.len() as u64;
                            if let Some(m) = self.mounts.get(&path) {
                                self.service.done(m, &s);
                                mount = Some(m.clone());
                            }
                        }
                        Err(e) => say_of(
                            &self.lines,
                            &path,
                            Priority::Err,
                            format!("{}: {e}", quote(&path)),
                        ),
                    }
                }
                let r = self.relief.entry(dev).or_default();
                r.running = false;
                if early == 0 {
                    r.not_before = Some(Instant::now() + RELIEF_BACKOFF);
                } else if let Some(m) = mount {
                    self.say(
                        Priority::Warning,
                        format!(
                            "{}: freed {} before {} grace window ended, for want of space",
                            quote(&m),
                            plural(early, "entry", "entries"),
                            if early == 1 { "its" } else { "their" }
                        ),
                    );
                }
            }
            Msg::Status(space) => {
                self.taking_status = false;
                if let Some(line) = self.service.report(&space) {
                    self.say(Priority::Warning, line);
                }
            }
        }
    }

    /// Watches the space of each file system whose trashes may hold entries (through one of
    /// them, opened for the look): one short of it (under the floor, or falling toward it) gets
    /// a relief thread, one at a time, which frees what waits in a grace window there, every
    /// user's, oldest first (`relief`).
    fn watch_space(&mut self) {
        let mut by_dev: HashMap<u64, Vec<trash::Found>> = HashMap::new();
        for t in &self.holding {
            by_dev.entry(t.ident.dev).or_default().push(t.clone());
        }
        let floor = self.service.floor;
        for (dev, trashes) in by_dev {
            let r = self.relief.entry(dev).or_default();
            if r.running || r.not_before.is_some_and(|t| Instant::now() < t) {
                continue;
            }
            let Some(open) = trashes.iter().find_map(|f| f.open().ok()) else {
                continue;
            };
            let w = self.watches.entry(dev).or_insert_with(|| Watch::new(floor));
            let Some(p) = w.pressure(&open.dir, None, false) else {
                r.said = None;
                continue;
            };
            drop(open);
            if r.said.is_none() {
                self.lines.write(
                    &Record::new(
                        Priority::Warning,
                        format!(
                            "short of space: {}; what waits in a grace window there is freed, \
                             oldest first",
                            p.text()
                        ),
                    ),
                    Some("reclaim reap"),
                );
            }
            r.said = Some(p.text());
            let (tx, args, lines) = (self.tx.clone(), self.child_args.clone(), self.lines.clone());
            let started = std::thread::Builder::new()
                .name("reclaim-relief".into())
                .spawn(move || {
                    let mut relay = |l: &str| lines.relay(l, Some("reclaim reap"));
                    let found = super::relief::candidates(&trashes, &mut relay);
                    let mut watch = Watch::new(floor);
                    let done = super::relief::relieve(found, &mut watch, &args, &lines);
                    let _ = tx.send(Msg::Relieved(dev, done));
                });
            r.running = started.is_ok();
        }
    }

    /// Takes the trashes' status in a thread of its own every `STATUS_EVERY`, when systemd or
    /// a metrics file reads it.
    fn take_status(&mut self) {
        if !self.service.wants_status() || self.taking_status || Instant::now() < self.next_status {
            return;
        }
        self.next_status = Instant::now() + STATUS_EVERY;
        let (tx, floor) = (self.tx.clone(), self.service.floor);
        let started = std::thread::Builder::new()
            .name("reclaim-status".into())
            .spawn(move || {
                let _ = tx.send(Msg::Status(super::service::take_status(floor)));
            });
        self.taking_status = started.is_ok();
    }

    /// Starts queued passes, at most `MAX_PASSES` at once, users in turn; out of threads, the
    /// pass waits for its next turn (said once).
    fn start_passes(&mut self) {
        while self.running < MAX_PASSES {
            let Some(due) = self.queue.take_next() else {
                break;
            };
            let tx = self.tx.clone();
            let args = self.child_args.clone();
            let (path, uid) = (due.path.clone(), due.uid);
            let lines = self.lines.clone();
            let started = std::thread::Builder::new()
                .name("reclaim-pass".into())
                .spawn(move || {
                    let r = reap_child(&path, uid, &args, &lines);
                    let _ = tx.send(Msg::Ended(Box::new((path, r))));
                });
            match started {
                Ok(_) => {
                    self.no_thread_said = false;
                    let k = self.known.entry(due.path.clone()).or_default();
                    k.seen = Some(due.note);
                    k.next_due = None;
                    k.running = true;
                    self.running += 1;
                }
                Err(e) => {
                    // Out of threads (EAGAIN) for now: this pass waits for the next turn.
                    if !self.no_thread_said {
                        self.say(
                            Priority::Warning,
                            format!("cannot start a pass now ({e}); trying again"),
                        );
                        self.no_thread_said = true;
                    }
                    self.queue.put_back(due);
                    break;
                }
            }
        }
    }
}

/// What the supervisor makes of a child's end for trash `path`: when `k` is due next, and the
/// lines about it (what it freed; what stopped it, once until that changes).
fn child_done(
    k: &mut Known,
    path: &Path,
    result: Result<ReapSummary, ChildError>,
    say_of: &dyn Fn(&Path, Priority, String),
) {
    match result {
        Ok(s) => {
            k.next_due = super::summary::min_opt(s.next_grace_unix, s.next_retry_unix);
            if s.entries_freed > 0 {
                say_of(
                    path,
                    Priority::Info,
                    format!(
                        "{}: freed {} ({}, {})",
                        quote(path),
                        plural(s.entries_freed, "entry", "entries"),
                        plural(s.files, "file", "files"),
                        format::bytes(s.bytes_freed)
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

/// One line of the hostile soak's trace: when, how long the look took, children at work,
/// trashes queued.
fn trace_pass(t: &Path, took: Duration, running: usize, queued: usize) {
    let line = format!(
        "{{\"t\":{:.3},\"pass_s\":{:.6},\"running\":{running},\"queued\":{queued}}}\n",
        now_unix(),
        took.as_secs_f64()
    );
    if let Ok((fd, _)) = crate::sys::safeopen::file::open_output(t, 0o644, true) {
        let _ = std::io::Write::write_all(&mut std::fs::File::from(fd), line.as_bytes());
    }
}

/// Runs one `reap --once` pass over `path` as its owner `uid` in a child process; what it
/// prints on stderr goes to `lines`.
fn reap_child(
    path: &Path,
    uid: u32,
    args: &ChildArgs,
    lines: &Sink,
) -> Result<ReapSummary, ChildError> {
    let mut relay = |l: &str| lines.relay(l, Some("reclaim reap"));
    let ask = Ask::default();
    pass_as_owner(path, uid, (args, &ask), &mut relay)
}
