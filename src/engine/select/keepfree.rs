//! `--keep-free PERCENT|SIZE`: remove the oldest selected files until the file system has that
//! much free, in memory bounded whatever the number of files. A first walk (a dry run) adds
//! the bytes each selected file would free to a histogram of ages with log-spaced buckets
//! (0.27% of the age wide each, 8,200 buckets: 64 KiB); the oldest buckets that free enough fix
//! the cutoff age; a second walk removes what is at least that old, and stops as soon as the
//! target is reached. Space still pending in this user's trashes counts as free already, as
//! for `prune --keep-free`. Pure bookkeeping here; the walks are the engine's.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Stamp;

/// Buckets per doubling of the age.
const PER_OCTAVE: f64 = 256.0;
/// Ages up to 2^32 s (136 years) have their own bucket; older ones share the last.
const BUCKETS: usize = 32 * 256 + 2;

/// Selected bytes by age.
#[derive(Debug)]
pub struct Histogram {
    now: Stamp,
    buckets: Vec<AtomicU64>,
    files: AtomicU64,
}

impl Histogram {
    /// Ages count from `now`.
    pub fn new(now: Stamp) -> Histogram {
        Histogram {
            now,
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            files: AtomicU64::new(0),
        }
    }

    fn age_secs(&self, t: Stamp) -> f64 {
        (self.now.0 - t.0) as f64 + (self.now.1 as f64 - t.1 as f64) * 1e-9
    }

    fn bucket(age: f64) -> usize {
        if age < 1.0 {
            0
        } else {
            (1 + (age.log2() * PER_OCTAVE) as usize).min(BUCKETS - 1)
        }
    }

    /// The youngest age of bucket `b` (its lower edge), in seconds.
    fn lower_edge(b: usize) -> f64 {
        if b == 0 {
            0.0
        } else {
            ((b - 1) as f64 / PER_OCTAVE).exp2()
        }
    }

    /// A file of time `t` that would free `bytes`.
    pub fn add(&self, t: Stamp, bytes: u64) {
        let b = Self::bucket(self.age_secs(t));
        self.buckets[b].fetch_add(bytes, Ordering::Relaxed);
        self.files.fetch_add(1, Ordering::Relaxed);
    }

    /// All the bytes seen.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    pub fn files(&self) -> u64 {
        self.files.load(Ordering::Relaxed)
    }

    /// The cutoff that frees at least `need` bytes taking the oldest first: files whose time
    /// is at or before it are removed. The whole bucket at the edge goes, so it frees at most
    /// one bucket (0.27% of that age) more than needed. `None` if all of them together free
    /// less (then every selected file goes).
    pub fn cutoff(&self, need: u64) -> Option<Cutoff> {
        let mut sum = 0u64;
        for b in (0..BUCKETS).rev() {
            sum = sum.saturating_add(self.buckets[b].load(Ordering::Relaxed));
            if sum >= need && sum > 0 {
                let age = Self::lower_edge(b);
                let whole = age.floor();
                let secs = self.now.0 - whole as i64;
                let nanos = ((age - whole) * 1e9) as i64;
                let (secs, nanos) = if (self.now.1 as i64) < nanos {
                    (secs - 1, self.now.1 as i64 + 1_000_000_000 - nanos)
                } else {
                    (secs, self.now.1 as i64 - nanos)
                };
                return Some(Cutoff {
                    at: (secs, nanos as u32),
                    age_s: age,
                    bytes: sum,
                });
            }
        }
        None
    }
}

/// Where `--keep-free` cuts.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Cutoff {
    /// Files with a time at or before this go.
    #[serde(skip)]
    pub at: Stamp,
    /// Their age, in seconds.
    pub age_s: f64,
    /// What they free, by the first walk.
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_buckets_that_free_enough_fix_the_cutoff() {
        let now = (1_000_000_000, 500);
        let h = Histogram::new(now);
        let day = 86_400;
        for d in 1..=100i64 {
            // one file of 1 MB per day of age
            h.add((now.0 - d * day, 0), 1 << 20);
        }
        assert_eq!(h.total(), 100 << 20);
        // 10 MB: the ten oldest days (91..=100 days old).
        let c = h.cutoff(10 << 20).unwrap();
        assert!(c.bytes >= 10 << 20 && c.bytes < 11 << 20, "{c:?}");
        assert!(
            c.age_s > 90.0 * day as f64 && c.age_s <= 91.0 * day as f64,
            "{c:?}"
        );
        // The cutoff takes those files and no younger one.
        assert!((now.0 - 91 * day, 0) <= c.at);
        assert!((now.0 - 90 * day, 0) > c.at);
        assert!(h.cutoff(101 << 20).is_none());
        assert_eq!(h.cutoff(1).unwrap().bytes, 1 << 20);
    }

    #[test]
    fn buckets_are_monotonic_and_fine() {
        let mut last = 0;
        for age in [0.5, 1.0, 2.0, 60.0, 3600.0, 86_400.0, 1e9, 1e12] {
            let b = Histogram::bucket(age);
            assert!(b >= last);
            assert!(Histogram::lower_edge(b) <= age);
            last = b;
        }
        // Neighbouring buckets differ by 0.27% of the age.
        let r = Histogram::lower_edge(1001) / Histogram::lower_edge(1000);
        assert!((r - 1.0027).abs() < 1e-3, "{r}");
    }
}

/// What `--keep-free` found and did (`"keep_free"` in `--json`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct KeepFreeOutcome {
    /// Free bytes wanted on the file system.
    pub target_free: u64,
    /// Free when it started.
    pub free_before: u64,
    /// Pending in this user's trashes there (counted as free).
    pub pending: u64,
    /// What had to be freed (0: nothing to do).
    pub need: u64,
    /// Matching files and the bytes they free, by the first walk.
    pub candidates: u64,
    pub candidate_bytes: u64,
    /// Where it cut (files at least this old went); `None`: nothing needed, or all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cutoff: Option<Cutoff>,
    /// The target was reached during the removal (it stopped there).
    pub reached: bool,
}
