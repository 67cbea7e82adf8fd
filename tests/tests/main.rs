//! Integration tests of the `reclaim` binary, one test per promise of its contract.
//!
//! Every test works in its own scratch directory, made by `util::scratch!()` and named after
//! the test (see `util::Scratch`), which refuses to build or remove anything outside itself.
//! Every file system a test mounts is a `util::Volume`, undone even when the test panics. A
//! test that cannot run here (not root, a tool missing) ends with `util::skip!`/`or_skip!`/
//! `require_root!`, which say so and count it: the run ends with the list of skipped tests, or
//! with "no test skipped itself" (skips.rs).
//!
//! The only tests that name paths outside a scratch directory are the refusals of `/`, and
//! those run in a private mount namespace in which everything but the scratch directory is
//! read-only.

mod adversary;
mod browse;
mod btrfs;
mod concurrency;
mod crash;
mod durations;
mod gentle;
mod gnu_rm;
mod golden;
mod layers;
mod mpi;
mod netfs;
mod pack;
mod pressure;
mod props;
mod prune;
mod prune_batch;
mod races;
mod readme;
mod reap;
mod reap_log;
mod rm_flags;
mod rm_gnu;
mod safety;
mod said_once;
mod scale;
mod scan;
mod select;
mod skips;
mod soak;
mod spinning;
mod start;
mod trash;
mod trash_edges;
mod tree_pacing;
mod tty;
mod util;
