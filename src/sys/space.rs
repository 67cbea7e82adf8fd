//! Free space of the file systems being worked on, from `fstatvfs`: what a removal really gave
//! back, without a `stat` per file. It counts every change on those file systems during the
//! run, so it measures the file system, not reclaim alone (clamped at zero).

use std::collections::HashMap;
use std::os::fd::AsFd;

/// Free bytes per file system (keyed by fsid), taken at one moment.
#[derive(Debug, Default, Clone)]
pub struct FreeSpace(HashMap<u64, u64>);

impl FreeSpace {
    /// Records the free bytes of `fd`'s file system (the first reading per file system wins).
    pub fn add(&mut self, fd: impl AsFd) {
        if let Ok(st) = rustix::fs::fstatvfs(fd) {
            self.0.entry(st.f_fsid).or_insert(st.f_bfree * st.f_frsize);
        }
    }

    /// A reading of `fd`'s file system alone.
    pub fn of(fd: impl AsFd) -> FreeSpace {
        let mut s = FreeSpace::default();
        s.add(fd);
        s
    }

    /// Bytes that became free since this reading, on the same file systems.
    pub fn freed_since(&self, later: &FreeSpace) -> u64 {
        self.0
            .iter()
            .filter_map(|(fsid, before)| later.0.get(fsid).map(|now| now.saturating_sub(*before)))
            .sum()
    }
}
