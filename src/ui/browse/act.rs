//! What `reclaim browse`'s action keys do: each asks first, naming what and how much (`d`,
//! `e`, `p`, the removal for good that follows a deletion no trash could take, quitting while
//! an action runs), starts the action on its own thread (`jobs`), and says what it came to
//! when it is done; `u` and `r` too. Nothing here touches a file itself.

use super::app::{ActAsk, App, Dialog, Quit, Then};
use super::jobs::{self, Act, Done, Job};
use crate::engine::scan::tree::{flag, Info, Kind, Query};
use crate::reaper::browse::{Deletion, Report};
use crate::sys::format::{bytes, group, plural};
use crate::sys::quote::visible;

/// Entries named in a confirmation (the rest are counted).
const NAMED: usize = 6;

impl App {
    /// The entries `d` acts on: the marked ones (still shown), else the selected one.
    pub(super) fn targets(&self) -> Vec<Info> {
        if self.marks.is_empty() {
            self.current().into_iter().collect()
        } else {
            let marked: Vec<u32> = self.marks.iter().copied().collect();
            self.tree.infos(&marked)
        }
    }

    /// Why nothing can be done to the files now, if so.
    pub(super) fn cannot_act(&mut self, key: char) -> bool {
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

    pub(super) fn ask_delete(&mut self) {
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
        self.dialog = Dialog::confirm(
            "Delete?",
            lines,
            Then::Start(ActAsk::Delete(targets.iter().map(|i| i.index).collect())),
        );
    }

    pub(super) fn named(&self, list: &[Info]) -> Vec<String> {
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

    pub(super) fn ask_empty(&mut self) {
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
        self.dialog = Dialog::confirm(
            "Empty this directory?",
            vec![
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
            Then::Start(ActAsk::Empty(e.index)),
        );
    }

    pub(super) fn ask_pack(&mut self) {
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
        self.dialog = Dialog::confirm(
            "Pack this directory?",
            lines,
            Then::Start(ActAsk::Pack(e.index)),
        );
    }

    /// `q` while an action runs: asked first.
    pub fn ask_quit(&mut self) {
        self.quit = None;
        let what = self
            .job
            .as_ref()
            .map(|j| j.what.clone())
            .unwrap_or_default();
        self.dialog = Dialog::confirm(
            "Quit?",
            vec![
                format!("Still {what}."),
                "Quitting stops it at its next consistent point: what is done stays".into(),
                "done (and restorable), the rest stays where it is.".into(),
            ],
            Then::Quit,
        );
    }

    pub(super) fn confirmed(&mut self, then: Then) {
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

    pub(super) fn undo_last(&mut self) {
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
    pub(super) fn rescan(&mut self, dir: u32) {
        if self.cannot_act('r') {
            return;
        }
        if self.scanning() {
            self.say("r: the scan is still running");
            return;
        }
        self.scan_again(dir, false)
    }

    pub(super) fn scan_mount(&mut self, node: u32) {
        if self.scanning() {
            self.say("the scan is still running; try again when it is done");
            return;
        }
        self.scan_again(node, true)
    }

    pub(super) fn scan_again(&mut self, dir: u32, mount: bool) {
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

    pub(super) fn enter_dir(&mut self, dir: u32) {
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
                    if !left.is_empty() {
                        self.undo.push(Deletion { hidden: left });
                    }
                    self.dialog = Dialog::note(
                        format!("Restored {}; not restored:", plural(ok, "entry", "entries")),
                        bad,
                    );
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
                    self.dialog = Dialog::note(
                        format!("Not packed: {}", self.shown(dir)),
                        vec![visible(e.to_string().as_bytes())],
                    );
                }
            },
        }
        self.refresh(true);
    }

    /// What a deletion (or emptying) did: said, undoable, and the entries no trash could
    /// take asked about.
    pub(super) fn deleted(&mut self, r: Report, verb: &str) {
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
            self.dialog = Dialog::confirm(
                "No undo possible",
                lines,
                Then::Start(ActAsk::Remove(infos.iter().map(|i| i.index).collect())),
            );
        }
    }

    /// Marks of what is gone are dropped; failures are listed.
    pub(super) fn after(&mut self, r: &Report) {
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
        self.dialog = Dialog::note("Not done:", lines);
    }
}

/// A local time of day for messages: `14:05`.
pub fn clock(t: f64) -> String {
    let full = crate::sys::format::local_time(t);
    full.get(11..16).unwrap_or(&full).to_string()
}
