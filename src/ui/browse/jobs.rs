//! The work `reclaim browse` runs beside its screen, each on a thread of its own so that the
//! screen never waits: the scan filling the tree (or an import), one action at a time on the
//! files (`reaper::browse::Actor`), and a once-a-second look at the free space and the trash.
//! The screen polls them; nothing here draws.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::engine::pack;
use crate::engine::scan::import::Import;
use crate::engine::scan::tree::Tree;
use crate::engine::scan::walk::{Live, ScanError, Start};
use crate::engine::scan::TreeOptions;
use crate::reaper::browse::{Actor, Deletion, NotPacked, NotRestored, Progress, Report, Space};

/// A scan (or import) filling the tree.
pub struct Scan {
    /// Its counts so far (read errors too: the entries are marked in the tree).
    pub live: Arc<Live>,
    done: Arc<AtomicBool>,
    pub started: Instant,
    /// How long it took, once done.
    pub took: Option<Duration>,
    /// An import that stopped early: why.
    pub import_error: Arc<Mutex<Option<String>>>,
}

impl Scan {
    /// Whether it is still running (notes how long it took when it ends).
    pub fn running(&mut self) -> bool {
        if self.took.is_none() && self.done.load(Ordering::Acquire) {
            self.took = Some(self.started.elapsed());
        }
        self.took.is_none()
    }

    pub fn error_count(&self) -> u64 {
        self.live.errors.load(Ordering::Relaxed)
    }
}

/// Walks `start` into `tree` at `at` on a thread of its own.
pub fn scan(tree: Arc<Tree>, start: Start, at: u32, opts: TreeOptions) -> Scan {
    let live = Arc::new(Live::default());
    let done = Arc::new(AtomicBool::new(false));
    let (l, d) = (live.clone(), done.clone());
    std::thread::spawn(move || {
        // Each is counted in `live` and marked on its entry: the view shows them there.
        let on_error = |_: &ScanError| {};
        crate::engine::scan::into_tree(start, &tree, at, &opts, &l, &on_error);
        d.store(true, Ordering::Release);
    });
    Scan {
        live,
        done,
        started: Instant::now(),
        took: None,
        import_error: Arc::default(),
    }
}

/// Reads the rest of an import into its tree on a thread of its own.
pub fn import(imp: Import) -> Scan {
    let done = Arc::new(AtomicBool::new(false));
    let failed: Arc<Mutex<Option<String>>> = Arc::default();
    let (d, f) = (done.clone(), failed.clone());
    std::thread::spawn(move || {
        if let Err(e) = imp.run() {
            *f.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
        }
        d.store(true, Ordering::Release);
    });
    Scan {
        live: Arc::default(),
        done,
        started: Instant::now(),
        took: None,
        import_error: failed,
    }
}

/// What an action came to.
pub enum Done {
    Deleted(Report),
    Emptied(u32, Report),
    Undone(Deletion, Vec<(u32, Result<(), NotRestored>)>),
    Removed(Report),
    Packed(u32, Result<(pack::PackOutcome, PathBuf), NotPacked>),
}

/// One action on the files, running.
pub struct Job {
    /// What it does, for the status line ("deleting 3 entries").
    pub what: String,
    pub progress: Arc<Progress>,
    /// A pack's last progress event.
    pub pack: Arc<Mutex<Option<pack::Event>>>,
    pub started: Instant,
    handle: JoinHandle<Done>,
}

impl Job {
    pub fn finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Its outcome (waits for it if it is not finished).
    pub fn join(self) -> Option<Done> {
        self.handle.join().ok()
    }
}

/// What an action is asked to do.
pub enum Act {
    Delete(Vec<u32>),
    Empty(u32),
    Undo(Deletion),
    Remove(Vec<u32>),
    Pack(u32),
}

/// Starts `act` on a thread of its own.
pub fn start(actor: &Arc<Actor>, act: Act, what: String) -> Job {
    let progress = Arc::new(Progress::default());
    let pack_event: Arc<Mutex<Option<pack::Event>>> = Arc::default();
    let (a, p, pe) = (actor.clone(), progress.clone(), pack_event.clone());
    let handle = std::thread::spawn(move || match act {
        Act::Delete(nodes) => Done::Deleted(a.delete(&nodes, &p)),
        Act::Empty(dir) => Done::Emptied(dir, a.empty(dir, &p)),
        Act::Undo(d) => {
            let r = a.undo(&d);
            Done::Undone(d, r)
        }
        Act::Remove(nodes) => Done::Removed(a.remove(&nodes, &p)),
        Act::Pack(dir) => {
            let on = |e: pack::Event| *pe.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            Done::Packed(dir, a.pack(dir, &on))
        }
    });
    Job {
        what,
        progress,
        pack: pack_event,
        started: Instant::now(),
        handle,
    }
}

/// Free space and what waits in the trash, looked at once a second on a thread of its own
/// (a file system that does not answer delays only this).
pub struct Watch {
    pub space: Arc<Mutex<Option<Space>>>,
    /// Times it looked (the screen redraws when it moved).
    pub looks: Arc<AtomicU64>,
}

pub fn watch(actor: Arc<Actor>) -> Watch {
    let space: Arc<Mutex<Option<Space>>> = Arc::default();
    let looks = Arc::new(AtomicU64::new(0));
    let (s, n) = (space.clone(), looks.clone());
    std::thread::spawn(move || loop {
        let now = actor.space();
        *s.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
        n.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_secs(1));
    });
    Watch { space, looks }
}
