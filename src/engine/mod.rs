//! The removal engine and what runs on it: the parallel dirfd walk, removal, gentle shrinking,
//! pacing, file system profiles, scale-out under MPI, scan's walk and tallies, retention plans.
//! Reports through sinks and returns results; never prints, never sees clap.

pub mod glob;
pub mod gnu;
pub mod listing;
pub mod pace;
pub mod pack;
pub mod profile;
pub mod prune;
pub mod remove;
pub mod scan;
pub mod select;
pub mod shrink;
pub mod spread;
pub mod subvolume;
pub mod target;
pub mod walk;
pub mod workload;
