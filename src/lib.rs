//! reclaim: remove data from Linux file systems fast, gently and safely.
//!
//! The layers, top to bottom; each imports only the ones below it (DESIGN.md §13,
//! `tests/tests/layers.rs` holds the code to it):
//! `cli` (flags, config, units) → `cmd` (one file per subcommand, GNU mode: the only code that
//! prints or picks an exit code) → `ui` (progress, summaries, tables) → `reaper` (the trash's
//! lifecycle) → `engine` (walk, remove, shrink, pace, profile, spread, scan) → `trash` (the
//! on-disk format) → `sys` (dirfd, mounts, locks, signals, errors, logging, quoting).

pub mod cli;
pub mod cmd;
pub mod engine;
pub mod reaper;
pub mod sys;
pub mod trash;
pub mod ui;
