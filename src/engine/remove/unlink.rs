//! The one place the removal engine unlinks a name: a non-directory or an empty directory, by
//! name in its parent's fd, paced by the removal's unlink rate and timed for the concurrency
//! controller where the caller asks. Used by the parallel walk (`remover.rs`), a selection
//! (`selected.rs`), listed names (`listed.rs`) and GNU mode's walk (`engine/gnu/`). It never
//! follows a symlink (`unlinkat` removes the link) and never builds a path; the removal itself
//! is `sys::safeopen`'s (one name in its directory; an operand as the user typed it).

use std::ffi::CStr;
use std::os::fd::AsFd;
use std::time::Instant;

use rustix::fs::AtFlags;
use rustix::io::Errno;

use super::Settings;
use crate::engine::pace::concurrency::Meter;
use crate::engine::pace::throttle::Throttle;
use crate::sys::safeopen;

/// What an unlink removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Anything but a directory (a symlink is removed as the link it is).
    NonDir,
    /// An empty directory (`rmdir`).
    EmptyDir,
    /// What the user named, by the path as typed relative to the directory (GNU mode's operand
    /// from the current directory, a removal's root): a directory (`dir`) or not.
    Operand { dir: bool },
}

/// How one unlink is paced and measured: the removal's unlink rate (`--iops`, the governor)
/// waited for before it, its time recorded for the concurrency controller after it.
#[derive(Clone, Copy, Default)]
pub struct Paced<'a> {
    pub throttle: Option<&'a Throttle>,
    pub meter: Option<&'a Meter>,
}

impl<'a> Paced<'a> {
    /// Neither paced nor measured.
    pub const NONE: Paced<'static> = Paced {
        throttle: None,
        meter: None,
    };

    /// Paced by `opts`' throttle and measured by its concurrency's meter.
    pub fn by(opts: &'a Settings) -> Self {
        Paced {
            throttle: opts.throttle.as_deref(),
            meter: Paced::measured(opts).meter,
        }
    }

    /// Measured by `opts`' concurrency's meter only (an `rmdir`: the rate counts unlinks).
    pub fn measured(opts: &'a Settings) -> Self {
        Paced {
            throttle: None,
            meter: opts.concurrency.as_deref().map(|c| c.meter()),
        }
    }
}

/// Unlinks `name` in `dir` as `entry`.
pub fn unlink(dir: impl AsFd, name: &CStr, entry: Entry, paced: Paced<'_>) -> Result<(), Errno> {
    if let Some(t) = paced.throttle {
        t.acquire();
    }
    let t0 = Instant::now();
    let unlinked = match entry {
        Entry::NonDir => safeopen::unlink_at(dir, name),
        Entry::EmptyDir => safeopen::rmdir_at(dir, name),
        Entry::Operand { dir: false } => safeopen::unlink_operand(dir, name, AtFlags::empty()),
        Entry::Operand { dir: true } => safeopen::unlink_operand(dir, name, AtFlags::REMOVEDIR),
    };
    if let Some(m) = paced.meter {
        m.record(t0.elapsed());
    }
    unlinked
}
