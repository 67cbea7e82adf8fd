//! How a reaper run goes (`ReapOptions`): when it stops (`Until`), what it does with a trash
//! another reaper holds (`Locked`), the pacing, the entries it may take and where it logs. Only
//! the caller's choices: nothing here acts.

use crate::engine::remove::{self};
use crate::sys::logging::Sink;
use crate::trash::meta::EntryPacing;

/// When a reaper run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// The trash is empty but for entries that failed or are damaged: grace windows are waited
    /// out (holding nothing open meanwhile). Only a detached reaper waits so.
    Empty,
    /// One pass over what is due now: entries in a grace window, or whose last failure's
    /// back-off has not passed, stay.
    Once,
}

/// What a run does with a trash whose lock another reaper holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locked {
    /// Skips it and says so (`skipped_locked`): that reaper frees what is due, and lists the
    /// trash again before it leaves (a detached reaper, the service's `--once` passes).
    Skip,
    /// Waits for that reaper to finish, then makes its own pass (`reclaim reap`: everything
    /// that can be freed now is freed before it exits).
    Wait,
}

#[derive(Clone, Debug)]
pub struct ReapOptions {
    pub until: Until,
    pub locked: Locked,
    /// Pacing for every entry instead of each entry's own.
    pub pacing: Option<EntryPacing>,
    pub engine: remove::Settings,
    /// Only these entries (ids), in this order (`reclaim rm --wait`).
    pub only: Option<Vec<String>>,
    /// Where lines about freed and failed entries go.
    pub log: Sink,
    /// Try entries that failed before now, not after their back-off (`reclaim reap` was
    /// asked to free what it can now).
    pub retry_failed: bool,
    /// Free the entries now, also in their grace window (`reclaim reap --now`).
    pub now: bool,
    /// The free space to leave the others on each file system (`--min-free`): under it, or
    /// falling toward it, pacing yields and entries in their grace window are freed early.
    pub floor: crate::sys::space::Floor,
    /// Frees the held trash's entries in their grace window early when its file system is
    /// pressed (`pressure::relieve`). Not in the passes a parent runs (`--once`: the service's,
    /// root's `reap` for other users): the parent orders every user's entries, oldest first.
    pub relieve: bool,
    /// The file system was found short of space so (by the `reap --watch` supervisor, for a
    /// pass it asked for with `--now ID`): an entry whose grace window this cuts short is said
    /// and recorded as freed early (`pressure`).
    pub early: Option<crate::sys::space::Pressure>,
}
