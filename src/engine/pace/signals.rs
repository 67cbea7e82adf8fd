//! The pacer's secondary signals, read from the kernel: I/O pressure (`/proc/pressure/io`, PSI)
//! and the backing block device's queue (`/sys/block/<dev>/stat`), found through partitions and
//! loop devices. They explain a window in the trace; the probe decides. Reads only.

use std::path::{Path, PathBuf};

/// A reading of the cumulative counters; deltas between two readings describe a window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reading {
    /// PSI `some` total stall time, microseconds (all tasks, whole system).
    pub psi_some_us: Option<u64>,
    /// PSI `full` total stall time, microseconds.
    pub psi_full_us: Option<u64>,
    /// Requests in flight on the backing device.
    pub in_flight: Option<u64>,
    /// Weighted milliseconds spent doing I/O (`time_in_queue`) on the backing device.
    pub queue_ms: Option<u64>,
}

/// Where to read from.
#[derive(Clone, Debug, Default)]
pub struct Signals {
    psi: Option<PathBuf>,
    /// `/sys/block/<name>/stat` of the whole disk that finally holds the data.
    disk_stat: Option<PathBuf>,
    /// The chain of block devices from the file system's to the backing disk (for the report).
    pub chain: Vec<String>,
}

impl Signals {
    /// Signals for a file system on device `dev` (`st_dev`) of mount `mnt_id`.
    pub fn for_dev(dev: u64, mnt_id: u64) -> Signals {
        let psi = Path::new("/proc/pressure/io");
        let chain = backing_chain(dev, mnt_id);
        Signals {
            psi: crate::sys::safeopen::kernel::exists(psi).then(|| psi.to_path_buf()),
            disk_stat: chain
                .last()
                .map(|n| Path::new("/sys/block").join(n).join("stat"))
                .filter(|p| crate::sys::safeopen::kernel::exists(p)),
            chain,
        }
    }

    pub fn read(&self) -> Reading {
        let mut r = Reading::default();
        if let Some(text) = self
            .psi
            .as_ref()
            .and_then(|p| crate::sys::safeopen::kernel::read_to_string(p).ok())
        {
            (r.psi_some_us, r.psi_full_us) = parse_psi(&text);
        }
        if let Some(text) = self
            .disk_stat
            .as_ref()
            .and_then(|p| crate::sys::safeopen::kernel::read_to_string(p).ok())
        {
            (r.in_flight, r.queue_ms) = parse_disk_stat(&text);
        }
        r
    }
}

/// `some ... total=N` and `full ... total=N` of a PSI file.
fn parse_psi(text: &str) -> (Option<u64>, Option<u64>) {
    let total = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.split_whitespace().find_map(|f| f.strip_prefix("total=")))
            .and_then(|v| v.parse().ok())
    };
    (total("some "), total("full "))
}

/// Fields 9 (in flight) and 11 (weighted time in queue, ms) of `/sys/block/*/stat`.
fn parse_disk_stat(text: &str) -> (Option<u64>, Option<u64>) {
    let f: Vec<u64> = text
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    (f.get(8).copied(), f.get(10).copied())
}

/// Block device names from `dev` down to the disk that stores its data: a partition resolves
/// to its disk, a loop device to the device of its backing file (recursively), a device-mapper
/// device to its first slave. Stops where `/sys` says nothing more (tmpfs, FUSE, NFS). A file
/// system whose `st_dev` is no block device (btrfs) starts at its mount's source device.
pub fn backing_chain(dev: u64, mnt_id: u64) -> Vec<String> {
    let mut chain = Vec::new();
    let Some(mut dev) = crate::sys::mounts::block_device(dev, mnt_id) else {
        return chain;
    };
    for _ in 0..8 {
        let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
        let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
        let Ok(real) = crate::sys::safeopen::kernel::canonical(&sys) else {
            break;
        };
        // A partition's directory sits inside its disk's directory.
        let disk = if crate::sys::safeopen::kernel::exists(real.join("partition")) {
            real.parent().map(Path::to_path_buf).unwrap_or(real)
        } else {
            real
        };
        let Some(name) = disk.file_name().and_then(|n| n.to_str()).map(String::from) else {
            break;
        };
        chain.push(name.clone());
        if let Ok(back) =
            crate::sys::safeopen::kernel::read_to_string(disk.join("loop/backing_file"))
        {
            // The backing file may itself be on btrfs: through its mount's device.
            match crate::sys::dirfd::stat_path(Path::new(back.trim_end()))
                .ok()
                .and_then(|f| crate::sys::mounts::block_device(f.ident.dev, f.mnt_id))
            {
                Some(d) => {
                    dev = d;
                    continue;
                }
                None => break,
            }
        }
        let slaves = disk.join("slaves");
        let slave = crate::sys::safeopen::kernel::list(&slaves)
            .ok()
            .and_then(|mut names| {
                names.sort();
                names.into_iter().next()
            })
            .and_then(|n| {
                crate::sys::safeopen::kernel::read_to_string(slaves.join(n).join("dev")).ok()
            });
        match slave
            .as_deref()
            .map(str::trim)
            .and_then(|s| s.split_once(':'))
        {
            Some((ma, mi)) => match (ma.parse(), mi.parse()) {
                (Ok(ma), Ok(mi)) => dev = rustix::fs::makedev(ma, mi),
                _ => break,
            },
            None => break,
        }
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_psi() {
        let text = "some avg10=1.50 avg60=0.20 avg300=0.05 total=123456\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=789\n";
        assert_eq!(parse_psi(text), (Some(123456), Some(789)));
        assert_eq!(parse_psi(""), (None, None));
    }

    #[test]
    fn parses_disk_stat() {
        let text = "  1  2  3  4  5  6  7  8  9  10  11  12 13 14 15 16 17";
        assert_eq!(parse_disk_stat(text), (Some(9), Some(11)));
    }

    #[test]
    fn chain_of_the_root_fs_reaches_a_disk() {
        let st = crate::sys::dirfd::stat_path(Path::new("/")).unwrap();
        let chain = backing_chain(st.ident.dev, st.mnt_id);
        // Containers may have no block device behind `/`; where there is one, it has a stat.
        if let Some(last) = chain.last() {
            assert!(Path::new("/sys/block").join(last).join("stat").exists());
        }
    }
}
