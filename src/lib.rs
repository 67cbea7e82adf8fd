//! reclaim: remove data from Linux file systems fast, gently and safely.

pub mod workload;
