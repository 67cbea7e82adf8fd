//! The log2 size histogram of `reclaim scan`: bucket 0 holds empty files, bucket k (k >= 1)
//! holds sizes in [2^(k-1), 2^k). Pure arithmetic on sizes; never touches the file system.

use serde::Serialize;

use crate::sys::format::binary_units;

/// Buckets: 0 for size 0, then one per bit length of the size (1..=64).
const BUCKETS: usize = 65;

/// Counts and bytes per size bucket.
#[derive(Clone, Debug)]
pub struct Histogram {
    files: [u64; BUCKETS],
    apparent: [u64; BUCKETS],
    allocated: [u64; BUCKETS],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            files: [0; BUCKETS],
            apparent: [0; BUCKETS],
            allocated: [0; BUCKETS],
        }
    }
}

/// One non-empty bucket, as `--json` prints it: sizes `min..=max` bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bucket {
    pub min: u64,
    pub max: u64,
    pub files: u64,
    pub apparent_bytes: u64,
    pub allocated_bytes: u64,
}

/// The bucket of a file of `size` bytes: its bit length.
pub fn bucket_of(size: u64) -> usize {
    (u64::BITS - size.leading_zeros()) as usize
}

/// The smallest and largest size of bucket `i`.
pub fn bounds(i: usize) -> (u64, u64) {
    match i {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        _ => (1 << (i - 1), (1 << i) - 1),
    }
}

impl Histogram {
    pub fn add(&mut self, apparent: u64, allocated: u64) {
        let b = bucket_of(apparent);
        self.files[b] += 1;
        self.apparent[b] += apparent;
        self.allocated[b] += allocated;
    }

    /// Takes back one `add` (a file another rank counted first, under MPI).
    pub fn remove(&mut self, apparent: u64, allocated: u64) {
        let b = bucket_of(apparent);
        self.files[b] = self.files[b].saturating_sub(1);
        self.apparent[b] = self.apparent[b].saturating_sub(apparent);
        self.allocated[b] = self.allocated[b].saturating_sub(allocated);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for i in 0..BUCKETS {
            self.files[i] += other.files[i];
            self.apparent[i] += other.apparent[i];
            self.allocated[i] += other.allocated[i];
        }
    }

    /// The counts as words (another rank's report under MPI).
    pub fn to_words(&self) -> Vec<u64> {
        [self.files, self.apparent, self.allocated].concat()
    }

    /// The counts from `to_words`; `None` if there are not as many words.
    pub fn from_words(w: &[u64]) -> Option<Histogram> {
        if w.len() != 3 * BUCKETS {
            return None;
        }
        let mut h = Histogram::default();
        h.files.copy_from_slice(&w[..BUCKETS]);
        h.apparent.copy_from_slice(&w[BUCKETS..2 * BUCKETS]);
        h.allocated.copy_from_slice(&w[2 * BUCKETS..]);
        Some(h)
    }

    /// Files counted.
    #[cfg(test)]
    pub fn total(&self) -> u64 {
        self.files.iter().sum()
    }

    /// The non-empty buckets, smallest sizes first.
    pub fn buckets(&self) -> Vec<Bucket> {
        (0..BUCKETS)
            .filter(|&i| self.files[i] > 0)
            .map(|i| {
                let (min, max) = bounds(i);
                Bucket {
                    min,
                    max,
                    files: self.files[i],
                    apparent_bytes: self.apparent[i],
                    allocated_bytes: self.allocated[i],
                }
            })
            .collect()
    }
}

/// The human label of a bucket: `0 B`, `1 B`, `2 B – 4 B` (upper bound exclusive).
pub fn label(b: &Bucket) -> String {
    match (b.min, b.max) {
        (0, 0) => "0 B".into(),
        (1, 1) => "1 B".into(),
        (min, max) => format!(
            "{} – {}",
            binary_units(min.into()),
            binary_units(u128::from(max) + 1)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_bit_lengths() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 1);
        assert_eq!(bucket_of(2), 2);
        assert_eq!(bucket_of(3), 2);
        assert_eq!(bucket_of(4), 3);
        assert_eq!(bucket_of(7), 3);
        assert_eq!(bucket_of(8), 4);
        assert_eq!(bucket_of(65_535), 16);
        assert_eq!(bucket_of(65_536), 17);
        assert_eq!(bucket_of(u64::MAX), 64);
        for i in 0..BUCKETS {
            let (lo, hi) = bounds(i);
            assert_eq!(bucket_of(lo), i);
            assert_eq!(bucket_of(hi), i);
        }
    }

    #[test]
    fn sums_and_labels() {
        let mut h = Histogram::default();
        for size in [0, 0, 1, 3, 4096, 5000, 1 << 20] {
            h.add(size, size.div_ceil(4096) * 4096);
        }
        let mut other = Histogram::default();
        other.add(2, 4096);
        h.merge(&other);
        assert_eq!(h.total(), 8);
        let b = h.buckets();
        let labels: Vec<String> = b.iter().map(label).collect();
        assert_eq!(
            labels,
            ["0 B", "1 B", "2 B – 4 B", "4 KiB – 8 KiB", "1 MiB – 2 MiB"]
        );
        assert_eq!(b[2].files, 2);
        assert_eq!(b[2].apparent_bytes, 5);
        assert_eq!(b[3].files, 2);
        assert_eq!(b[3].allocated_bytes, 4096 + 8192);
        let top = Bucket {
            min: 1 << 63,
            max: u64::MAX,
            files: 1,
            apparent_bytes: 0,
            allocated_bytes: 0,
        };
        assert_eq!(label(&top), "8 EiB – 16 EiB");
    }
}
