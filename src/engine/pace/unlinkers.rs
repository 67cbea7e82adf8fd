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
//! and the removal took 1.7x `find -delete`'s CPU: 2026-11-29). A trial that clearly loses
//! (fewer unlinks per second for more CPU per unlink than a kept one may cost) ends after its
//! windows, before its half second, and the waits are in seconds. A count kept is judged again
//! from below (a trial of one fewer between windows at it), soon after it was raised and then
//! at doubling intervals: one that paid at the start of a directory of 1,000,000 stayed for
//! the rest of it, where it cost 1.6x the CPU (2026-11-29). It only reads the windows it is
//! given and sets the walk's `PerDir`; it never touches a file.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::engine::walk::PerDir;

/// Windows at one count, with workers held back, before a trial of one more ...
const BASELINE_WINDOWS: u32 = 4;
/// ... windows a trial is judged by, and windows back at the count before after it ...
const TRIAL_WINDOWS: u32 = 4;
/// ... and the time each of the three phases lasts at least (windows are as short as 50 ms:
/// four of them saw a second unlinker in a 1,000,000-file ext4 directory at "+27% unlinks/s
/// for 1.04x the CPU per unlink", kept, and the run took 1.6x the CPU of those that stayed at
/// one: bench/RESULTS.md, 2026-11-29).
const PHASE_SECS: f64 = 0.5;
/// A trial is kept for this much more throughput ...
const KEEP_RATE: f64 = 1.25;
/// ... at most this much more CPU per unlink.
const KEEP_CPU: f64 = 1.5;
/// Seconds of held-back windows between a judged trial and the next, doubling with each verdict
/// that leaves the count as it was (a trial of one more that does not pay costs its CPU: at
/// 0.8 s after the first, a directory of 1,000,000 saw five trials, and 1.15x `find -delete`'s
/// CPU: bench/RESULTS.md, 2026-11-29).
const FIRST_WAIT: f64 = 2.0;
const MOST_WAIT: f64 = 120.0;

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

    /// Long enough to judge by (`windows` of them, `PHASE_SECS`).
    fn full(&self, windows: u32) -> bool {
        self.windows >= windows && self.secs >= PHASE_SECS - 1e-9
    }
}

/// A trial: the count it came from and that count's windows before it, then the trial's, then
/// (back at the count it came from) the windows after it.
#[derive(Clone, Copy, Debug)]
struct Trial {
    from: usize,
    tried: usize,
    before: Sum,
    during: Sum,
    after: Option<Sum>,
}

impl Trial {
    /// A trial of one more (not one fewer).
    fn up(&self) -> bool {
        self.tried > self.from
    }

    /// A trial of one more that, over `TRIAL_WINDOWS` windows, did fewer unlinks per second
    /// than the windows before it for more CPU per unlink than a kept one may cost: measured
    /// enough (its windows cost the most; the count before is measured after it all the same).
    fn loses(&self) -> bool {
        let (b, t) = (&self.before, &self.during);
        self.up()
            && t.windows >= TRIAL_WINDOWS
            && t.rate() < b.rate()
            && t.cpu_per_op() > KEEP_CPU * b.cpu_per_op()
    }

    /// The verdict once measured: whether the higher of the two counts pays (a quarter more
    /// unlinks per second for at most half again the CPU per unlink), judged toward the lower
    /// one: a trial of one more against the better of the windows around it (the higher rate,
    /// the lower CPU per unlink), a trial of one fewer against the worse of them.
    fn verdict(&self, after: &Sum) -> (bool, String) {
        let (b, a, t) = (&self.before, after, &self.during);
        let (rate, cpu) = if self.up() {
            (
                t.rate() / b.rate().max(a.rate()).max(1e-12),
                t.cpu_per_op() / b.cpu_per_op().min(a.cpu_per_op()).max(1e-12),
            )
        } else {
            (
                b.rate().min(a.rate()) / t.rate().max(1e-12),
                b.cpu_per_op().max(a.cpu_per_op()) / t.cpu_per_op().max(1e-12),
            )
        };
        let (more, fewer) = (self.from.max(self.tried), self.from.min(self.tried));
        let pays = rate >= KEEP_RATE && cpu <= KEEP_CPU;
        let said = format!(
            "{more} unlinkers in one directory did {:+.0}% unlinks/s for {:.2}x the CPU per \
             unlink against {fewer} ({})",
            (rate - 1.0) * 100.0,
            cpu,
            if self.up() {
                "before and after"
            } else {
                "tried between"
            }
        );
        (pays, said)
    }
}

/// The decision rule, fed one window at a time (no clock, no threads: testable alone). A count
/// above one is itself judged again later (a trial of one fewer between windows at it): what
/// paid at the start of a large directory need not pay for the rest of it.
#[derive(Debug)]
pub struct Rule {
    count: usize,
    max: usize,
    /// At the current count, held-back windows since it was settled.
    base: Sum,
    trial: Option<Trial>,
    /// The next trial at a count above one tries one fewer.
    down_next: bool,
    /// Seconds of held-back windows to wait before the next trial, and since the last.
    wait: f64,
    since: f64,
}

impl Rule {
    pub fn new(max: usize) -> Rule {
        Rule {
            count: 1,
            max: max.max(1),
            base: Sum::default(),
            trial: None,
            down_next: false,
            wait: 0.0,
            since: 0.0,
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
        if let Some(mut t) = self.trial.take() {
            let Some(mut after) = t.after else {
                t.during.add(s);
                if !t.during.full(TRIAL_WINDOWS) && !t.loses() {
                    self.trial = Some(t);
                    return None;
                }
                t.after = Some(Sum::default());
                self.trial = Some(t);
                self.count = t.from;
                return Some((
                    t.from,
                    format!(
                        "{} unlinkers in one directory measured: {} again to judge them",
                        t.tried, t.from
                    ),
                ));
            };
            after.add(s);
            if !after.full(TRIAL_WINDOWS) {
                t.after = Some(after);
                self.trial = Some(t);
                return None;
            }
            return Some(self.settle(&t, after));
        }
        self.base.add(s);
        self.since += s.secs;
        let down = self.count > 1 && (self.down_next || self.count >= self.max);
        if (!down && self.count >= self.max)
            || !self.base.full(BASELINE_WINDOWS)
            || self.since < self.wait
        {
            return None;
        }
        let from = self.count;
        let tried = if down { from - 1 } else { from + 1 };
        self.trial = Some(Trial {
            from,
            tried,
            before: self.base,
            during: Sum::default(),
            after: None,
        });
        self.base = Sum::default();
        self.count = tried;
        Some((
            tried,
            format!("trying {tried} unlinkers in one directory (from {from})"),
        ))
    }

    /// The end of trial `t`, measured (`after`, back at the count it came from).
    fn settle(&mut self, t: &Trial, after: Sum) -> (usize, String) {
        let (pays, said) = t.verdict(&after);
        self.since = 0.0;
        // Where the trial's count wins (one more that pays, one fewer where more did not),
        // it is taken; otherwise the count stays. A count just raised is judged again soon,
        // from below; any other verdict makes the next trial wait twice as long, and the next
        // trial goes the other way (up after a count confirmed from below, down after one more
        // was undone).
        let up = t.up();
        self.down_next = up;
        if pays == up {
            self.count = t.tried;
            self.base = t.during;
            self.wait = if up {
                FIRST_WAIT
            } else {
                (self.wait * 2.0).clamp(FIRST_WAIT, MOST_WAIT)
            };
            let why = if up { "kept" } else { "back to" };
            return (t.tried, format!("{said}: {why} {}", t.tried));
        }
        self.base = after;
        self.wait = (self.wait * 2.0).clamp(FIRST_WAIT, MOST_WAIT);
        (t.from, format!("{said}: staying at {}", t.from))
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
    /// Every change, trials and verdicts (the first `MOST_CHANGES`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
}

/// One change of the unlinkers per directory, for the report.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// Seconds since the removal started.
    pub at_s: f64,
    pub unlinkers: usize,
    pub why: String,
}

/// Changes kept for the report.
const MOST_CHANGES: usize = 64;

/// The rule, the last verdict and the changes so far.
#[derive(Debug)]
struct Books {
    rule: Rule,
    why: Option<String>,
    changes: Vec<Change>,
}

/// The unlinkers per directory of one removal: the walk's `PerDir` and the rule that sets it.
#[derive(Debug)]
pub struct Unlinkers {
    per_dir: Arc<PerDir>,
    pinned: AtomicBool,
    max: usize,
    books: std::sync::Mutex<Books>,
}

impl Unlinkers {
    /// Measured: one to start with, at most `max`.
    pub fn measured(max: usize) -> Unlinkers {
        Unlinkers {
            per_dir: Arc::new(PerDir::new(1)),
            pinned: AtomicBool::new(false),
            max: max.max(1),
            books: std::sync::Mutex::new(Books {
                rule: Rule::new(max),
                why: None,
                changes: Vec::new(),
            }),
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

    /// One window of the removal (`held_back` taken from the walk's `PerDir`), ending `at`
    /// seconds after the removal started; returns whether a worker was held back in it.
    pub fn window(&self, ops: u64, secs: f64, cpu: f64, at: f64) -> bool {
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
        if let Some((n, why)) = b.rule.judge(&sample) {
            self.per_dir.set(n);
            if b.changes.len() < MOST_CHANGES {
                b.changes.push(Change {
                    at_s: at,
                    unlinkers: n,
                    why: why.clone(),
                });
            }
            b.why = Some(why);
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
            why: b.why.clone(),
            changes: b.changes.clone(),
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

    /// Windows of 0.125 s in the first wait.
    const WAIT: u32 = (FIRST_WAIT / 0.125) as u32;

    /// A window of 0.125 s (four make a phase) in which a worker was held back.
    fn held(ops: u64, cpu: f64) -> Sample {
        Sample {
            held_back: true,
            ops,
            secs: 0.125,
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
        assert!(feed(&mut r, WAIT - 1, held(1000, 0.05)).is_empty());
        assert_eq!(feed(&mut r, 1, held(1000, 0.05)), vec![2]);
        assert_eq!(feed(&mut r, 4, held(1010, 0.09)), vec![1]);
        assert_eq!(feed(&mut r, 4, held(1000, 0.05)), vec![1]);
        // Twice as long now.
        assert!(feed(&mut r, 2 * WAIT - 1, held(1000, 0.05)).is_empty());
        assert_eq!(r.count(), 1);
    }

    #[test]
    fn a_phase_lasts_half_a_second_however_short_its_windows() {
        let mut r = Rule::new(2);
        let short = Sample {
            secs: 0.05,
            ..held(400, 0.02)
        };
        // Ten windows of 50 ms before the trial, ten in it.
        assert!(feed(&mut r, 9, short).is_empty());
        assert_eq!(feed(&mut r, 1, short), vec![2]);
        assert!(feed(&mut r, 9, short).is_empty());
        assert_eq!(feed(&mut r, 1, short), vec![1]);
    }

    #[test]
    fn a_trial_of_one_more_that_clearly_loses_ends_after_its_windows() {
        let mut r = Rule::new(2);
        let short = |ops, cpu| Sample {
            secs: 0.05,
            ..held(ops, cpu)
        };
        assert_eq!(feed(&mut r, 10, short(400, 0.02)), vec![2]);
        // Fewer unlinks for 1.75x the CPU each: four windows, not half a second.
        assert!(feed(&mut r, 3, short(340, 0.03)).is_empty());
        assert_eq!(feed(&mut r, 1, short(340, 0.03)), vec![1]);
        // More unlinks for that CPU is not a clear loss: the trial runs its half second.
        let mut r = Rule::new(2);
        feed(&mut r, 10, short(400, 0.02));
        assert!(feed(&mut r, 9, short(500, 0.0437)).is_empty());
        assert_eq!(feed(&mut r, 1, short(500, 0.0437)), vec![1]);
    }

    #[test]
    fn a_second_unlinker_that_pays_is_kept_and_judged_again_from_below() {
        let mut r = Rule::new(4);
        assert_eq!(feed(&mut r, 4, held(1000, 0.05)), vec![2]);
        // 1.6x the unlinks for 1.2x the CPU each, against one before and after: kept.
        assert_eq!(feed(&mut r, 4, held(1600, 0.096)), vec![1]);
        let judged: Vec<_> = (0..4).filter_map(|_| r.judge(&held(1000, 0.05))).collect();
        assert_eq!(judged.len(), 1);
        assert_eq!(judged[0].0, 2);
        assert!(
            judged[0].1.ends_with("(before and after): kept 2"),
            "{judged:?}"
        );
        // Judged again soon, from below: one fewer between windows at two, which still pay.
        assert!(feed(&mut r, WAIT - 1, held(1600, 0.096)).is_empty());
        assert_eq!(feed(&mut r, 1, held(1600, 0.096)), vec![1]);
        assert_eq!(feed(&mut r, 4, held(1000, 0.05)), vec![2]);
        let judged: Vec<_> = (0..4).filter_map(|_| r.judge(&held(1600, 0.096))).collect();
        assert_eq!(judged.len(), 1);
        assert!(
            judged[0].1.ends_with("(tried between): staying at 2"),
            "{judged:?}"
        );
        assert_eq!(r.count(), 2);
        // Confirmed: the next trial goes up, after twice the wait; a third that does nothing
        // more stays out.
        assert!(feed(&mut r, 2 * WAIT - 1, held(1600, 0.096)).is_empty());
        assert_eq!(feed(&mut r, 1, held(1600, 0.096)), vec![3]);
        assert_eq!(feed(&mut r, 4, held(1600, 0.15)), vec![2]);
        assert_eq!(feed(&mut r, 4, held(1600, 0.096)), vec![2]);
        assert_eq!(r.count(), 2);
    }

    #[test]
    fn a_second_unlinker_that_paid_at_first_goes_once_it_no_longer_does() {
        // At the start of a large directory a second unlinker pays (cold reads to overlap);
        // later two do no more than one, for more CPU: the trial of one fewer takes it back.
        let mut r = Rule::new(2);
        feed(&mut r, 4, held(1000, 0.05));
        feed(&mut r, 4, held(1600, 0.096));
        assert_eq!(feed(&mut r, 4, held(1000, 0.05)), vec![2]);
        assert_eq!(feed(&mut r, WAIT, held(1500, 0.15)), vec![1]);
        assert_eq!(feed(&mut r, 4, held(1500, 0.075)), vec![2]);
        let judged: Vec<_> = (0..4).filter_map(|_| r.judge(&held(1500, 0.15))).collect();
        assert_eq!(judged.len(), 1);
        assert_eq!(judged[0].0, 1);
        assert!(
            judged[0].1.contains(
                "+0% unlinks/s for 2.00x the CPU per unlink against 1 (tried between): back to 1"
            ),
            "{judged:?}"
        );
        assert_eq!(r.count(), 1);
        // Up again only after twice the wait.
        assert!(feed(&mut r, 2 * WAIT - 1, held(1500, 0.075)).is_empty());
        assert_eq!(feed(&mut r, 1, held(1500, 0.075)), vec![2]);
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
