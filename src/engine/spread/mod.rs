//! Scale-out: one removal (or scan) shared by the ranks of an MPI job, on any number of
//! client machines. Every rank opens the trees itself and checks with rank 0 that it sees the
//! same directories (inode by inode); rank 0 starts the walk, and idle ranks ask a random other
//! rank for work, which hands over up to half of its queued directories (oldest, so the biggest
//! subtrees, first), but no more than the asking rank has workers now: work a rank received
//! is not handed on, so a rank its latency governor holds at one worker would otherwise sit
//! on dozens of directories while the others run out. Work comes back to the rank that handed it over when it is finished, so a
//! directory is removed by the rank that listed it, once all its children are gone, wherever
//! they were removed; when rank 0's roots are finished, everything is. No rank holds a list of
//! the tree, and there is no barrier per level. Rank 0 alone reports (progress, summary, JSON)
//! with the counts and failures of every rank.
//!
//! The protocol runs over a `Transport` (MPI's point-to-point messages in `mpi.rs`, built with
//! `--features mpi`; channels between threads in `local.rs`, for tests). It never blocks on a
//! send: a rank that waited for another to receive could wait for a rank waiting for it.

use std::sync::mpsc::Receiver;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::engine::pace::controller::Verdict;
use crate::engine::pace::tree::Joint;
use crate::engine::walk::{Event, Shared};

#[cfg(test)]
pub mod local;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod wire;

use wire::{Counts, Msg, TreeId};

/// Messages between the ranks of one job.
pub trait Transport: Send + Sync {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Sends without waiting for the receiver.
    fn send(&self, to: usize, bytes: Vec<u8>);
    /// A message that arrived, if any.
    fn try_recv(&self) -> Option<(usize, Vec<u8>)>;
    /// Waits until every message sent has left (before the job ends).
    fn flush(&self);
    /// The host this rank runs on (for messages).
    fn host(&self) -> String {
        rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned()
    }
}

static JOB: OnceLock<Box<dyn Transport>> = OnceLock::new();

/// The MPI job this process is a rank of (more than one rank), once `join` found one.
pub fn job() -> Option<&'static dyn Transport> {
    JOB.get().map(|t| &**t).filter(|t| t.size() > 1)
}

/// Registers the job's transport (once, before any command runs).
#[cfg(feature = "mpi")]
pub fn set_job(t: Box<dyn Transport>) {
    let _ = JOB.set(t);
}

/// Whether the environment says this process was started as a rank of a parallel job with
/// more than one rank (Open MPI, MPICH/Hydra, Slurm's PMI), and with how many.
pub fn launched_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok())
}

/// Why this process cannot join the MPI job it was started in (or `--mpi` asked for).
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// Started as one of this many ranks, but built without MPI.
    #[cfg(not(feature = "mpi"))]
    #[error("started as one of {0} ranks of an MPI job, but this reclaim was built without MPI; every rank would remove the same trees on its own: build it with `cargo build --release --features mpi`")]
    LaunchedWithoutMpi(usize),
    /// `--mpi`, but built without MPI.
    #[cfg(not(feature = "mpi"))]
    #[error("--mpi: this reclaim was built without MPI: build it with `cargo build --release --features mpi`")]
    AskedWithoutMpi,
    #[cfg(feature = "mpi")]
    #[error("MPI was already initialized")]
    AlreadyInitialized,
    /// The MPI library offers threads only at this level.
    #[cfg(feature = "mpi")]
    #[error("this MPI library offers threads only as {0:?}; reclaim needs MPI_THREAD_SERIALIZED")]
    Threading(::mpi::Threading),
}

/// Joins the MPI job this process was started in (or `asked`: `--mpi`); `None` when there is
/// none. The value returned keeps MPI initialized: drop it at the end, after the command.
pub fn start(asked: bool) -> Result<Option<Box<dyn std::any::Any>>, JoinError> {
    let ranks = launched_ranks();
    if !asked && ranks.is_none_or(|n| n <= 1) {
        return Ok(None);
    }
    #[cfg(feature = "mpi")]
    {
        mpi::join().map(|g| Some(Box::new(g) as Box<dyn std::any::Any>))
    }
    #[cfg(not(feature = "mpi"))]
    {
        Err(match ranks {
            Some(n) if n > 1 => JoinError::LaunchedWithoutMpi(n),
            _ => JoinError::AskedWithoutMpi,
        })
    }
}

/// The job's one latency governor (`pace::tree::Joint`) over its transport: rank 0 judges and
/// sends each verdict to every other rank; on the others, `drive` (and `agree`, before the
/// start) queue what arrives for their governor. MPI keeps the messages of one sender in
/// order, so every rank applies the same verdicts in the same order.
pub struct Verdicts {
    t: &'static dyn Transport,
    arrived: std::sync::Mutex<std::collections::VecDeque<Verdict>>,
    /// Rank 0: the entries the other ranks reported removed so far.
    others: std::sync::atomic::AtomicU64,
}

impl Verdicts {
    pub fn new(t: &'static dyn Transport) -> Self {
        Verdicts {
            t,
            arrived: Default::default(),
            others: Default::default(),
        }
    }
}

impl std::fmt::Debug for Verdicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Verdicts(rank {} of {})", self.t.rank(), self.t.size())
    }
}

impl Joint for Verdicts {
    fn judges(&self) -> bool {
        self.t.rank() == 0
    }
    fn ranks(&self) -> usize {
        self.t.size()
    }
    fn publish(&self, verdict: Verdict) {
        let bytes = Msg::Verdict(verdict).encode();
        for r in 1..self.t.size() {
            self.t.send(r, bytes.clone());
        }
    }
    fn next(&self) -> Option<Verdict> {
        self.arrived.lock().expect("verdicts lock").pop_front()
    }
    fn arrive(&self, verdict: Verdict) {
        self.arrived
            .lock()
            .expect("verdicts lock")
            .push_back(verdict);
    }
    fn others_removed(&self, removed: u64) {
        self.others
            .fetch_add(removed, std::sync::atomic::Ordering::Relaxed);
    }
    fn removed_by_others(&self) -> u64 {
        self.others.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Whether this process leads (reports): not a rank of a job, or rank 0.
pub fn leads() -> bool {
    job().is_none_or(|t| t.rank() == 0)
}

/// Why a run under MPI cannot start, or a protocol error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Abort(String),
    #[error(transparent)]
    Malformed(#[from] wire::Malformed),
}

/// Receives the next message, waiting for one.
fn recv(t: &dyn Transport) -> (usize, Vec<u8>) {
    let mut pause = Duration::from_micros(20);
    loop {
        if let Some(m) = t.try_recv() {
            return m;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// Before any work: every rank says which trees it sees (argument index and inode), rank 0
/// checks that all see the same and says go; any difference (a path that is another
/// directory on some host, a path missing there) stops every rank before anything is removed.
pub fn agree(
    t: &dyn Transport,
    trees: &Trees<'_>,
    verdicts: Option<&dyn Joint>,
) -> Result<(), Error> {
    // As text: what a rank cannot see travels to rank 0 in its words.
    let mine = trees.ids().map_err(|e| e.to_string());
    if t.rank() != 0 {
        t.send(0, Msg::Trees(mine).encode());
        return loop {
            let (from, bytes) = recv(t);
            match Msg::decode(&bytes)? {
                Msg::Go if from == 0 => break Ok(()),
                Msg::Mark(name) if from == 0 => t.send(0, Msg::Marked(trees.sees(&name)).encode()),
                Msg::Abort(why) if from == 0 => break Err(Error::Abort(why)),
                // A rank that had its go before this one (messages from different ranks are not
                // ordered) may already ask for work: none here yet, it asks again later. A
                // question left unanswered would keep it asking, never reporting, forever.
                Msg::Steal(_) => t.send(from, Msg::Work(Vec::new()).encode()),
                // Rank 0's governor may judge before every rank has its go.
                Msg::Verdict(v) if from == 0 => {
                    if let Some(vs) = verdicts {
                        vs.arrive(v);
                    }
                }
                // Nothing else is sent to a rank before its go.
                _ => continue,
            }
        };
    }
    let mut problems: Vec<(usize, String)> = Vec::new();
    let own = match mine {
        Ok(v) => Some(v),
        Err(why) => {
            problems.push((0, why));
            None
        }
    };
    let mut reported = 1;
    while reported < t.size() {
        let (from, bytes) = recv(t);
        if let Msg::Trees(theirs) = Msg::decode(&bytes)? {
            reported += 1;
            match (theirs, &own) {
                (Err(why), _) => problems.push((from, why)),
                (Ok(theirs), Some(own)) => {
                    if let Some(why) = differs(&theirs, own) {
                        problems.push((from, why));
                    }
                }
                _ => {}
            }
        }
    }
    // The same inodes may still be other directories (a copy local to each host, made the
    // same way): a file rank 0 makes at the top of each tree must be there for every rank.
    if problems.is_empty() && t.size() > 1 {
        if let Some(mark) = trees.mark() {
            for r in 1..t.size() {
                t.send(r, Msg::Mark(mark.clone()).encode());
            }
            let mut answered = 1;
            while answered < t.size() {
                let (from, bytes) = recv(t);
                if let Msg::Marked(seen) = Msg::decode(&bytes)? {
                    answered += 1;
                    if let Some(i) = seen.iter().position(|s| !s) {
                        problems.push((
                            from,
                            format!(
                                "does not see what rank 0 sees in {} (the same inode numbers, other directories: a copy local to its host?)",
                                trees.shown(i)
                            ),
                        ));
                    }
                }
            }
            trees.unmark(&mark);
        }
    }
    problems.sort();
    let verdict = match problems.first() {
        None => Msg::Go,
        Some((rank, why)) => Msg::Abort(format!(
            "rank {rank} {why}{}; nothing was removed",
            match problems.len() {
                1 => String::new(),
                n => format!(" (and {} more ranks)", n - 1),
            }
        )),
    };
    for r in 1..t.size() {
        t.send(r, verdict.encode());
    }
    t.flush();
    match verdict {
        Msg::Abort(why) => Err(Error::Abort(why)),
        _ => Ok(()),
    }
}

/// A tree this rank cannot see (`agree`).
#[derive(Debug, thiserror::Error)]
#[error("cannot see {}: {}", crate::sys::quote::quote(.path), crate::sys::error::errno_text(*.errno))]
pub struct Unseen {
    pub path: std::path::PathBuf,
    pub errno: rustix::io::Errno,
}

/// The trees of a job as one rank sees them, for `agree`.
pub struct Trees<'a> {
    /// Each tree: the directory holding it, its name there, how messages show it.
    pub roots: Vec<(
        &'a std::os::fd::OwnedFd,
        &'a std::ffi::CStr,
        &'a std::path::Path,
    )>,
    /// A dry run writes nothing: no mark (the inodes, birth times and file system types are
    /// still compared).
    pub dry_run: bool,
}

impl Trees<'_> {
    fn ids(&self) -> Result<Vec<TreeId>, Unseen> {
        self.roots
            .iter()
            .enumerate()
            .map(|(i, (base, name, shown))| {
                tree_id(i, *base, name).map_err(|errno| Unseen {
                    path: shown.to_path_buf(),
                    errno,
                })
            })
            .collect()
    }

    fn shown(&self, i: usize) -> String {
        self.roots
            .get(i)
            .map_or_else(String::new, |r| crate::sys::quote::quote(r.2).to_string())
    }

    fn mark_name(mark: &str) -> Option<std::ffi::CString> {
        std::ffi::CString::new(mark).ok()
    }

    /// Rank 0: makes the mark (an empty file of a random name) at the top of every tree;
    /// `None` if it could not (a dry run, a directory it may not write: then the inodes,
    /// birth times and types are all it has).
    fn mark(&self) -> Option<String> {
        use rustix::fs::OFlags;
        if self.dry_run || self.roots.is_empty() {
            return None;
        }
        let mark = format!(".reclaim-mpi-{}", crate::trash::safefile::random_hex(8));
        let name = Self::mark_name(&mark)?;
        let mut made = 0;
        for (base, dir, _) in &self.roots {
            let made_here = crate::sys::dirfd::open_dir_at(*base, dir)
                .ok()
                .and_then(|d| {
                    crate::sys::safeopen::create_at(&d, &name, OFlags::WRONLY, 0o600, false).ok()
                });
            if made_here.is_none() {
                break;
            }
            made += 1;
        }
        if made < self.roots.len() {
            self.unmark(&mark);
            return None;
        }
        Some(mark)
    }

    /// Whether this rank sees the mark at the top of each tree.
    fn sees(&self, mark: &str) -> Vec<bool> {
        let Some(name) = Self::mark_name(mark) else {
            return vec![false; self.roots.len()];
        };
        self.roots
            .iter()
            .map(|(base, dir, _)| {
                crate::sys::dirfd::open_dir_at(*base, dir)
                    .and_then(|d| crate::sys::dirfd::lstat_at(&d, &name))
                    .is_ok_and(|f| f.file_type == rustix::fs::FileType::RegularFile)
            })
            .collect()
    }

    /// Rank 0: removes the marks it made.
    fn unmark(&self, mark: &str) {
        let Some(name) = Self::mark_name(mark) else {
            return;
        };
        for (base, dir, _) in &self.roots {
            if let Ok(d) = crate::sys::dirfd::open_dir_at(*base, dir) {
                let _ = crate::sys::safeopen::unlink_at(&d, &name);
            }
        }
    }
}

/// Why another rank's trees are not rank 0's, if they are not.
fn differs(theirs: &[TreeId], own: &[TreeId]) -> Option<String> {
    const SHARED: &str = "are the paths on one shared file system everywhere?";
    if theirs.len() != own.len() {
        return Some(format!(
            "sees {} of rank 0's {} (a path missing there, or not a directory): {SHARED}",
            theirs.len(),
            crate::sys::format::plural(own.len() as u64, "directory", "directories"),
        ));
    }
    let (a, b) = theirs.iter().zip(own).find(|(a, b)| !a.same(b))?;
    Some(if a.ino != b.ino || a.index != b.index {
        format!(
            "sees other directories than rank 0 (inodes {} vs {}): {SHARED}",
            list(theirs),
            list(own)
        )
    } else if a.fs_type != b.fs_type {
        format!(
            "sees the directory with inode {} on another kind of file system than rank 0 (type {:#x} vs {:#x}): {SHARED}",
            a.ino, a.fs_type, b.fs_type
        )
    } else {
        format!(
            "sees a directory with rank 0's inode number {} but born at another time (a copy local to its host?): {SHARED}",
            a.ino
        )
    })
}

fn list(trees: &[TreeId]) -> String {
    trees
        .iter()
        .map(|t| t.ino.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// What this rank sees at the tree `name` in `base` (argument `index` among the trees).
pub fn tree_id(
    index: usize,
    base: &impl std::os::fd::AsFd,
    name: &std::ffi::CStr,
) -> Result<TreeId, rustix::io::Errno> {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    let st = statx(
        base,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::INO | StatxFlags::BTIME,
    )?;
    let born_ns = if st.stx_mask & StatxFlags::BTIME.bits() != 0 {
        (st.stx_btime.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(u64::from(st.stx_btime.tv_nsec))
            .max(1)
    } else {
        0
    };
    let dir = crate::sys::dirfd::open_dir_at(base, name)?;
    let fs_type = rustix::fs::fstatfs(&dir)?.f_type as u64;
    Ok(TreeId {
        index: index as u32,
        ino: st.stx_ino,
        born_ns,
        fs_type,
    })
}

/// A rank other than 0 stopped by a signal: a failure at its first tree (`path`), in its
/// report to rank 0 and its error count.
fn stopped_here(
    t: &dyn Transport,
    path: std::path::PathBuf,
    collect: &Collect<'_>,
    counters: &crate::engine::remove::Counters,
) {
    let f = crate::sys::error::Failure {
        path,
        reason: crate::sys::error::Reason::Job(stopped_line(t)),
    };
    collect.inner.failed(&f);
    collect.failures.lock().expect("failures lock").push(f);
    counters
        .errors
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The failure a rank other than 0 reports when a signal stopped it before the end: what it
/// handed back undone was kept (its ancestors stay), and this says why, so rank 0 exits 1.
pub fn stopped_line(t: &dyn Transport) -> String {
    format!(
        "rank {} on {} was stopped by a signal before it finished; run the same command again to finish",
        t.rank(),
        t.host()
    )
}

/// Most pieces of work handed over at once.
const HANDOFF_MAX: usize = 32;
/// How often a rank other than 0 reports its counts.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// What one rank did (rank 0's report lists every rank).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Rank {
    pub rank: usize,
    pub host: String,
    pub files: u64,
    pub dirs: u64,
    pub bytes: u64,
    pub errors: u64,
    /// The workers it removed with (its client's measured concurrency), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<u64>,
}

impl Rank {
    fn add(&mut self, c: &Counts) {
        self.files += c[0];
        self.dirs += c[1];
        self.bytes += c[2];
        self.errors += c[3];
    }
}

/// What the driver of a rank needs from its caller.
pub struct Job<'a> {
    pub transport: &'a dyn Transport,
    /// Roots rank 0 started with (0 on the other ranks).
    pub roots: usize,
    /// This rank's totals so far.
    pub counts: &'a (dyn Fn() -> Counts + Sync),
    /// Rank 0: another rank's counts since its last report.
    pub add: &'a (dyn Fn(Counts) + Sync),
    /// What this rank ignored (a message it could not read, work it refused): for the user.
    pub warn: &'a (dyn Fn(&dyn std::fmt::Display) + Sync),
    /// Where rank 0's verdicts go for this rank's governor (a governed removal).
    pub verdicts: Option<&'a dyn Joint>,
}

/// What rank 0 learns from the others at the end.
#[derive(Default)]
pub struct Reports {
    /// Each other rank's payload.
    pub payloads: Vec<(usize, Vec<u8>)>,
    /// Every rank's counts (rank 0's own filled in by `conclude`).
    pub ranks: Vec<Rank>,
    /// Counts this rank reported so far (the others).
    reported: Counts,
    /// The workers this rank removed with (its measured concurrency), set by the caller
    /// before `conclude`: rank 0 lists every rank's.
    pub workers: Option<u64>,
}

impl Reports {
    fn new(n: usize) -> Self {
        Reports {
            payloads: Vec::new(),
            ranks: (0..n)
                .map(|rank| Rank {
                    rank,
                    ..Rank::default()
                })
                .collect(),
            reported: [0; 4],
            workers: None,
        }
    }

    /// Rank 0: another rank's message about its counts or its end.
    fn absorb(&mut self, job: &Job<'_>, from: usize, msg: Msg) {
        match msg {
            Msg::Progress(c) => {
                (job.add)(c);
                self.ranks[from].add(&c);
            }
            Msg::Final {
                counts,
                workers,
                host,
                payload,
            } => {
                (job.add)(counts);
                self.ranks[from].add(&counts);
                self.ranks[from].workers = (workers > 0).then_some(workers);
                self.ranks[from].host = host;
                self.payloads.push((from, payload));
            }
            _ => {}
        }
    }
}

/// The walk's own events: work finished here for another rank goes back to it, finished roots
/// are counted (rank 0). Whether there were any.
fn forward(
    walk: &dyn Shared,
    t: &dyn Transport,
    events: &Receiver<Event>,
    roots_left: &mut usize,
) -> bool {
    let me = t.rank();
    let mut any = false;
    while let Ok(e) = events.try_recv() {
        any = true;
        match e {
            Event::Done {
                to,
                token,
                kept,
                summary,
            } if to == me => walk.returned(token, kept, summary),
            Event::Done {
                to,
                token,
                kept,
                summary,
            } => t.send(
                to,
                Msg::Done {
                    token,
                    kept,
                    summary,
                }
                .encode(),
            ),
            Event::RootDone(_) => *roots_left = roots_left.saturating_sub(1),
        }
    }
    any
}

/// A rank other than 0: its counts since its last report, to rank 0 (if any changed).
fn report_progress(job: &Job<'_>, reports: &mut Reports) {
    let c = (job.counts)();
    let d = delta(&c, &reports.reported);
    if d.iter().any(|v| *v > 0) {
        job.transport.send(0, Msg::Progress(d).encode());
        reports.reported = c;
    }
}

/// Runs the protocol on this rank's thread while the walk runs, until all work of the job is
/// done (rank 0: its roots are finished; the others: rank 0 says so). Then `conclude`.
pub fn drive(job: &Job<'_>, walk: &dyn Shared, events: &Receiver<Event>) -> Reports {
    let t = job.transport;
    let (me, n) = (t.rank(), t.size());
    let mut roots_left = if me == 0 { job.roots } else { 0 };
    let mut rng =
        Lcg::new(me as u64 * 0x9E37_79B9 + rustix::process::getpid().as_raw_nonzero().get() as u64);
    let mut asking = false;
    let mut refusals = 0usize;
    let mut next_ask = Instant::now();
    let mut reports = Reports::new(n);
    let mut last_report = Instant::now();
    let mut nap = Duration::from_micros(50);
    loop {
        let mut busy = forward(walk, t, events, &mut roots_left);
        while let Some((from, bytes)) = t.try_recv() {
            busy = true;
            let msg = match Msg::decode(&bytes) {
                Ok(m) => m,
                Err(e) => {
                    (job.warn)(&format_args!("rank {me}: {e} (from rank {from}); ignored"));
                    continue;
                }
            };
            match msg {
                Msg::Steal(want) => {
                    let work = walk.export(HANDOFF_MAX.min(want.max(1) as usize));
                    t.send(from, Msg::Work(work).encode());
                }
                Msg::Work(hs) => {
                    asking = false;
                    if hs.is_empty() {
                        refusals += 1;
                        // A full round of "nothing": wait a little longer each time.
                        if refusals >= n - 1 {
                            let backoff = Duration::from_micros(200)
                                * (1 << (refusals / (n - 1)).min(6)) as u32;
                            next_ask = Instant::now() + backoff;
                        }
                    } else {
                        refusals = 0;
                    }
                    for h in hs {
                        if let Err(e) = walk.import(from, h) {
                            (job.warn)(&format_args!(
                                "rank {me}: work from rank {from} ignored: {e}"
                            ));
                        }
                    }
                }
                Msg::Done {
                    token,
                    kept,
                    summary,
                } => walk.returned(token, kept, summary),
                // Every root finished: nothing is left anywhere (work handed over comes back
                // before its root can finish).
                Msg::Stop => return reports,
                m @ (Msg::Progress(_) | Msg::Final { .. }) => {
                    if let (Some(vs), Msg::Progress(c)) = (job.verdicts, &m) {
                        vs.others_removed(c[0] + c[1]);
                    }
                    reports.absorb(job, from, m)
                }
                Msg::Verdict(v) => {
                    if let Some(vs) = job.verdicts.filter(|_| from == 0) {
                        vs.arrive(v);
                    }
                }
                Msg::Trees(_)
                | Msg::Go
                | Msg::Abort(_)
                | Msg::Mark(_)
                | Msg::Marked(_)
                | Msg::Exit => {}
            }
        }
        if me == 0 && roots_left == 0 {
            for r in 1..n {
                t.send(r, Msg::Stop.encode());
            }
            return reports;
        }
        let now = Instant::now();
        if n > 1 && !asking && walk.queued() == 0 && now >= next_ask {
            let mut victim = rng.below(n as u64 - 1) as usize;
            if victim >= me {
                victim += 1;
            }
            t.send(victim, Msg::Steal(walk.capacity() as u32).encode());
            asking = true;
            busy = true;
        }
        if me != 0 && now.duration_since(last_report) >= PROGRESS_EVERY {
            report_progress(job, &mut reports);
            last_report = now;
        }
        if busy {
            nap = Duration::from_micros(50);
        } else {
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(2));
        }
    }
}

/// After `drive` (the walk's workers are done): every rank but 0 sends rank 0 its last counts
/// and `payload`, rank 0 collects them all and lets everyone go. Requests for work that
/// still arrive are answered with none. Rank 0 returns what the others reported.
pub fn conclude(job: &Job<'_>, mut reports: Reports, payload: Vec<u8>) -> Reports {
    let t = job.transport;
    let (me, n) = (t.rank(), t.size());
    if me != 0 {
        let c = (job.counts)();
        let counts = delta(&c, &reports.reported);
        reports.reported = c;
        let host = t.host();
        t.send(
            0,
            Msg::Final {
                counts,
                workers: reports.workers.unwrap_or(0),
                host,
                payload,
            }
            .encode(),
        );
    }
    loop {
        // Every other rank's last report is in once its payload is.
        if me == 0 && reports.payloads.len() == n - 1 {
            for r in 1..n {
                t.send(r, Msg::Exit.encode());
            }
            break;
        }
        let (from, bytes) = recv(t);
        match Msg::decode(&bytes) {
            Ok(Msg::Steal(_)) => t.send(from, Msg::Work(Vec::new()).encode()),
            Ok(Msg::Exit) if me != 0 => break,
            Ok(m @ (Msg::Progress(_) | Msg::Final { .. })) if me == 0 => {
                reports.absorb(job, from, m)
            }
            Ok(_) => {}
            Err(e) => (job.warn)(&format_args!("rank {me}: {e} (from rank {from}); ignored")),
        }
    }
    t.flush();
    if me == 0 {
        // Rank 0's own: all it counted minus what the others reported.
        let all = (job.counts)();
        let others = reports.ranks.iter().skip(1).fold([0u64; 4], |a, r| {
            [
                a[0] + r.files,
                a[1] + r.dirs,
                a[2] + r.bytes,
                a[3] + r.errors,
            ]
        });
        reports.ranks[0] = Rank {
            rank: 0,
            host: t.host(),
            workers: reports.workers,
            ..Rank::default()
        };
        reports.ranks[0].add(&delta(&all, &others));
    }
    reports
}

fn delta(now: &Counts, before: &Counts) -> Counts {
    [0, 1, 2, 3].map(|i| now[i].saturating_sub(before[i]))
}

/// A small generator for picking victims (no need for a crate: quality is irrelevant here).
struct Lcg(u64);

impl Lcg {
    fn new(seed: u64) -> Self {
        Lcg(seed ^ 0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Removes the trees as one rank of `t`'s job (every rank calls it with the trees it resolved
/// from the same arguments). Failures are printed by the rank that met them, through `sink`;
/// rank 0 returns every rank's failures (and counts them into `counters`), the others their
/// own, and rank 0 what each rank did. Nothing is removed unless every rank sees the same
/// trees.
pub fn remove_trees(
    t: &dyn Transport,
    targets: Vec<crate::engine::remove::DirTarget>,
    opts: &crate::engine::remove::Settings,
    counters: &crate::engine::remove::Counters,
    sink: &dyn crate::engine::remove::Sink,
) -> (crate::engine::remove::Outcome, Vec<Rank>) {
    use std::sync::atomic::Ordering::Relaxed;
    let trees = Trees {
        roots: targets
            .iter()
            .map(|d| (&*d.base, d.name.as_c_str(), d.display.as_path()))
            .collect(),
        dry_run: opts.dry_run,
    };
    let agreed = agree(t, &trees, opts.verdicts.as_deref());
    drop(trees);
    if let Err(e) = agreed {
        return (disagreed(t, &targets, &e, counters, sink), Vec::new());
    }
    if targets.is_empty() {
        return Default::default();
    }
    let collect = Collect {
        inner: sink,
        failures: std::sync::Mutex::new(Vec::new()),
    };
    let counts = || {
        [
            counters.files.load(Relaxed),
            counters.dirs.load(Relaxed),
            counters.bytes.load(Relaxed),
            counters.errors.load(Relaxed),
        ]
    };
    let add = |c: Counts| {
        counters.files.fetch_add(c[0], Relaxed);
        counters.dirs.fetch_add(c[1], Relaxed);
        counters.bytes.fetch_add(c[2], Relaxed);
        counters.errors.fetch_add(c[3], Relaxed);
    };
    let warn = |w: &dyn std::fmt::Display| sink.warning(w);
    let job = Job {
        transport: t,
        roots: targets.len(),
        counts: &counts,
        add: &add,
        warn: &warn,
        verdicts: opts.verdicts.as_deref(),
    };
    let leader = t.rank() == 0;
    let first_display = targets.first().map(|d| d.display.clone());
    let (mut outcome, mut reports) = crate::engine::remove::remove_trees_shared(
        targets,
        opts,
        counters,
        &collect,
        leader,
        |walk, ev| drive(&job, walk, ev),
    );
    // What this rank's client measured (rank 0 lists every rank's).
    reports.workers = opts.concurrency.as_ref().map(|c| c.report().chosen as u64);
    if t.rank() != 0 && crate::sys::interrupt::stopping() {
        if let Some(path) = first_display {
            stopped_here(t, path, &collect, counters);
        }
    }
    // A selection's totals (`--dry-run`, `--json`) travel after the failures.
    let tally = opts.select.as_ref().and_then(|s| s.tally.as_ref());
    let payload = encode_payload(
        &collect.failures.lock().expect("failures lock"),
        &outcome.subvolumes,
        tally,
    );
    let reports = conclude(&job, reports, payload);
    let ranks = if leader {
        reports.ranks.clone()
    } else {
        Vec::new()
    };
    gather(reports.payloads, tally, &mut outcome, counters, sink);
    outcome.failures.sort_by(|a, b| a.path.cmp(&b.path));
    outcome.skipped_mounts.sort();
    outcome.subvolumes.sort_by(|a, b| a.path.cmp(&b.path));
    (outcome, ranks)
}

/// The ranks do not see the same trees (`e`): nothing is removed, every tree failed (rank 0
/// says so).
fn disagreed(
    t: &dyn Transport,
    targets: &[crate::engine::remove::DirTarget],
    e: &dyn std::fmt::Display,
    counters: &crate::engine::remove::Counters,
    sink: &dyn crate::engine::remove::Sink,
) -> crate::engine::remove::Outcome {
    use crate::sys::error::{Failure, Reason};
    let failures = targets
        .iter()
        .map(|d| Failure {
            path: d.display.clone(),
            reason: Reason::Job(e.to_string()),
        })
        .collect::<Vec<_>>();
    if t.rank() == 0 {
        for f in &failures {
            sink.failed(f);
        }
    }
    counters
        .errors
        .fetch_add(failures.len() as u64, std::sync::atomic::Ordering::Relaxed);
    let mut out = crate::engine::remove::Outcome::default();
    out.failures = failures;
    out
}

/// Rank 0 (the others get none): every rank's failures and the subvolumes it met into
/// `outcome`, its selection totals into `tally`; a report it cannot read is a warning and an
/// error.
fn gather(
    payloads: Vec<(usize, Vec<u8>)>,
    tally: Option<&crate::engine::select::tally::Tally>,
    outcome: &mut crate::engine::remove::Outcome,
    counters: &crate::engine::remove::Counters,
    sink: &dyn crate::engine::remove::Sink,
) {
    use crate::sys::error::Reason;
    use std::sync::atomic::Ordering::Relaxed;
    let unreadable = |rank: usize, what: &str, e: &dyn std::fmt::Display| {
        sink.warning(&format_args!(
            "the {what} of rank {rank} were not readable ({e})"
        ));
        counters.errors.fetch_add(1, Relaxed);
    };
    for (rank, payload) in payloads {
        let Some(parts) = split_payload(&payload) else {
            unreadable(rank, "reports", &"cut short");
            continue;
        };
        if let (Some(t), Some(json)) = (tally, Some(parts.totals).filter(|j| !j.is_empty())) {
            match serde_json::from_slice::<crate::engine::select::tally::Report>(json) {
                Ok(r) => t.absorb(&r),
                Err(e) => unreadable(rank, "totals", &e),
            }
        }
        match wire::decode_failures(parts.failures) {
            Ok(fs) => {
                outcome.skipped_mounts.extend(
                    fs.iter()
                        .filter(|f| f.reason == Reason::MountPoint)
                        .map(|f| f.path.clone()),
                );
                outcome.failures.extend(fs);
            }
            Err(e) => unreadable(rank, "failures", &e),
        }
        match wire::decode_subvolumes(parts.subvolumes) {
            Ok(sv) => outcome.subvolumes.extend(sv),
            Err(e) => unreadable(rank, "subvolumes", &e),
        }
    }
}

/// A rank's report to rank 0: its failures and the subvolumes it met (as `wire` encodes them,
/// each after its length) and, if any, its selection totals (as JSON).
fn encode_payload(
    failures: &[crate::sys::error::Failure],
    subvolumes: &[crate::engine::remove::Subvolume],
    tally: Option<&crate::engine::select::tally::Tally>,
) -> Vec<u8> {
    let mut payload = Vec::new();
    for part in [
        wire::encode_failures(failures),
        wire::encode_subvolumes(subvolumes),
    ] {
        payload.extend_from_slice(&(part.len() as u32).to_le_bytes());
        payload.extend_from_slice(&part);
    }
    if let Some(t) = tally {
        payload.extend(serde_json::to_vec(&t.report()).expect("totals serialize"));
    }
    payload
}

/// The parts of a rank's payload (`encode_payload`).
struct Parts<'a> {
    failures: &'a [u8],
    subvolumes: &'a [u8],
    /// Empty without a selection.
    totals: &'a [u8],
}

/// A rank's payload (`encode_payload`) in its parts; `None` if it is cut short.
fn split_payload(p: &[u8]) -> Option<Parts<'_>> {
    let mut rest = p;
    let mut next = || -> Option<&[u8]> {
        let n = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let part = rest.get(4..4 + n)?;
        rest = &rest[4 + n..];
        Some(part)
    };
    let failures = next()?;
    let subvolumes = next()?;
    Some(Parts {
        failures,
        subvolumes,
        totals: rest,
    })
}

/// A sink that also keeps the failures (a rank's report to rank 0).
struct Collect<'a> {
    inner: &'a dyn crate::engine::remove::Sink,
    failures: std::sync::Mutex<Vec<crate::sys::error::Failure>>,
}

impl crate::engine::remove::Sink for Collect<'_> {
    fn wants_removed(&self) -> bool {
        self.inner.wants_removed()
    }
    fn removed(&self, path: &std::path::Path, dir: bool) {
        self.inner.removed(path, dir)
    }
    fn failed(&self, f: &crate::sys::error::Failure) {
        self.inner.failed(f);
        self.failures.lock().expect("failures lock").push(f.clone());
    }
    fn warning(&self, what: &dyn std::fmt::Display) {
        self.inner.warning(what)
    }
    fn subvolume_walked(&self, path: &std::path::Path, why: &str) {
        self.inner.subvolume_walked(path, why)
    }
}

#[cfg(test)]
mod tests;
