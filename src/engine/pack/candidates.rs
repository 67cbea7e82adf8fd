//! What `reclaim scan` calls a pack candidate: a subtree of many files, nearly all small, none
//! modified (or, asked, accessed) for a while: cold small files, which backups and scans crawl
//! through one by one and which `reclaim pack` turns into one file. Owns the rule and the
//! per-directory sums the scan's walk keeps for it; reads and prints nothing.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// Which subtrees are candidates.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// Every entry's time (mtime, or atime) must be before this (seconds since the epoch).
    pub before: i64,
    /// Compare access times instead of modification times.
    pub atime: bool,
    /// At least this many regular files in the subtree (and at least nine in ten of them
    /// small: below the scan's `--small`).
    pub min_files: u64,
    /// The age asked for, in days (for messages).
    pub age_days: u64,
}

impl Rule {
    /// Candidates untouched for `age` (`atime`: not accessed) as of now.
    pub fn new(age: std::time::Duration, atime: bool, min_files: u64) -> Rule {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Rule {
            before: now - age.as_secs() as i64,
            atime,
            min_files,
            age_days: age.as_secs() / 86_400,
        }
    }

    /// Whether a subtree of `files` regular files with these sums is a candidate.
    pub fn takes(&self, files: u64, s: &Sums) -> bool {
        let small = s.small.load(Ordering::Relaxed);
        files >= self.min_files.max(2)
            && small * 10 >= files * 9
            && s.newest.load(Ordering::Relaxed) < self.before
    }
}

/// A directory's sums for the rule, over its whole subtree once it is finished.
#[derive(Debug)]
pub struct Sums {
    pub small: AtomicU64,
    pub apparent: AtomicU64,
    /// The newest time (mtime or atime) of any non-directory below.
    pub newest: AtomicI64,
    /// It is a candidate (then none below it is listed).
    pub taken: AtomicBool,
}

impl Default for Sums {
    fn default() -> Self {
        Sums {
            small: AtomicU64::new(0),
            apparent: AtomicU64::new(0),
            newest: AtomicI64::new(i64::MIN),
            taken: AtomicBool::new(false),
        }
    }
}

impl Sums {
    pub fn add(&self, small: u64, apparent: u64, newest: i64) {
        self.small.fetch_add(small, Ordering::Relaxed);
        self.apparent.fetch_add(apparent, Ordering::Relaxed);
        self.newest.fetch_max(newest, Ordering::Relaxed);
    }

    /// Adds this (finished) directory's sums to its parent's.
    pub fn add_to(&self, parent: &Sums) {
        parent.add(
            self.small.load(Ordering::Relaxed),
            self.apparent.load(Ordering::Relaxed),
            self.newest.load(Ordering::Relaxed),
        );
    }

    /// As three numbers (a rank's summary of a directory under MPI).
    pub fn words(&self) -> [u64; 3] {
        [
            self.small.load(Ordering::Relaxed),
            self.apparent.load(Ordering::Relaxed),
            self.newest.load(Ordering::Relaxed) as u64,
        ]
    }
}

/// One candidate, as the scan reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    pub files: u64,
    pub small_files: u64,
    /// Allocated bytes of the subtree (what it takes now).
    pub allocated: u64,
    /// Apparent bytes of its files (at most what the archive takes, before compression).
    pub apparent: u64,
    /// Its newest time (seconds since the epoch).
    pub newest: i64,
}

impl Candidate {
    /// Bytes packing would give back at least: the allocated space minus the data itself
    /// (an archive stores it without per-file block rounding, and compresses it).
    pub fn saves(&self) -> u64 {
        self.allocated.saturating_sub(self.apparent)
    }

    /// The command that packs it.
    pub fn command(&self) -> String {
        format!("reclaim pack {}", crate::sys::quote::quote(&self.path))
    }
}
