//! `reclaim browse`'s full-screen view (ratatui on crossterm): the first screen at once, the
//! scan filling it in behind (`jobs`), keys as ncdu's (`app`), the screen drawn from the state
//! (`draw`), help (`help`), and the terminal given back on every way out (`terminal`). It
//! starts actions only after a confirmation naming what and how much, and every name is
//! escaped before it reaches the terminal.

mod act;
pub mod app;
pub mod draw;
pub mod help;
pub mod jobs;
pub mod terminal;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use ratatui::Terminal;

use crate::engine::scan::import::Import;
use crate::engine::scan::tree::Tree;
use crate::engine::scan::walk::Start;
use crate::engine::scan::TreeOptions;
use crate::reaper::browse::Actor;
use app::{App, Quit};

/// What to browse, as the command set it up.
pub struct Session {
    pub tree: Arc<Tree>,
    pub source: Source,
    /// Acts on the files (none for an import: browsing only).
    pub actor: Option<Arc<Actor>>,
    /// How long deleted entries stay restorable.
    pub grace: Duration,
    /// Reads an age such as `30d` (`o`): the command line's own grammar.
    pub parse_age: fn(&str) -> Result<Duration, String>,
}

/// Where the tree comes from.
pub enum Source {
    /// A scan of the directory `start`.
    Scan { start: Start, opts: TreeOptions },
    /// An export read from `file`.
    Import { import: Import, file: PathBuf },
}

/// How a session ended.
pub struct Ended {
    /// The signal that ended it (Ctrl-C counts as SIGINT).
    pub signal: Option<i32>,
    /// Some action failed for some entry.
    pub failed: bool,
    /// What this session hid and is still in a trash: (entry ID, restorable until).
    pub pending: Vec<(String, Option<f64>)>,
    /// An action that was still running when the session ended: what it was.
    pub unfinished: Option<String>,
    /// An import that stopped early, and why.
    pub import_error: Option<String>,
}

/// Runs the view until the user quits or a signal ends it. The terminal is back as it was
/// when this returns (or panics).
pub fn run(s: Session) -> std::io::Result<Ended> {
    let guard = terminal::take()?;
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut app = App::new(s.tree.clone(), s.actor.clone(), s.grace, s.parse_age);
    match s.source {
        Source::Scan { start, opts } => {
            app.scan_opts = Some(opts.clone());
            app.scan = Some(jobs::scan(
                s.tree.clone(),
                start,
                crate::engine::scan::tree::ROOT,
                opts,
            ));
        }
        Source::Import { import, file } => {
            app.import = Some((file, import.made_by.clone()));
            app.scan = Some(jobs::import(import));
        }
    }
    if let Some(a) = &s.actor {
        app.watch = Some(jobs::watch(a.clone()));
    }
    let signal = event_loop(&mut term, &mut app)?;
    // An action still running is stopped at its next consistent point and waited for.
    let unfinished = app.job.take().map(|j| {
        crate::sys::interrupt::abandon();
        let what = j.what.clone();
        let _ = j.join();
        what
    });
    drop(term);
    drop(guard);
    let import_error = app.scan.as_ref().and_then(|sc| {
        sc.import_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    });
    Ok(Ended {
        signal,
        failed: app.failed,
        pending: s.actor.as_ref().map(|a| a.pending()).unwrap_or_default(),
        unfinished,
        import_error,
    })
}

/// Draws and reads keys until the end; returns the signal that ended it, if one did.
fn event_loop(
    term: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    app: &mut App,
) -> std::io::Result<Option<i32>> {
    let mut drawn: Option<(Instant, u64, u64)> = None;
    loop {
        if let Some(sig) = crate::sys::interrupt::requested() {
            return Ok(Some(sig));
        }
        app.poll_job();
        if app.poll_scan() {
            drawn = None;
        }
        // Redraw when something moved: the tree, the watch, or a quarter second passed while
        // a scan or an action runs (their counters).
        let generation = app.tree.generation();
        let looks = app
            .watch
            .as_ref()
            .map_or(0, |w| w.looks.load(std::sync::atomic::Ordering::Relaxed));
        let busy = app.job.is_some() || app.scanning();
        let due = match drawn {
            None => true,
            Some((at, g, l)) => {
                g != generation && at.elapsed() >= Duration::from_millis(100)
                    || l != looks
                    || busy && at.elapsed() >= Duration::from_millis(250)
                    || app.stale()
            }
        };
        if due {
            let unseen = app.dialog.unseen();
            // One frame at a time (synchronized output, DEC mode 2026): a terminal that knows
            // it shows each frame whole, never half drawn, over ssh too; others ignore it.
            ratatui::crossterm::queue!(
                term.backend_mut(),
                ratatui::crossterm::terminal::BeginSynchronizedUpdate
            )?;
            term.draw(|f| draw::draw(f, app))?;
            ratatui::crossterm::execute!(
                term.backend_mut(),
                ratatui::crossterm::terminal::EndSynchronizedUpdate
            )?;
            drawn = Some((Instant::now(), generation, looks));
            if unseen && !app.dialog.unseen() && discard_typeahead(term, app)? {
                drawn = None;
            }
        }
        // While an action runs, its end is noticed within a few ms (a deletion's "done" is
        // what the user waits for); otherwise keys are read as they come.
        let wait = if app.job.is_some() { 5 } else { 50 };
        if event::poll(Duration::from_millis(wait))? {
            match event::read()? {
                Event::Key(k) if k.kind == KeyEventKind::Press => {
                    app.key(k);
                    drawn = None;
                }
                Event::Resize(..) => {
                    term.autoresize()?;
                    drawn = None;
                }
                _ => {}
            }
        }
        match app.quit {
            Some(Quit::Asked) => {
                if app.job.is_some() && !app.quit_confirmed {
                    app.ask_quit();
                    continue;
                }
                return Ok(None);
            }
            Some(Quit::Interrupted) => return Ok(Some(libc::SIGINT)),
            None => {}
        }
    }
}

/// A question (or a note) just reached the screen: the keys typed before it, already waiting,
/// are dropped, so that a `y` typed ahead never answers a question the user has not read
/// (`dy`, or `jdy` typed faster than the screen follows, asks about the entry the `d` found
/// and waits for an answer). Ctrl-C still counts; whether the terminal was resized (a redraw
/// is due).
fn discard_typeahead(
    term: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    app: &mut App,
) -> std::io::Result<bool> {
    let mut resized = false;
    while event::poll(Duration::ZERO)? {
        match event::read()? {
            Event::Key(k)
                if k.modifiers.contains(event::KeyModifiers::CONTROL)
                    && k.code == event::KeyCode::Char('c') =>
            {
                app.key(k)
            }
            Event::Resize(..) => {
                term.autoresize()?;
                resized = true;
            }
            _ => {}
        }
    }
    Ok(resized)
}
