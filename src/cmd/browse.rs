//! `reclaim browse`: opens PATH (or reads an export), hands the full-screen view
//! (`ui::browse`) the tree, the scan and the actions (`reaper::browse`), and once the terminal
//! is given back says what is left: deletions still restorable, an action stopped, an import
//! cut short. Exit status: 0, 1 if an action failed for some entry (or PATH could not be
//! read), 2 usage error, 128+N stopped by signal N (Ctrl-C: 130).

use crate::cmd::exit::Exit;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::scan::import::Import;
use crate::engine::scan::tree::Tree;
use crate::engine::scan::walk::{ScanError, Start};
use crate::reaper::browse::Actor;
use crate::sys::format::plural;
use crate::sys::quote::quote;
use crate::trash::meta::EntryPacing;
use crate::ui::browse::{Session, Source};

/// What `reclaim browse` was asked.
#[derive(Clone, Debug)]
pub struct BrowseOptions {
    pub path: OsString,
    pub import: Option<PathBuf>,
    pub grace: Duration,
    /// The free space deletions must leave the others (the configuration's `min_free`).
    pub floor: crate::sys::space::Floor,
    pub pace: EntryPacing,
    pub scan: crate::engine::scan::TreeOptions,
    /// Reads an age typed at `o`: the command line's duration grammar.
    pub parse_age: fn(&str) -> Result<Duration, String>,
}

/// `reclaim browse`.
pub fn run(o: &BrowseOptions) -> ExitCode {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "reclaim browse: standard input and output must be a terminal (for a report \
             without one: reclaim scan)"
        );
        return Exit::Usage.into();
    }
    super::catch_signals(true);
    let session = match &o.import {
        Some(file) => match Import::open(file) {
            Ok(import) => Session {
                tree: import.tree().clone(),
                source: Source::Import {
                    import,
                    file: file.clone(),
                },
                actor: None,
                grace: o.grace,
                parse_age: o.parse_age,
            },
            Err(e) => {
                eprintln!("reclaim browse: {e}");
                return Exit::Failed.into();
            }
        },
        None => match open(o) {
            Ok(s) => s,
            Err(line) => {
                eprintln!("reclaim browse: {line}");
                return Exit::Failed.into();
            }
        },
    };
    let ended = match crate::ui::browse::run(session) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("reclaim browse: the terminal: {e}");
            return Exit::Failed.into();
        }
    };
    let mut code = Exit::failed_if(ended.failed);
    if let Some(what) = &ended.unfinished {
        say(&format!(
            "stopped while {what}: what was done stays done, the rest is where it was"
        ));
    }
    if !ended.pending.is_empty() {
        let until = ended
            .pending
            .iter()
            .filter_map(|p| p.1)
            .reduce(f64::max)
            .map(|u| format!(" until {}", crate::sys::format::local_time(u)))
            .unwrap_or_default();
        say(&format!(
            "{} deleted here wait in the trash, restorable{until} (`reclaim status` lists \
             them, `reclaim restore ID` puts one back); the reaper frees them after that",
            plural(ended.pending.len() as u64, "entry", "entries")
        ));
    }
    if let Some(e) = &ended.import_error {
        say(&e.to_string());
        code = Exit::Failed;
    }
    match ended.signal {
        Some(sig) => super::stopped_by(sig),
        None => code.into(),
    }
}

/// A line on stderr after the view: the terminal may be gone (SIGHUP), which is no reason to
/// panic.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "reclaim browse: {line}");
}

/// Why PATH cannot be browsed.
#[derive(Debug, thiserror::Error)]
enum CannotBrowse {
    #[error("{0}")]
    Scan(ScanError),
    #[error("cannot browse {}: not a directory", quote(.0))]
    NotADirectory(PathBuf),
    /// The directory's fd could not be had twice (the scan's and the actions').
    #[error("cannot browse {}: {error}", quote(.path))]
    Dup {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Opens PATH for a scan: the tree's root, the actions' root fd, the walk's start.
fn open(o: &BrowseOptions) -> Result<Session, CannotBrowse> {
    let start = crate::engine::scan::resolve(&o.path).map_err(CannotBrowse::Scan)?;
    let Start::Dir { display, fd, stat } = start else {
        return Err(CannotBrowse::NotADirectory(PathBuf::from(&o.path)));
    };
    let tree = Arc::new(Tree::new(&display, Some(&stat)));
    let mine = fd.try_clone().map_err(|error| CannotBrowse::Dup {
        path: display.clone(),
        error,
    })?;
    let actor = Arc::new(Actor::new(
        mine,
        tree.clone(),
        o.grace,
        o.floor,
        o.pace.clone(),
    ));
    Ok(Session {
        tree,
        source: Source::Scan {
            start: Start::Dir { display, fd, stat },
            opts: o.scan.clone(),
        },
        actor: Some(actor),
        grace: o.grace,
        parse_age: o.parse_age,
    })
}
