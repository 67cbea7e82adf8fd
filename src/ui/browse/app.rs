//! The state of `reclaim browse`'s screen and what each key does to it: where the user is,
//! how entries are ordered and filtered, what is marked, the dialog open, the action running
//! and the deletions that `u` can take back. Actions on files are only started from here
//! (after the confirmation that names what and how much); they run in `jobs`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::jobs::{self, Act, Done, Job, Scan, Watch};
use crate::engine::scan::tree::{flag, Info, Kind, Query, SortBy, Tree, ROOT};
use crate::engine::scan::TreeOptions;
use crate::reaper::browse::{Actor, Deletion, Report};
use crate::sys::format::{bytes, group, plural};
use crate::sys::quote::visible;

/// Entries named in a confirmation (the rest are counted).
const NAMED: usize = 6;

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
    /// A question: its lines, and what `y` does.
    Confirm {
        title: String,
        lines: Vec<String>,
        then: Then,
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
    /// Lines to read (failures), dismissed by any key.
    Note {
        title: String,
        lines: Vec<String>,
    },
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
    trail: Vec<u32>,
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

    fn move_to(&mut self, i: usize) {
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

    fn current(&self) -> Option<Info> {
        self.selected.map(|s| self.tree.info(s))
    }

    /// One key.
    pub fn key(&mut self, k: KeyEvent) {
        if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
            self.quit = Some(Quit::Interrupted);
            return;
        }
        match std::mem::replace(&mut self.dialog, Dialog::None) {
            Dialog::None => self.browse_key(k),
            Dialog::Confirm { title, lines, then } => match k.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => self.confirmed(then),
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc | KeyCode::Char('q') => {
                    self.say("nothing done")
                }
                _ => self.dialog = Dialog::Confirm { title, lines, then },
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
            self.dialog = Dialog::Confirm {
                title: "Enter another file system?".into(),
                lines: vec![
                    format!("{} is {what}; it was not entered.", self.shown(e.index)),
                    "Scan it now? Its sizes are then counted in the totals above it.".into(),
                ],
                then: Then::Enter(e.index),
            };
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

    /// The entries `d` acts on: the marked ones (still shown), else the selected one.
    fn targets(&self) -> Vec<Info> {
        if self.marks.is_empty() {
            self.current().into_iter().collect()
        } else {
            let marked: Vec<u32> = self.marks.iter().copied().collect();
            self.tree.infos(&marked)
        }
    }

    /// Why nothing can be done to the files now, if so.
    fn cannot_act(&mut self, key: char) -> bool {
        if let Some((f, _)) = &self.import {
            let f = visible(f.as_os_str().as_encoded_bytes());
            self.say(format!(
                "{key}: browsing an import ({f}): nothing here can change the files"
            ));
            return true;
        }
        if let Some(j) = &self.job {
            let what = j.what.clone();
            self.say(format!("{key}: busy: {what}"));
            return true;
        }
        false
    }

    fn ask_delete(&mut self) {
        if self.cannot_act('d') {
            return;
        }
        let mut targets = self.targets();
        // Another file system's mount point is never deleted from here (that would empty it).
        let mounts = targets.iter().filter(|i| i.has(flag::MOUNT)).count();
        targets.retain(|i| !i.has(flag::MOUNT));
        if mounts > 0 {
            self.say(format!(
                "d: {} another file system's mount point (unmount it first): left out",
                if mounts == 1 {
                    "one is".to_string()
                } else {
                    format!("{mounts} are")
                }
            ));
        }
        if targets.is_empty() {
            return;
        }
        let disk: u64 = targets.iter().map(|i| i.disk).sum();
        let items: u64 = targets.iter().map(|i| i.items + 1).sum();
        let partial = targets
            .iter()
            .any(|i| i.kind == Kind::Dir && !i.has(flag::DONE));
        let mut lines = vec![format!(
            "{} ({}{}, {}):",
            plural(targets.len() as u64, "entry", "entries"),
            bytes(disk),
            if partial {
                " so far: still being scanned"
            } else {
                ""
            },
            plural(items, "item", "items")
        )];
        lines.extend(self.named(&targets));
        lines.push(String::new());
        lines.push(format!(
            "They go to the trash at once and stay restorable with u for {};",
            crate::sys::format::duration_rounded(self.grace.as_secs_f64())
        ));
        lines.push("then the reaper frees the space, gently, in the background.".into());
        self.dialog = Dialog::Confirm {
            title: "Delete?".into(),
            lines,
            then: Then::Start(ActAsk::Delete(targets.iter().map(|i| i.index).collect())),
        };
    }

    fn named(&self, list: &[Info]) -> Vec<String> {
        let mut out: Vec<String> = list
            .iter()
            .take(NAMED)
            .map(|i| format!("  {}  ({})", self.shown(i.index), bytes(i.disk)))
            .collect();
        if list.len() > NAMED {
            out.push(format!("  and {} more", group((list.len() - NAMED) as u64)));
        }
        out
    }

    fn ask_empty(&mut self) {
        if self.cannot_act('e') {
            return;
        }
        let Some(e) = self.current() else { return };
        if e.kind != Kind::Dir || e.has(flag::MOUNT) || e.has(flag::SUBVOLUME) {
            self.say("e: empties a directory of this file system; select one");
            return;
        }
        if !e.has(flag::DONE) {
            self.say("e: it is still being scanned; wait for its totals");
            return;
        }
        let inside = self.tree.list(e.index, &Query::default());
        if inside.is_empty() {
            self.say("e: it is empty already");
            return;
        }
        let (disk, _) = self.tree.below(e.index);
        self.dialog = Dialog::Confirm {
            title: "Empty this directory?".into(),
            lines: vec![
                format!("{}", self.shown(e.index)),
                format!(
                    "Its {} ({}, {}) go to the trash; the directory itself stays.",
                    plural(inside.len() as u64, "entry", "entries"),
                    bytes(disk),
                    plural(e.items, "item", "items")
                ),
                format!(
                    "Restorable with u for {}.",
                    crate::sys::format::duration_rounded(self.grace.as_secs_f64())
                ),
            ],
            then: Then::Start(ActAsk::Empty(e.index)),
        };
    }

    fn ask_pack(&mut self) {
        if self.cannot_act('p') {
            return;
        }
        let Some(e) = self.current() else { return };
        if e.kind != Kind::Dir || e.has(flag::MOUNT) || e.has(flag::SUBVOLUME) {
            self.say("p: packs a directory; select one");
            return;
        }
        if !e.has(flag::DONE) {
            self.say("p: it is still being scanned; wait for its totals");
            return;
        }
        let mut lines = vec![
            format!(
                "{}  ({} entries, {})",
                self.shown(e.index),
                group(e.items),
                bytes(e.disk)
            ),
            format!(
                "into {}.sqfs, one verified squashfs archive.",
                self.shown(e.index)
            ),
            "Each original is removed only once the archive holds it unchanged;".into(),
            "`reclaim unpack` restores the tree (u does not undo a pack).".into(),
        ];
        if !e.has(flag::CANDIDATE) {
            lines.push("(Not a pack candidate: it is not mostly old small files.)".into());
        }
        self.dialog = Dialog::Confirm {
            title: "Pack this directory?".into(),
            lines,
            then: Then::Start(ActAsk::Pack(e.index)),
        };
    }

    /// `q` while an action runs: asked first.
    pub fn ask_quit(&mut self) {
        self.quit = None;
        let what = self
            .job
            .as_ref()
            .map(|j| j.what.clone())
            .unwrap_or_default();
        self.dialog = Dialog::Confirm {
            title: "Quit?".into(),
            lines: vec![
                format!("Still {what}."),
                "Quitting stops it at its next consistent point: what is done stays".into(),
                "done (and restorable), the rest stays where it is.".into(),
            ],
            then: Then::Quit,
        };
    }

    fn confirmed(&mut self, then: Then) {
        match then {
            Then::Quit => {
                self.quit_confirmed = true;
                self.quit = Some(Quit::Asked);
            }
            Then::Enter(node) => self.scan_mount(node),
            Then::Start(ask) => {
                let Some(actor) = self.actor.clone() else {
                    return;
                };
                let (act, what) = match ask {
                    ActAsk::Delete(v) => {
                        let what =
                            format!("deleting {}", plural(v.len() as u64, "entry", "entries"));
                        (Act::Delete(v), what)
                    }
                    ActAsk::Empty(d) => (Act::Empty(d), format!("emptying {}", self.shown(d))),
                    ActAsk::Remove(v) => {
                        let what = format!(
                            "removing {} for good",
                            plural(v.len() as u64, "entry", "entries")
                        );
                        (Act::Remove(v), what)
                    }
                    ActAsk::Pack(d) => (Act::Pack(d), format!("packing {}", self.shown(d))),
                };
                self.job = Some(jobs::start(&actor, act, what));
            }
        }
    }

    fn undo_last(&mut self) {
        if self.cannot_act('u') {
            return;
        }
        let Some(d) = self.undo.pop() else {
            self.say("u: nothing to undo");
            return;
        };
        let now = crate::sys::format::now_unix();
        if d.until().is_some_and(|u| u <= now) {
            self.say("u: the grace window of the last deletion is over; the reaper frees it");
            return;
        }
        let Some(actor) = self.actor.clone() else {
            return;
        };
        let what = format!(
            "restoring {}",
            plural(d.hidden.len() as u64, "entry", "entries")
        );
        self.job = Some(jobs::start(&actor, Act::Undo(d), what));
    }

    /// `r`: scans directory `dir` again (its entries are read anew).
    fn rescan(&mut self, dir: u32) {
        if self.cannot_act('r') {
            return;
        }
        if self.scanning() {
            self.say("r: the scan is still running");
            return;
        }
        self.scan_again(dir, false)
    }

    fn scan_mount(&mut self, node: u32) {
        if self.scanning() {
            self.say("the scan is still running; try again when it is done");
            return;
        }
        self.scan_again(node, true)
    }

    fn scan_again(&mut self, dir: u32, mount: bool) {
        let (Some(actor), Some(opts)) = (self.actor.clone(), self.scan_opts.clone()) else {
            return;
        };
        let (fd, stat) = match actor.open_dir(dir) {
            Ok(r) => r,
            Err(e) => {
                self.say(format!("r: {}: {e}", self.shown(dir)));
                return;
            }
        };
        if mount {
            self.tree.count_in(dir);
        }
        self.tree.forget_below(dir);
        self.marks
            .retain(|&m| !self.tree.within(m, dir) || m == dir);
        let start = crate::engine::scan::walk::Start::Dir {
            display: self.tree.path(dir),
            fd,
            stat,
        };
        self.scan = Some(jobs::scan(self.tree.clone(), start, dir, opts));
        if mount {
            self.enter_dir(dir);
        }
        self.refresh(true);
    }

    fn enter_dir(&mut self, dir: u32) {
        self.trail.push(dir);
        self.dir = dir;
        self.cursor = 0;
        self.top = 0;
        self.selected = None;
    }

    /// A finished action: what it did is said, the view follows.
    pub fn poll_job(&mut self) {
        if !self.job.as_ref().is_some_and(Job::finished) {
            return;
        }
        let Some(done) = self.job.take().and_then(Job::join) else {
            self.say("the action ended abnormally");
            self.failed = true;
            return;
        };
        match done {
            Done::Deleted(r) => self.deleted(r, "deleted"),
            Done::Emptied(dir, r) => {
                let what = format!("emptied {}:", self.shown(dir));
                self.deleted(r, &what)
            }
            Done::Removed(r) => {
                let n = r.removed.len() as u64;
                self.after(&r);
                self.say(format!(
                    "removed {} for good",
                    plural(n, "entry", "entries")
                ));
            }
            Done::Undone(d, results) => {
                let ok = results.iter().filter(|r| r.1.is_ok()).count() as u64;
                let bad: Vec<String> = results
                    .iter()
                    .filter_map(|(n, r)| {
                        r.as_ref().err().map(|e| format!("{}: {e}", self.shown(*n)))
                    })
                    .collect();
                if bad.is_empty() {
                    self.say(format!("restored {}", plural(ok, "entry", "entries")));
                } else {
                    self.failed = true;
                    // What could not come back stays undoable if its window lasts.
                    let left: Vec<_> = d
                        .hidden
                        .iter()
                        .filter(|(n, _)| results.iter().any(|(m, r)| m == n && r.is_err()))
                        .cloned()
                        .collect();
                    if !left.is_empty() && ok > 0 {
                        self.undo.push(Deletion { hidden: left });
                    }
                    self.dialog = Dialog::Note {
                        title: format!(
                            "Restored {}; not restored:",
                            plural(ok, "entry", "entries")
                        ),
                        lines: bad,
                    };
                }
            }
            Done::Packed(dir, r) => match r {
                Ok((out, archive)) => {
                    let stayed = out.stayed.len() as u64;
                    if stayed > 0 {
                        self.failed = true;
                    }
                    self.say(format!(
                        "packed {} into {} ({}, {} removed{})",
                        self.shown(dir),
                        visible(archive.as_os_str().as_encoded_bytes()),
                        bytes(out.archive_bytes),
                        plural(out.removed_files, "file", "files"),
                        if stayed > 0 {
                            format!("; {} stayed (changed or new)", group(stayed))
                        } else {
                            String::new()
                        }
                    ));
                }
                Err(e) => {
                    self.failed = true;
                    self.dialog = Dialog::Note {
                        title: format!("Not packed: {}", self.shown(dir)),
                        lines: vec![visible(e.as_bytes())],
                    };
                }
            },
        }
        self.refresh(true);
    }

    /// What a deletion (or emptying) did: said, undoable, and the entries no trash could
    /// take asked about.
    fn deleted(&mut self, r: Report, verb: &str) {
        self.after(&r);
        if !r.hidden.is_empty() {
            let bytes_hidden: u64 = r.hidden.iter().map(|(n, _)| self.tree.info(*n).disk).sum();
            let d = Deletion {
                hidden: r.hidden.clone(),
            };
            let until = d
                .until()
                .map(|u| format!("; u restores until {}", clock(u)))
                .unwrap_or_default();
            self.say(format!(
                "{verb} {} ({}) into the trash{until}",
                plural(r.hidden.len() as u64, "entry", "entries"),
                bytes(bytes_hidden)
            ));
            self.undo.push(d);
        }
        if !r.no_trash.is_empty() {
            let infos: Vec<Info> = self
                .tree
                .infos(&r.no_trash.iter().map(|x| x.0).collect::<Vec<_>>());
            let disk: u64 = infos.iter().map(|i| i.disk).sum();
            let why = visible(r.no_trash[0].1.as_bytes());
            let mut lines = vec![format!(
                "{} ({}) cannot go to a trash: {why}.",
                plural(infos.len() as u64, "entry", "entries"),
                bytes(disk)
            )];
            lines.extend(self.named(&infos));
            lines.push(String::new());
            lines.push("Remove them for good now? This cannot be undone.".into());
            self.dialog = Dialog::Confirm {
                title: "No undo possible".into(),
                lines,
                then: Then::Start(ActAsk::Remove(infos.iter().map(|i| i.index).collect())),
            };
        }
    }

    /// Marks of what is gone are dropped; failures are listed.
    fn after(&mut self, r: &Report) {
        for (n, _) in &r.hidden {
            self.marks.remove(n);
        }
        for n in &r.removed {
            self.marks.remove(n);
        }
        if r.failed.is_empty() && r.not_tried.is_empty() {
            return;
        }
        self.failed = true;
        let mut lines: Vec<String> = r
            .failed
            .iter()
            .map(|(n, why)| format!("{}: {}", self.shown(*n), visible(why.as_bytes())))
            .collect();
        if !r.not_tried.is_empty() {
            lines.push(format!(
                "{} not tried (stopped)",
                plural(r.not_tried.len() as u64, "entry", "entries")
            ));
        }
        // Gone since the scan: they leave the view too.
        let gone: Vec<u32> = r
            .failed
            .iter()
            .filter(|(_, why)| why.contains("No such file"))
            .map(|x| x.0)
            .collect();
        self.tree.hide(&gone);
        self.dialog = Dialog::Note {
            title: "Not done:".into(),
            lines,
        };
    }
}

/// A local time of day for messages: `14:05`.
pub fn clock(t: f64) -> String {
    let full = crate::sys::format::local_time(t);
    full.get(11..16).unwrap_or(&full).to_string()
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
