//! What a scan adds up: per-PATH counts, and the top directories by (small) file count. Plain
//! accumulators that workers keep privately and merge at the end; no I/O, no locks.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

/// Totals of one PATH (or of all of them). Names are counted as `find` counts them (each hard
/// link is a file to unlink); bytes count each inode once, as `du` does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Regular files (names).
    pub files: u64,
    /// Directories, the PATH itself included; mount points left alone are not counted.
    pub dirs: u64,
    pub symlinks: u64,
    /// FIFOs, sockets, device nodes.
    pub other: u64,
    /// Names of regular files whose inode was already counted under another name.
    pub hard_links: u64,
    /// Regular files (names) smaller than the `--small` threshold.
    pub small_files: u64,
    /// `st_blocks * 512` of every inode met, directories included, each inode once.
    pub allocated_bytes: u64,
    /// `st_size` of every inode met, directories included, each inode once.
    pub apparent_bytes: u64,
    /// Entries left out by `--exclude` (not counted, not descended into; what is inside an
    /// excluded directory is not known).
    pub excluded: u64,
    /// Non-directory names in directories of at least `engine::walk::BIG_DIR` entries (removal of those is
    /// bound by one directory's lock, not spread over workers).
    #[serde(skip)]
    pub big_dir_names: u64,
}

impl Counts {
    /// Every count, in a fixed order (another rank's report under MPI).
    pub fn to_words(&self) -> [u64; 11] {
        [
            self.files,
            self.dirs,
            self.symlinks,
            self.other,
            self.hard_links,
            self.small_files,
            self.allocated_bytes,
            self.apparent_bytes,
            self.excluded,
            self.big_dir_names,
            0,
        ]
    }

    pub fn from_words(w: &[u64; 11]) -> Counts {
        Counts {
            files: w[0],
            dirs: w[1],
            symlinks: w[2],
            other: w[3],
            hard_links: w[4],
            small_files: w[5],
            allocated_bytes: w[6],
            apparent_bytes: w[7],
            excluded: w[8],
            big_dir_names: w[9],
        }
    }

    pub fn merge(&mut self, o: &Counts) {
        self.files += o.files;
        self.dirs += o.dirs;
        self.symlinks += o.symlinks;
        self.other += o.other;
        self.hard_links += o.hard_links;
        self.small_files += o.small_files;
        self.allocated_bytes += o.allocated_bytes;
        self.apparent_bytes += o.apparent_bytes;
        self.excluded += o.excluded;
        self.big_dir_names += o.big_dir_names;
    }

    /// Non-directory names: what `rm` unlinks one by one.
    pub fn names(&self) -> u64 {
        self.files + self.symlinks + self.other
    }
}

/// One file of the largest-files list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopFile {
    pub path: std::path::PathBuf,
    /// Its allocated bytes (`st_blocks * 512`), what removing it gives back.
    pub allocated: u64,
    /// Its size (`st_size`).
    pub size: u64,
}

/// The `n` items with the highest count; ties go to the lower `tiebreak` (an inode number, so
/// the same tree always yields the same list, whatever order the workers met it in).
pub struct TopN<T> {
    n: usize,
    heap: BinaryHeap<Reverse<Ranked<T>>>,
    /// How many items with a count were offered (the list holds the first `n` of them).
    pub offered: u64,
}

struct Ranked<T> {
    rank: (u64, Reverse<u64>),
    item: T,
}

impl<T> PartialEq for Ranked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.rank == other.rank
    }
}
impl<T> Eq for Ranked<T> {}
impl<T> PartialOrd for Ranked<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Ranked<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank.cmp(&other.rank)
    }
}

impl<T> TopN<T> {
    pub fn new(n: usize) -> Self {
        TopN {
            n,
            heap: BinaryHeap::with_capacity(n.saturating_add(1).min(1 << 16)),
            offered: 0,
        }
    }

    /// Offers an item; zero counts never make a list.
    pub fn offer(&mut self, count: u64, tiebreak: u64, item: impl FnOnce() -> T) {
        if count > 0 {
            self.offered += 1;
        }
        self.keep(count, tiebreak, item);
    }

    /// `offer`, for an item already counted in `offered` (one from another list).
    pub fn keep(&mut self, count: u64, tiebreak: u64, item: impl FnOnce() -> T) {
        if count == 0 || self.n == 0 {
            return;
        }
        let rank = (count, Reverse(tiebreak));
        if self.heap.len() >= self.n {
            match self.heap.peek() {
                Some(Reverse(worst)) if worst.rank < rank => {
                    self.heap.pop();
                }
                _ => return,
            }
        }
        self.heap.push(Reverse(Ranked { rank, item: item() }));
    }

    pub fn merge(&mut self, other: TopN<T>) {
        self.offered += other.offered;
        for Reverse(r) in other.heap {
            let Ranked {
                rank: (count, Reverse(tb)),
                item,
            } = r;
            self.keep(count, tb, || item);
        }
    }

    /// The items with their counts and tiebreaks, in no order.
    pub fn into_ranked(self) -> Vec<(u64, u64, T)> {
        self.heap
            .into_iter()
            .map(|Reverse(r)| (r.rank.0, r.rank.1 .0, r.item))
            .collect()
    }

    /// The same, borrowed.
    pub fn ranked(&self) -> impl Iterator<Item = (u64, u64, &T)> {
        self.heap
            .iter()
            .map(|Reverse(r)| (r.rank.0, r.rank.1 .0, &r.item))
    }

    /// The items, highest count first (ties: lower tiebreak first).
    pub fn into_sorted(self) -> Vec<(u64, T)> {
        let mut v: Vec<Ranked<T>> = self.heap.into_iter().map(|Reverse(r)| r).collect();
        v.sort_by_key(|r| Reverse(r.rank));
        v.into_iter().map(|r| (r.rank.0, r.item)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_highest_with_stable_ties() {
        let mut a = TopN::new(3);
        let mut b = TopN::new(3);
        for (count, ino) in [(5, 1), (1, 2), (9, 3), (5, 4), (0, 5)] {
            a.offer(count, ino, || ino);
        }
        for (count, ino) in [(5, 0), (2, 6)] {
            b.offer(count, ino, || ino);
        }
        a.merge(b);
        assert_eq!(a.offered, 6, "every item with a count, kept or not");
        assert_eq!(a.into_sorted(), vec![(9, 3), (5, 0), (5, 1)]);
        let mut none = TopN::new(0);
        none.offer(7, 1, || 1);
        assert!(none.into_sorted().is_empty());
    }

    #[test]
    fn counts_merge_and_names() {
        let mut a = Counts {
            files: 3,
            symlinks: 1,
            other: 1,
            allocated_bytes: 10,
            ..Counts::default()
        };
        a.merge(&Counts {
            files: 1,
            dirs: 2,
            allocated_bytes: 5,
            ..Counts::default()
        });
        assert_eq!(
            (a.files, a.dirs, a.allocated_bytes, a.names()),
            (4, 2, 15, 6)
        );
    }
}
