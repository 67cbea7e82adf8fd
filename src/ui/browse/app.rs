//! The state of `reclaim browse`'s screen and what each key does to it: where the user is,
//! how entries are ordered and filtered, what is marked, the dialog open, the action running
//! and the deletions that `u` can take back. The action keys are `act.rs`'s.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::jobs::{Job, Scan, Watch};
use crate::engine::scan::tree::{flag, Info, Kind, Query, SortBy, Tree, ROOT};
use crate::engine::scan::TreeOptions;
use crate::reaper::browse::{Actor, Deletion};
use crate::sys::quote::visible;

/// What the bars column shows (`g` cycles, as ncdu's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Graph {
    Bar,
    Percent,
    Both,
    Neither,
}

/// What a confirmation does on `y`.
#[derive(Clone, Debug)]
pub enum Then {
    Start(ActAsk),
    /// Scan the mount point (or subvolume) entry, which was not entered.
    Enter(u32),
    /// Quit while an action runs (it stops at its next consistent point).
    Quit,
}

/// An action to start (kept as data until confirmed).
#[derive(Clone, Debug)]
pub enum ActAsk {
    Delete(Vec<u32>),
    Empty(u32),
    Remove(Vec<u32>),
    Pack(u32),
}

/// What is in front of the list.
pub enum Dialog {
    None,
    /// A question: its lines, and what `y` does (on exactly the entries `then` holds, the
    /// ones the lines name). `seen`: it has been on the screen (`Dialog::confirm`).
    Confirm {
        title: String,
        lines: Vec<String>,
        then: Then,
        seen: bool,
    },
    /// A line being typed: `/` (a name filter, applied as typed) or `o` (an age).
    Prompt {
        older: bool,
        input: String,
    },
    Help {
        scroll: u16,
    },
    /// The details of one entry (`i`).
    Details(u32),
    /// Lines to read (failures), dismissed by any key once `seen`.
    Note {
        title: String,
        lines: Vec<String>,
        seen: bool,
    },
}

impl Dialog {
    /// A question that no key answers before it has been on the screen: a `y` typed ahead
    /// (with the `d` that asks, or before a question that follows an action) never answers a
    /// question the user did not read.
    pub fn confirm(title: impl Into<String>, lines: Vec<String>, then: Then) -> Dialog {
        Dialog::Confirm {
            title: title.into(),
            lines,
            then,
            seen: false,
        }
    }

    /// Lines to read that no key typed before they were on the screen dismisses.
    pub fn note(title: impl Into<String>, lines: Vec<String>) -> Dialog {
        Dialog::Note {
            title: title.into(),
            lines,
            seen: false,
        }
    }

    /// Whether it waits to be drawn before a key may answer or dismiss it.
    pub fn unseen(&self) -> bool {
        matches!(
            self,
            Dialog::Confirm { seen: false, .. } | Dialog::Note { seen: false, .. }
        )
    }

    /// It is on the screen now (`draw`): keys read from now on answer it.
    pub fn drawn(&mut self) {
        if let Dialog::Confirm { seen, .. } | Dialog::Note { seen, .. } = self {
            *seen = true;
        }
    }
}

/// How the session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quit {
    /// `q`.
    Asked,
    /// Ctrl-C.
    Interrupted,
}

/// The screen's state.
pub struct App {
    pub tree: Arc<Tree>,
    pub actor: Option<Arc<Actor>>,
    /// Browsing an import (nothing can be done to the files): its file, and what wrote it.
    pub import: Option<(PathBuf, String)>,
    pub scan_opts: Option<TreeOptions>,
    pub parse_age: fn(&str) -> Result<Duration, String>,
    pub grace: Duration,
    /// The directory shown.
    pub dir: u32,
    /// Its entries as listed (visible, filtered, in order) and their largest sizes.
    pub rows: Vec<u32>,
    pub largest: (u64, u64),
    /// The entry under the cursor (kept when the order changes).
    pub selected: Option<u32>,
    pub cursor: usize,
    /// The first row shown.
    pub top: usize,
    /// Rows of the list area at the last draw.
    pub page: usize,
    pub query: Query,
    /// The `o` filter as typed (`30d`), for the title.
    pub older_text: Option<String>,
    pub apparent: bool,
    pub graph: Graph,
    pub marks: BTreeSet<u32>,
    pub dialog: Dialog,
    /// The last thing to say, and when it was said.
    pub message: Option<(String, Instant)>,
    pub undo: Vec<Deletion>,
    pub job: Option<Job>,
    pub scan: Option<Scan>,
    pub watch: Option<Watch>,
    pub quit: Option<Quit>,
    /// Quitting while an action runs was confirmed.
    pub quit_confirmed: bool,
    /// Some action failed for some entry (the exit status says so).
    pub failed: bool,
    /// When `rows` was listed, of which generation of the tree, for which directory and query.
    listed: Option<(Instant, u64, u32, Query)>,
    /// The directories entered, to come back to the entry that was selected.
    pub(super) trail: Vec<u32>,
}

impl App {
    pub fn new(
        tree: Arc<Tree>,
        actor: Option<Arc<Actor>>,
        grace: Duration,
        parse_age: fn(&str) -> Result<Duration, String>,
    ) -> App {
        App {
            tree,
            actor,
            import: None,
            scan_opts: None,
            parse_age,
            grace,
            dir: ROOT,
            rows: Vec::new(),
            largest: (0, 0),
            selected: None,
            cursor: 0,
            top: 0,
            page: 20,
            query: Query::default(),
            older_text: None,
            apparent: false,
            graph: Graph::Bar,
            marks: BTreeSet::new(),
            dialog: Dialog::None,
            message: None,
            undo: Vec::new(),
            job: None,
            scan: None,
            watch: None,
            quit: None,
            quit_confirmed: false,
            failed: false,
            listed: None,
            trail: Vec::new(),
        }
    }

    pub fn say(&mut self, text: impl Into<String>) {
        self.message = Some((text.into(), Instant::now()));
    }

    pub fn scanning(&mut self) -> bool {
        self.scan.as_mut().is_some_and(|s| s.running())
    }

    /// Lists the directory again the moment the scan ends (its totals are final then);
    /// whether it just ended.
    pub fn poll_scan(&mut self) -> bool {
        let ended = self
            .scan
            .as_mut()
            .is_some_and(|s| s.took.is_none() && !s.running());
        if ended {
            self.refresh(true);
        }
        ended
    }

    /// Whether the listing may no longer show the directory as it is: another directory or
    /// order, or a changed tree (then at most 4 times a second, once a second for big ones).
    pub fn stale(&self) -> bool {
        match &self.listed {
            None => true,
            Some((at, g, dir, q)) => {
                let every = if self.rows.len() > 50_000 {
                    Duration::from_secs(1)
                } else {
                    Duration::from_millis(250)
                };
                *dir != self.dir
                    || q.sort != self.query.sort
                    || q.descending != self.query.descending
                    || q.name != self.query.name
                    || q.older_than != self.query.older_than
                    || (*g != self.tree.generation() && at.elapsed() >= every)
            }
        }
    }

    /// Lists the directory again if it is stale (or `force`).
    pub fn refresh(&mut self, force: bool) {
        let generation = self.tree.generation();
        if !(force || self.stale()) {
            return;
        }
        self.rows = self.tree.list(self.dir, &self.query);
        self.largest = self.tree.largest(self.dir);
        self.listed = Some((Instant::now(), generation, self.dir, self.query.clone()));
        self.cursor = match self
            .selected
            .and_then(|s| self.rows.iter().position(|&r| r == s))
        {
            Some(i) => i,
            None => self.cursor.min(self.rows.len().saturating_sub(1)),
        };
        self.selected = self.rows.get(self.cursor).copied();
    }

    pub(super) fn move_to(&mut self, i: usize) {
        if self.rows.is_empty() {
            self.cursor = 0;
            self.selected = None;
            return;
        }
        self.cursor = i.min(self.rows.len() - 1);
        self.selected = Some(self.rows[self.cursor]);
    }

    /// Keeps the cursor's row on the screen of `height` rows.
    pub fn scroll(&mut self, height: usize) {
        self.page = height.max(1);
        if self.cursor < self.top {
            self.top = self.cursor;
        } else if self.cursor >= self.top + self.page {
            self.top = self.cursor + 1 - self.page;
        }
        self.top = self.top.min(self.rows.len().saturating_sub(1));
    }

    pub(super) fn current(&self) -> Option<Info> {
        self.selected.map(|s| self.tree.info(s))
    }

    /// One key.
    pub fn key(&mut self, k: KeyEvent) {
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            self.quit = Some(Quit::Interrupted);
            return;
        }
        // Typed before the question (or note) was on the screen: not an answer to it.
        if self.dialog.unseen() {
            return;
        }
        match std::mem::replace(&mut self.dialog, Dialog::None) {
            Dialog::None => self.browse_key(k),
            Dialog::Confirm {
                title,
                lines,
                then,
                seen,
            } => match k.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => self.confirmed(then),
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Char('q') => {
                    self.say("nothing done")
                }
                _ => {
                    self.dialog = Dialog::Confirm {
                        title,
                        lines,
                        then,
                        seen,
                    }
                }
            },
            Dialog::Prompt { older, input } => self.prompt_key(k, older, input),
            Dialog::Help { scroll } => match k.code {
                KeyCode::Down | KeyCode::Char('j') => {
                    self.dialog = Dialog::Help {
                        scroll: scroll.saturating_add(1),
                    }
                }
                KeyCode::Up | KeyCode::Char('k') => {
                    self.dialog = Dialog::Help {
                        scroll: scroll.saturating_sub(1),
                    }
                }
                _ => {}
            },
            Dialog::Details(_) | Dialog::Note { .. } => {}
        }
    }

    fn browse_key(&mut self, k: KeyEvent) {
        let shown = self.page.max(1);
        match k.code {
            KeyCode::Up | KeyCode::Char('k') => self.move_to(self.cursor.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => self.move_to(self.cursor + 1),
            KeyCode::PageUp => self.move_to(self.cursor.saturating_sub(shown)),
            KeyCode::PageDown => self.move_to(self.cursor + shown),
            KeyCode::Home => self.move_to(0),
            KeyCode::End => self.move_to(usize::MAX),
            KeyCode::Right | KeyCode::Enter | KeyCode::Char('l') => self.enter(),
            KeyCode::Left | KeyCode::Backspace | KeyCode::Char('h') | KeyCode::Char('<') => {
                self.up()
            }
            KeyCode::Char('s') => self.sort(if self.apparent {
                SortBy::Apparent
            } else {
                SortBy::Disk
            }),
            KeyCode::Char('C') => self.sort(SortBy::Items),
            KeyCode::Char('M') => self.sort(SortBy::Modified),
            KeyCode::Char('n') => self.sort(SortBy::Name),
            KeyCode::Char('a') => {
                self.apparent = !self.apparent;
                // A size order follows the size shown.
                if matches!(self.query.sort, SortBy::Disk | SortBy::Apparent) {
                    self.query.sort = if self.apparent {
                        SortBy::Apparent
                    } else {
                        SortBy::Disk
                    };
                }
                self.say(if self.apparent {
                    "sizes: apparent (st_size)"
                } else {
                    "sizes: disk usage (allocated blocks)"
                });
            }
            KeyCode::Char('g') => {
                self.graph = match self.graph {
                    Graph::Bar => Graph::Percent,
                    Graph::Percent => Graph::Both,
                    Graph::Both => Graph::Neither,
                    Graph::Neither => Graph::Bar,
                }
            }
            KeyCode::Char('i') => {
                if let Some(s) = self.selected {
                    self.dialog = Dialog::Details(s);
                }
            }
            KeyCode::Char('?') => self.dialog = Dialog::Help { scroll: 0 },
            KeyCode::Char('q') => self.quit = Some(Quit::Asked),
            KeyCode::Char(' ') => {
                if let Some(s) = self.selected {
                    if !self.marks.remove(&s) {
                        self.marks.insert(s);
                    }
                    self.move_to(self.cursor + 1);
                }
            }
            KeyCode::Esc => {
                if !self.marks.is_empty() {
                    self.marks.clear();
                    self.say("marks cleared");
                } else if self.query.name.is_some() || self.query.older_than.is_some() {
                    self.query.name = None;
                    self.query.older_than = None;
                    self.older_text = None;
                    self.say("filters cleared");
                }
            }
            KeyCode::Char('/') => {
                let input = self
                    .query
                    .name
                    .as_ref()
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .unwrap_or_default();
                self.dialog = Dialog::Prompt {
                    older: false,
                    input,
                };
            }
            KeyCode::Char('o') => {
                let input = self.older_text.clone().unwrap_or_default();
                self.dialog = Dialog::Prompt { older: true, input };
            }
            KeyCode::Char('d') => self.ask_delete(),
            KeyCode::Char('e') => self.ask_empty(),
            KeyCode::Char('p') => self.ask_pack(),
            KeyCode::Char('u') => self.undo_last(),
            KeyCode::Char('r') => self.rescan(self.dir),
            _ => {}
        }
    }

    fn sort(&mut self, by: SortBy) {
        if self.query.sort == by {
            self.query.descending = !self.query.descending;
        } else {
            self.query.sort = by;
            // Names A to Z; sizes, counts and times largest (newest) first.
            self.query.descending = by != SortBy::Name;
        }
    }

    fn prompt_key(&mut self, k: KeyEvent, older: bool, mut input: String) {
        match k.code {
            KeyCode::Esc => {
                if !older {
                    self.query.name = None;
                }
                return;
            }
            KeyCode::Enter => {
                if older {
                    self.set_older(&input);
                }
                return;
            }
            KeyCode::Backspace => {
                input.pop();
            }
            KeyCode::Char(c) if !c.is_control() && input.len() < 200 => input.push(c),
            _ => {}
        }
        if !older {
            self.query.name = (!input.is_empty()).then(|| input.as_bytes().to_vec());
        }
        self.dialog = Dialog::Prompt { older, input };
    }

    fn set_older(&mut self, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            self.query.older_than = None;
            self.older_text = None;
            return;
        }
        match (self.parse_age)(text) {
            Ok(age) => {
                let now = crate::sys::format::now_unix() as i64;
                self.query.older_than = Some(now - age.as_secs() as i64);
                self.older_text = Some(text.to_string());
            }
            Err(e) => self.say(format!("o: {e}")),
        }
    }

    fn enter(&mut self) {
        let Some(e) = self.current() else { return };
        if e.kind != Kind::Dir {
            return;
        }
        // Not entered yet (then not counted either): asked first.
        if (e.has(flag::MOUNT) || e.has(flag::SUBVOLUME)) && e.has(flag::UNCOUNTED) {
            if self.actor.is_none() {
                self.say("browsing an import: another file system it did not enter");
                return;
            }
            let what = if e.has(flag::SUBVOLUME) {
                "a btrfs subvolume"
            } else {
                "another file system (a mount point)"
            };
            self.dialog = Dialog::confirm(
                "Enter another file system?",
                vec![
                    format!("{} is {what}; it was not entered.", self.shown(e.index)),
                    "Scan it now? Its sizes are then counted in the totals above it.".into(),
                ],
                Then::Enter(e.index),
            );
            return;
        }
        self.trail.push(e.index);
        self.dir = e.index;
        self.cursor = 0;
        self.top = 0;
        self.selected = None;
        self.refresh(true);
    }

    fn up(&mut self) {
        if self.dir == ROOT {
            return;
        }
        let from = self.dir;
        self.dir = self.tree.info(from).parent;
        self.trail.pop();
        self.selected = Some(from);
        self.top = 0;
        self.refresh(true);
    }

    /// The path of entry `i`, as a screen shows it.
    pub fn shown(&self, i: u32) -> String {
        use std::os::unix::ffi::OsStrExt;
        visible(self.tree.path(i).as_os_str().as_bytes())
    }
}

/// The tree's entry kinds and marks, as the screen names them (help and details).
pub fn flag_names(i: &Info) -> Vec<&'static str> {
    let mut v = Vec::new();
    for (f, name) in [
        (flag::UNREADABLE, "could not be read"),
        (flag::ERROR, "read only in part"),
        (flag::ERROR_BELOW, "something below could not be read"),
        (flag::MOUNT, "another file system, not entered"),
        (flag::SUBVOLUME, "a btrfs subvolume, not entered"),
        (
            flag::HARDLINK,
            "has other hard links (its size counted once)",
        ),
        (flag::CANDIDATE, "a pack candidate (many old small files)"),
        (flag::EXCLUDED, "excluded by the scan that wrote the import"),
    ] {
        if i.has(f) {
            v.push(name);
        }
    }
    if i.kind == Kind::Dir && !i.has(flag::DONE) {
        v.push("still being scanned");
    }
    v
}

/// The one-character mark of an entry (ncdu's where it has one).
pub fn mark_of(i: &Info) -> char {
    if i.has(flag::UNREADABLE) || i.has(flag::ERROR) {
        '!'
    } else if i.has(flag::ERROR_BELOW) {
        '.'
    } else if i.has(flag::MOUNT) {
        '>'
    } else if i.has(flag::SUBVOLUME) {
        '^'
    } else if i.has(flag::EXCLUDED) {
        '<'
    } else if matches!(i.kind, Kind::Symlink | Kind::Other) {
        '@'
    } else if i.has(flag::HARDLINK) {
        'H'
    } else if i.has(flag::CANDIDATE) {
        'P'
    } else if i.kind == Kind::Dir && i.has(flag::DONE) && i.items == 0 {
        'e'
    } else {
        ' '
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scan::tree::Batch;
    use crate::sys::dirfd::{Facts, Ident};
    use rustix::fs::FileType;
    use std::path::Path;

    fn facts(file_type: FileType, ino: u64, allocated: u64) -> Facts {
        Facts {
            ident: Ident { dev: 7, ino },
            mnt_id: 1,
            file_type,
            nlink: 1,
            allocated,
            size: allocated,
            mtime: 1_577_934_240,
            atime: 1_577_934_240,
        }
    }

    /// Adds the file `name` of `allocated` bytes under `dir`; its index.
    fn file(tree: &Tree, dir: u32, name: &[u8], ino: u64, allocated: u64) -> u32 {
        let mut b = Batch::default();
        b.push(name, &facts(FileType::RegularFile, ino, allocated), true, 0);
        tree.add(dir, &b);
        *tree
            .list(dir, &Query::default())
            .iter()
            .find(|&&i| tree.info(i).name == name)
            .expect("just added")
    }

    fn key(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    fn no_age(_: &str) -> Result<Duration, String> {
        Err("no ages here".into())
    }

    /// `top` as the scan fills it in: `later` (16 KiB) and `stays` (4 KiB) first, so the
    /// view selects `later`; then `victim` grows above it. The app, its entries.
    fn filling_in() -> (App, [u32; 3]) {
        let tree = Arc::new(Tree::new(
            Path::new("top"),
            Some(&facts(FileType::Directory, 1, 4096)),
        ));
        let later = tree.dir(ROOT, b"later", &facts(FileType::Directory, 2, 4096));
        file(&tree, later, b"f", 3, 12_288);
        let stays = file(&tree, ROOT, b"stays", 4, 4096);
        let mut app = App::new(tree.clone(), None, Duration::from_secs(3600), no_age);
        app.refresh(true);
        assert_eq!(app.rows, [later, stays]);
        assert_eq!(app.selected, Some(later));
        let victim = tree.dir(ROOT, b"victim", &facts(FileType::Directory, 5, 4096));
        file(&tree, victim, b"big", 6, 30 << 20);
        app.refresh(true);
        (app, [victim, later, stays])
    }

    #[test]
    fn the_selection_follows_its_entry_as_the_scan_reorders_the_rows() {
        let (app, [victim, later, stays]) = filling_in();
        assert_eq!(app.rows, [victim, later, stays]);
        assert_eq!((app.cursor, app.selected), (1, Some(later)));
    }

    #[test]
    fn a_y_typed_ahead_never_answers_a_question_that_was_not_on_the_screen() {
        let (mut app, [_, _, stays]) = filling_in();
        // Typed faster than the screen follows, by one who counted rows from the top: the
        // `j` moves to `stays`, the `d` asks about it, and the `y` came before the question
        // was drawn: it is no answer (it would have hidden `stays`, never seen selected).
        for c in "jdy".chars() {
            app.key(key(c));
        }
        let Dialog::Confirm {
            title,
            lines,
            then: Then::Start(ActAsk::Delete(nodes)),
            seen: false,
        } = &app.dialog
        else {
            panic!("the question was answered before it was on the screen");
        };
        // It names exactly the entries `y` acts on, captured when `d` was pressed.
        assert_eq!(title, "Delete?");
        assert_eq!(nodes, &[stays]);
        assert!(lines.iter().any(|l| l.contains("top/stays")), "{lines:?}");
        assert!(!lines.iter().any(|l| l.contains("later")), "{lines:?}");
        // Drawn: now `n` answers it, and nothing is done.
        app.dialog.drawn();
        app.key(key('n'));
        assert!(matches!(app.dialog, Dialog::None));
        assert_eq!(
            app.message.as_ref().map(|m| m.0.as_str()),
            Some("nothing done")
        );
        assert!(app.job.is_none());
    }

    #[test]
    fn a_note_is_not_dismissed_by_a_key_typed_before_it_was_shown() {
        let (mut app, _) = filling_in();
        app.dialog = Dialog::note("Not done:", vec!["top/later: gone".into()]);
        app.key(key('x'));
        assert!(matches!(app.dialog, Dialog::Note { seen: false, .. }));
        app.dialog.drawn();
        app.key(key('x'));
        assert!(matches!(app.dialog, Dialog::None));
    }

    #[test]
    fn ctrl_c_is_heard_while_a_question_waits_to_be_shown() {
        let (mut app, _) = filling_in();
        app.key(key('d'));
        assert!(app.dialog.unseen());
        app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert_eq!(app.quit, Some(Quit::Interrupted));
    }
}
