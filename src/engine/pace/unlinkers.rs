//! How many workers unlink inside one directory at once, found by measurement like the worker
//! count (`concurrency.rs`): they contend on the directory's lock, so another one pays only
//! where the file system does work outside it (freeing the inode, a cold inode-table read).
//! It starts at one; while the limit holds workers back (a large directory's batches wait for
//! it), a trial of one more is judged by the windows that follow, against the count before
//! measured both before the trial and again after it (A-B-A: a phase of the work, such as the
//! next part of a directory's listing, that falls into one of the two does not decide): kept
//! only if it brought a quarter more unlinks per second than both, for at most half again the
//! CPU per unlink of either; otherwise the count before stays, and the next trial waits twice as
//! long (a second unlinker in one ext4 directory cost 1.7x the CPU for the same time:
//! bench/RESULTS.md, 2026-11-27; judged against the windows before it alone, it was kept in
//! every run of a 1,000,000-file directory, "+97% unlinks/s for 0.53x the CPU per unlink",
//! and the removal took 1.7x `find -delete`'s CPU: 2026-11-29). It only reads the windows it is
//! given and sets the walk's `PerDir`; it never touches a file.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::engine::walk::PerDir;

/// Windows at one count, with workers held back, before a trial of one more ...
const BASELINE_WINDOWS: u32 = 4;
/// ... windows a trial is judged by, and windows back at the count before after it.
const TRIAL_WINDOWS: u32 = 4;
/// A trial is kept for this much more throughput ...
const KEEP_RATE: f64 = 1.25;
/// ... at most this much more CPU per unlink.
const KEEP_CPU: f64 = 1.5;
/// Held-back windows between an undone trial and the next, doubling with each undone one.
const FIRST_WAIT: u32 = 16;
const MOST_WAIT: u32 = 1024;

/// What one window of the removal did (the controller's windows).
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// A worker was held back by the limit during it (a directory's batches waited).
    pub held_back: bool,
    /// Operations done (unlinks, rmdirs).
    pub ops: u64,
    /// Its length, and the process's CPU time in it, in seconds.
    pub secs: f64,
    pub cpu: f64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Sum {
    windows: u32,
    ops: u64,
    secs: f64,
    cpu: f64,
}

impl Sum {
    fn add(&mut self, s: &Sample) {
        self.windows += 1;
        self.ops += s.ops;
        self.secs += s.secs;
        self.cpu += s.cpu;
    }

    fn rate(&self) -> f64 {
        self.ops as f64 / self.secs.max(1e-9)
    }

    fn cpu_per_op(&self) -> f64 {
        self.cpu / self.ops.max(1) as f64
    }
}

/// The decision rule, fed one window at a time (no clock, no threads: testable alone).
#[derive(Debug)]
pub struct Rule {
    count: usize,
    max: usize,
    /// At the current count, held-back windows since it was settled.
    base: Sum,
    /// A trial of one more: the count it came from, that count's sums before it, and the
    /// trial's.
    trial: Option<(usize, Sum, Sum)>,
    /// A trial measured, back at the count before to measure it again: the count tried, and
    /// the sums before, of the trial, and since.
    after: Option<(usize, Sum, Sum, Sum)>,
    /// Held-back windows to wait before the next trial.
    wait: u32,
    since: u32,
}

impl Rule {
    pub fn new(max: usize) -> Rule {
        Rule {
            count: 1,
            max: max.max(1),
            base: Sum::default(),
            trial: None,
            after: None,
            wait: 0,
            since: 0,
        }
    }

    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.count
    }

    /// Judges one window; returns the new count and why, when it changes.
    pub fn judge(&mut self, s: &Sample) -> Option<(usize, String)> {
        if !s.held_back || s.ops == 0 {
            return None;
        }
        if let Some((from, base, mut sum)) = self.trial.take() {
            sum.add(s);
            if sum.windows < TRIAL_WINDOWS {
                self.trial = Some((from, base, sum));
                return None;
            }
            let tried = self.count;
            self.count = from;
            self.after = Some((tried, base, sum, Sum::default()));
            return Some((
                from,
                format!("{tried} unlinkers in one directory measured: {from} again to judge them"),
            ));
        }
        if let Some((tried, before, trial, mut after)) = self.after.take() {
            after.add(s);
            if after.windows < TRIAL_WINDOWS {
                self.after = Some((tried, before, trial, after));
                return None;
            }
            let from = self.count;
            // Against the better of the two: the higher rate, the lower CPU per unlink.
            let rate = trial.rate() / before.rate().max(after.rate());
            let cpu = trial.cpu_per_op() / before.cpu_per_op().min(after.cpu_per_op()).max(1e-12);
            let said = format!(
                "{tried} unlinkers in one directory did {:+.0}% unlinks/s for {:.2}x the CPU per \
                 unlink against {from} (before and after)",
                (rate - 1.0) * 100.0,
                cpu
            );
            self.since = 0;
            if rate >= KEEP_RATE && cpu <= KEEP_CPU {
                self.count = tried;
                self.base = trial;
                self.wait = 0;
                return Some((tried, format!("{said}: kept")));
            }
            self.base = after;
            self.wait = (self.wait * 2).clamp(FIRST_WAIT, MOST_WAIT);
            return Some((from, format!("{said}: staying at {from}")));
        }
        self.base.add(s);
        self.since += 1;
        if self.count >= self.max || self.base.windows < BASELINE_WINDOWS || self.since < self.wait
        {
            return None;
        }
        let from = self.count;
        self.trial = Some((from, self.base, Sum::default()));
        self.base = Sum::default();
        self.count += 1;
        Some((
            self.count,
            format!("trying {} unlinkers in one directory", self.count),
        ))
    }
}

/// What was chosen and why (`--json`'s `concurrency.unlinkers`).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// "measured", or "pinned" (`--batch-threads`).
    pub rule: &'static str,
    /// At the end, and the most it may go to.
    #[serde(rename = "final")]
    pub final_count: usize,
    pub max: usize,
    /// The last decision, if a trial was judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The unlinkers per directory of one removal: the walk's `PerDir` and the rule that sets it.
#[derive(Debug)]
pub struct Unlinkers {
    per_dir: Arc<PerDir>,
    pinned: AtomicBool,
    max: usize,
    books: std::sync::Mutex<(Rule, Option<String>)>,
}

impl Unlinkers {
    /// Measured: one to start with, at most `max`.
    pub fn measured(max: usize) -> Unlinkers {
        Unlinkers {
            per_dir: Arc::new(PerDir::new(1)),
            pinned: AtomicBool::new(false),
            max: max.max(1),
            books: std::sync::Mutex::new((Rule::new(max), None)),
        }
    }

    /// Pinned at `n` from now on (`--batch-threads`).
    pub fn pin(&self, n: usize) {
        self.pinned.store(true, Ordering::Relaxed);
        self.per_dir.set(n);
    }

    /// The limit the walk's workers follow.
    pub fn per_dir(&self) -> Arc<PerDir> {
        self.per_dir.clone()
    }

    /// Whether a worker waited idle for a directory's unlinker since the last call.
    pub fn take_waited(&self) -> bool {
        self.per_dir.take_waited()
    }

    /// One window of the removal (`held_back` taken from the walk's `PerDir`); returns whether
    /// a worker was held back in it.
    pub fn window(&self, ops: u64, secs: f64, cpu: f64) -> bool {
        let held_back = self.per_dir.take_held_back();
        if self.pinned.load(Ordering::Relaxed) {
            return held_back;
        }
        let mut b = self.books.lock().unwrap_or_else(|e| e.into_inner());
        let sample = Sample {
            held_back,
            ops,
            secs,
            cpu,
        };
        if let Some((n, why)) = b.0.judge(&sample) {
            self.per_dir.set(n);
            b.1 = Some(why);
        }
        held_back
    }

    pub fn report(&self) -> Report {
        let b = self.books.lock().unwrap_or_else(|e| e.into_inner());
        let pinned = self.pinned.load(Ordering::Relaxed);
        Report {
            rule: if pinned { "pinned" } else { "measured" },
            final_count: self.per_dir.limit(),
            max: if pinned {
                self.per_dir.limit()
            } else {
                self.max
            },
            why: b.1.clone(),
        }
    }
}

/// The CPU time this process has used so far, in seconds (all its threads).
pub fn process_cpu() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(ops: u64, cpu: f64) -> Sample {
        Sample {
            held_back: true,
            ops,
            secs: 0.1,
            cpu,
        }
    }

    /// Feeds `n` windows of `s`; returns the changes.
    fn feed(r: &mut Rule, n: u32, s: Sample) -> Vec<usize> {
        (0..n).filter_map(|_| r.judge(&s)).map(|(c, _)| c).collect()
    }

    #[test]
    fn a_second_unlinker_that_only_costs_cpu_is_undone_and_tried_again_later() {
        let mut r = Rule::new(2);
        assert_eq!(
            feed(&mut r, 4, held(1000, 0.05)),
            vec![2],
            "tried after a baseline"
        );
        // The same throughput for 1.7x the CPU: back to one to measure it again, and there.
        assert_eq!(feed(&mut r, 4, held(1000, 0.085)), vec![1]);
        assert_eq!(feed(&mut r, 4, held(1000, 0.05)), vec![1]);
        assert_eq!(r.count(), 1);
        // Not again before the wait.
        assert!(feed(&mut r, FIRST_WAIT - 1, held(1000, 0.05)).is_empty());
        assert_eq!(feed(&mut r, 1, held(1000, 0.05)), vec![2]);
        assert_eq!(feed(&mut r, 4, held(1010, 0.09)), vec![1]);
        assert_eq!(feed(&mut r, 4, held(1000, 0.05)), vec![1]);
        // Twice as long now.
        assert!(feed(&mut r, 2 * FIRST_WAIT - 1, held(1000, 0.05)).is_empty());
        assert_eq!(r.count(), 1);
    }

    #[test]
    fn a_second_unlinker_that_pays_is_kept() {
        let mut r = Rule::new(4);
        assert_eq!(feed(&mut r, 4, held(1000, 0.05)), vec![2]);
        // 1.6x the unlinks for 1.2x the CPU each, against one before and after: kept, then
        // three tried at once.
        assert_eq!(feed(&mut r, 4, held(1600, 0.096)), vec![1]);
        assert_eq!(feed(&mut r, 4, held(1000, 0.05)), vec![2]);
        assert_eq!(r.count(), 2);
        assert_eq!(feed(&mut r, 1, held(1600, 0.096)), vec![3]);
        // A third that does nothing more stays out.
        assert_eq!(feed(&mut r, 4, held(1600, 0.15)), vec![2]);
        assert_eq!(feed(&mut r, 4, held(1600, 0.096)), vec![2]);
        assert_eq!(r.count(), 2);
    }

    #[test]
    fn a_trial_is_judged_against_the_count_before_measured_after_it_too() {
        // Before the trial the one unlinker shared its windows with a listing (fewer unlinks
        // for the same CPU); the second one did no more than one does without it.
        let mut r = Rule::new(2);
        assert_eq!(feed(&mut r, 4, held(400, 0.05)), vec![2]);
        assert_eq!(feed(&mut r, 4, held(1000, 0.085)), vec![1]);
        // Against the windows before alone it would have looked +150% for 0.68x the CPU.
        let judged: Vec<_> = (0..4).filter_map(|_| r.judge(&held(1000, 0.05))).collect();
        assert_eq!(judged.len(), 1, "{judged:?}");
        assert_eq!(judged[0].0, 1, "{judged:?}");
        assert!(
            judged[0].1.contains("+0% unlinks/s for 1.70x"),
            "{judged:?}"
        );
        assert_eq!(r.count(), 1);
        // The mirror image: the listing after it; the same verdict.
        let mut r = Rule::new(2);
        feed(&mut r, 4, held(1000, 0.05));
        feed(&mut r, 4, held(1000, 0.085));
        assert_eq!(feed(&mut r, 4, held(400, 0.05)), vec![1]);
        assert_eq!(r.count(), 1);
    }

    #[test]
    fn nothing_is_judged_while_no_worker_waits_for_a_directory() {
        let mut r = Rule::new(2);
        let free = Sample {
            held_back: false,
            ..held(1000, 0.05)
        };
        assert!(feed(&mut r, 100, free).is_empty());
        assert_eq!(r.count(), 1);
        // One unlinker at most: nothing to try.
        let mut one = Rule::new(1);
        assert!(feed(&mut one, 100, held(1000, 0.05)).is_empty());
    }
}
