//! The subcommands, one file each, and GNU `rm` mode (`gnu/`): the only code that prints to the
//! user or chooses an exit code. Each takes the plain options `cli` made of the flags, runs the
//! library and reports what it returned.

pub mod bench;
pub mod browse;
pub mod completions;
pub mod exit;
pub mod gnu;
pub mod man;
pub mod pack;
pub mod prune;
pub mod reap;
pub mod restore;
pub mod rm;
pub mod scan;
pub mod status;

use crate::cmd::exit::Exit;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// A command to run, as the command line asked for it.
#[derive(Debug)]
pub enum Command {
    Rm(Box<rm::RmOptions>),
    Status {
        json: bool,
        brief: bool,
        count: bool,
        trash: Option<PathBuf>,
        /// The floor of free space to show (`--min-free`, else the configuration's).
        min_free: crate::sys::space::Floor,
    },
    Restore {
        entries: Vec<OsString>,
        json: bool,
        trash: Option<PathBuf>,
        to: Option<PathBuf>,
    },
    Reap(reap::ReapCommand),
    Prune(Box<prune::PruneOptions>),
    Scan(scan::ScanOptions),
    Browse(Box<browse::BrowseOptions>),
    Bench(bench::BenchOptions),
    Pack(Box<pack::PackOptions>),
    Unpack(pack::UnpackOptions),
    /// The completion script, made from the command-line definition.
    Completions(Vec<u8>),
    /// The man pages (file name, text), made from the command-line definition, for `dir`.
    Man {
        dir: PathBuf,
        pages: Vec<(String, Vec<u8>)>,
    },
}

/// A command, and what reading the configuration had to say (unreadable files skipped).
#[derive(Debug)]
pub struct Invocation {
    pub command: Command,
    pub warnings: Vec<String>,
}

impl Invocation {
    /// A reaper's work must not stop because whoever read its output went away.
    pub fn is_reaper(&self) -> bool {
        matches!(self.command, Command::Reap(_))
    }
}

/// Runs the command; returns the process's exit status.
pub fn run(inv: Invocation) -> ExitCode {
    // A HOME or XDG directory that is not the caller's own is not used (`sys::userdirs`):
    // said once.
    for line in crate::sys::userdirs::refused() {
        eprintln!("reclaim: {line}");
    }
    for w in &inv.warnings {
        eprintln!("reclaim: config: {w}");
    }
    match inv.command {
        Command::Rm(o) => rm::run(&o),
        Command::Status {
            json,
            brief,
            count,
            trash,
            min_free,
        } => status::run((json, brief, count), trash.as_deref(), min_free),
        Command::Restore {
            entries,
            json,
            trash,
            to,
        } => {
            if to.is_some() && entries.len() != 1 {
                eprintln!(
                    "reclaim restore: --to takes one entry\nTry 'reclaim restore --help' for more information."
                );
                return Exit::Usage.into();
            }
            restore::run(&entries, json, trash.as_deref(), to.as_deref())
        }
        Command::Reap(o) => reap::run(&o),
        Command::Prune(o) => prune::run(&o),
        Command::Scan(o) => scan::run(&o),
        Command::Browse(o) => browse::run(&o),
        Command::Bench(o) => bench::run(&o),
        Command::Pack(o) => pack::run(&o),
        Command::Unpack(o) => pack::run_unpack(&o),
        Command::Completions(script) => completions::run(&script),
        Command::Man { dir, pages } => man::run(&dir, &pages),
    }
}

/// Notes SIGINT, SIGTERM and (with `hangup`) SIGHUP, so long work stops at a consistent point;
/// says which could not be caught.
pub fn catch_signals(hangup: bool) {
    for e in crate::sys::interrupt::install(hangup) {
        eprintln!("reclaim: {e}");
    }
}

/// The exit status of a run stopped by signal `sig`: 128 + its number, as shells report it.
pub fn stopped_by(sig: i32) -> ExitCode {
    Exit::Signal(sig).into()
}
