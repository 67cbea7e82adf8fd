//! reclaim: remove data from Linux file systems fast, gently and safely.

pub mod background;
pub mod bench;
pub mod cli;
pub mod config;
pub mod dirfd;
pub mod error;
pub mod fdcache;
pub mod generate;
pub mod limits;
pub mod locks;
pub mod mounts;
pub mod pace;
pub mod pool;
pub mod prune;
pub mod reaper;
pub mod remove;
pub mod report;
pub mod rm;
pub mod scan;
pub mod shrink;
pub mod space;
pub mod status;
pub mod target;
pub mod trash;
pub mod units;
pub mod workload;
