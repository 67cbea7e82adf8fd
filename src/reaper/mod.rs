//! The reaper: frees what is in a trash, oldest entry first, paced as the `reclaim rm` that
//! hid it asked, and removes each entry when its data is gone. One reaper per trash (an
//! exclusive `flock` on `<trash>/lock`: `reclaim reap` waits for the one at work, the others
//! leave the trash to it); a killed reaper's work is finished by the next one (a claimed entry
//! is `reaping`). It works only inside the trash, through dirfds, never
//! follows a symlink, and runs with the trash owner's authority: root's reaper frees another
//! user's trash in a child that is that user (`asuser`), so it removes exactly what the user
//! could. Every file of a trash is hostile input: a damaged entry is reported and skipped,
//! never waited on; an entry that cannot be fully freed is recorded (`failed.json`) and retried
//! with back-off. While it only waits for grace windows it holds nothing open. Each freed
//! entry and each failure is logged where `--log` says (`crate::sys::logging`); what it does
//! meanwhile goes to its caller as `Progress`, and it never prints (`cmd::reap` reports).
//!
//! Its modules, by job:
//! - `options`: how a run goes (`ReapOptions`, `Until`, `Locked`).
//! - `lock`: a trash's lock, its handover from `rm --background`, and its holder.
//! - `pass`: one pass over a trash held (every due entry in turn), and over each trash found.
//! - `entry`: reaping one entry: checked, claimed, freed, torn down, or its failure recorded.
//! - `wait`: the wait loops: grace windows waited out, another reaper waited for.
//! - `records`: the log records of freed, failed, backed-off and damaged entries.
//! - `summary`: what a run did (`ReapSummary`) and tells meanwhile (`Progress`).
//! - `child`: a pass in a child as the trash's owner, its command line built once.
//! - `failure`: back-off of entries that could not be freed (`failed.json`).
//! - `state`: the live state a reaper keeps in `reaper.json`.
//! - `pressure`: a held trash's grace entries freed early when its file system is short.
//! - `relief`: every user's grace entries, oldest first, for the `--watch` supervisor.
//! - `space`, `status`: what waits in the trashes, per file system against its space.
//! - `spawn`, `background`: the detached reaper's start, `rm --background` and `--wait`.
//! - `rm`: a removal request end to end.
//! - `watch`, `queue`, `service`, `metrics`: the `reap --watch` supervisor, its fair queue,
//!   its word to systemd and Prometheus.
//! - `browse`: `browse`'s actions on the entries it shows.

pub mod background;
pub mod browse;
mod child;
mod entry;
pub mod failure;
mod lock;
pub mod metrics;
mod options;
mod pass;
pub mod pressure;
pub mod queue;
mod records;
pub mod relief;
pub mod rm;
pub mod service;
pub mod space;
pub mod spawn;
pub mod state;
pub mod status;
mod summary;
mod wait;
pub mod watch;

pub use child::{relay_sink, ChildArgs};
pub use lock::{adopt_lock, holder, TrashLock};
pub use options::{Locked, ReapOptions, Until};
pub use pass::run;
pub use summary::{OnProgress, Progress, ReapSummary};
pub use wait::{reap_all, OpenError};
