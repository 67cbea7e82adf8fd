//! reclaim: remove data from Linux file systems fast, gently and safely.
//!
//! The layers, top to bottom; each imports only the ones below it (docs/ARCHITECTURE.md;
//! `tests/tests/layers.rs` holds the code to it): `cli` (flags, config, units: plain options
//! for the commands) → `cmd` (one file per subcommand and GNU `rm` mode: the only code that
//! prints or picks an exit code) → `ui` (progress, summaries, tables) → `reaper` (the trash's
//! lifecycle) → `engine` (walk, remove, shrink, pace, profile, spread, scan, prune) → `trash`
//! (the on-disk format) → `sys` (dirfd, mounts, locks, signals, errors, logging, quoting).
//!
//! Public is only what the binary (`main.rs`), the examples and the tests use.

mod cli;
mod cmd;
mod engine;
mod reaper;
mod sys;
mod trash;
mod ui;

// The binary.
pub use cli::{parse, Error};
pub use cmd::exit::Exit;
pub use cmd::gnu::{invoked_as_rm, main as rm_main};
pub use cmd::{run, Invocation};
pub use sys::interrupt::default_sigpipe;
pub use sys::quote::utf8_locale;
pub use sys::startup;

// The examples (`mkworkload`, `floor`) and the integration tests.
pub use cli::args::WorkloadArgs;
pub use engine::workload;
pub use sys::dirfd::{open_dir_at, open_dir_path};
