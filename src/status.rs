//! `reclaim status`: what waits in each trash this user may see (entries, files, allocated
//! bytes, which are in their grace window, being freed, failed or damaged) and the reaper
//! working on it (pid, rate, ETA), like ZFS's `freeing`. Reads only. Root reads another
//! user's trash through a child running as that user (`asuser`), and trusts nothing it says
//! beyond reporting it: sums saturate, names are quoted.

use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use crate::dirfd;
use crate::format::{bytes, duration_rounded, group, plural, rate};
use crate::quote::quote;
use crate::reaper::{self, failure::FailedRecord, state};
use crate::report::ErrorEntry;
use crate::trash::meta::{now_unix, Meta};
use crate::trash::{self, Trash, Unusable, DATA, REAPING};

/// At most this many entries of one trash are listed (all are counted).
const MAX_ITEMS: usize = 10_000;

/// Damaged entries of one trash shown in the human report (the rest are counted).
const MAX_DAMAGED_SHOWN: u64 = 3;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Status {
    pub trashes: Vec<TrashStatus>,
    /// Directories with a trash's name that are not used (another owner, a symlink, ...): the
    /// first few, ...
    #[serde(default)]
    pub unusable: Vec<Unusable>,
    /// ... and how many more there are.
    #[serde(default)]
    pub unusable_more: u64,
    /// Users with more trashes on a file system than are looked at, and how many were not.
    #[serde(default)]
    pub skipped: Vec<trash::Skipped>,
    /// File systems that did not answer in time (their trashes were not looked at).
    #[serde(default)]
    pub unreachable: Vec<Unusable>,
    /// Trashes that could not be read (as their owner).
    #[serde(default)]
    pub errors: Vec<ErrorEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct TrashStatus {
    pub trash: String,
    pub mount: String,
    pub uid: u32,
    pub entries: u64,
    /// Allocated bytes still held (live `st_blocks` of files; trees as recorded, if known).
    pub pending_bytes: u64,
    /// Files pending, as far as known (trees are not walked).
    pub pending_files: u64,
    /// Entries whose size is not known (trees: counting would cost a walk).
    pub unknown_size: u64,
    pub reaper: Option<ReaperStatus>,
    /// The last lines of the trash's `reaper.log` (what reapers logging there, detached ones by
    /// default, freed or failed at).
    #[serde(default)]
    pub log_tail: Vec<String>,
    pub items: Vec<Item>,
    /// Entries beyond those listed in `items`.
    #[serde(default)]
    pub items_omitted: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ReaperStatus {
    pub pid: u32,
    /// "freeing", "waiting" (for a grace window, holding nothing open) or "starting".
    pub state: String,
    pub entry: Option<String>,
    pub rate_bps: f64,
    pub freed_bytes: u64,
    pub files: u64,
    /// Files removed per second since the reaper started.
    pub files_per_s: f64,
    /// Seconds to free the pending bytes at the current rate; none while a tree of unknown
    /// size is pending (the estimate would miss its bytes).
    pub eta_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_due_unix: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    pub original: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_hex: Option<String>,
    pub kind: String,
    /// "pending", "grace", "reaping", "failed" or "damaged".
    pub state: String,
    pub allocated: Option<u64>,
    pub files: Option<u64>,
    pub created_unix: Option<f64>,
    pub grace_until_unix: Option<f64>,
    /// A process freeing it right now (a reaper, or a foreground `reclaim rm` shrinking it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_pid: Option<u32>,
    /// Why a damaged entry is not freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage: Option<String>,
    /// The record of failed attempts to free it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailedRecord>,
}

/// The status of every trash this process may see: its own read here, other users' (root)
/// each through a child running as that user. `count` walks pending trees of unknown size.
pub fn collect(found: trash::Discovery, count: bool) -> Status {
    let mut st = Status {
        unusable: found.unusable,
        unusable_more: found.unusable_more,
        skipped: found.skipped,
        unreachable: found.unreachable,
        ..Status::default()
    };
    // One trash open at a time (another user's only in its child).
    for t in &found.trashes {
        if crate::asuser::needed(t.uid) && t.is_idle_and_empty() {
            st.trashes.push(empty(t));
        } else if crate::asuser::needed(t.uid) {
            match as_owner(t, count) {
                Ok(mut s) => {
                    // Only what that trash is: its own lines, never more.
                    st.trashes
                        .extend(s.trashes.drain(..).filter(|x| x.uid == t.uid).take(1));
                    st.errors.extend(s.errors);
                }
                Err(e) => st.errors.push(ErrorEntry::new(&t.path, e.to_string())),
            }
        } else {
            match t.open() {
                Ok(open) => st.trashes.push(of_trash(&open, count)),
                Err(e) => st.errors.push(ErrorEntry::new(&t.path, e.to_string())),
            }
        }
    }
    st
}

/// The status of a trash that holds nothing (`Found::is_idle_and_empty`).
fn empty(t: &trash::Found) -> TrashStatus {
    TrashStatus {
        trash: t.path.to_string_lossy().into_owned(),
        mount: t.mount.to_string_lossy().into_owned(),
        uid: t.uid,
        entries: 0,
        pending_bytes: 0,
        pending_files: 0,
        unknown_size: 0,
        reaper: None,
        log_tail: Vec::new(),
        items: Vec::new(),
        items_omitted: 0,
    }
}

/// `reclaim status --trash T --json` as the owner of `t`.
fn as_owner(t: &trash::Found, count: bool) -> Result<Status, crate::asuser::ChildError> {
    let who = crate::asuser::Identity::of(t.uid);
    let mut argv: Vec<std::ffi::OsString> = vec![
        "status".into(),
        "--json".into(),
        "--trash".into(),
        t.path.clone().into_os_string(),
    ];
    if count {
        argv.push("--count".into());
    }
    let mut lines = |l: &str| eprintln!("reclaim status: {l}");
    crate::asuser::run_json::<Status>(Some(&who), &argv, &mut lines).map(|(s, _)| s)
}

fn of_trash(t: &Trash, count: bool) -> TrashStatus {
    let now = now_unix();
    let names = t.entries();
    let mut items = Vec::new();
    let mut omitted = 0u64;
    for name in &names {
        if items.len() >= MAX_ITEMS {
            omitted += 1;
            continue;
        }
        if let Some(i) = item(t, name, now, count) {
            items.push(i);
        }
    }
    let pending_bytes = items
        .iter()
        .filter_map(|i| i.allocated)
        .fold(0u64, u64::saturating_add);
    let unknown = items.iter().any(|i| i.allocated.is_none());
    let reaper = reaper_status(t, pending_bytes, unknown);
    let log_tail = crate::trash::safefile::read_log_tail(&t.dir, crate::trash::LOG, t.uid, 3)
        .unwrap_or_default();
    TrashStatus {
        log_tail,
        trash: t.path.to_string_lossy().into_owned(),
        mount: t.mount.to_string_lossy().into_owned(),
        uid: t.uid,
        entries: (items.len() as u64).saturating_add(omitted),
        pending_bytes,
        pending_files: items
            .iter()
            .filter_map(|i| i.files)
            .fold(0u64, u64::saturating_add),
        unknown_size: items.iter().filter(|i| i.allocated.is_none()).count() as u64,
        reaper,
        items,
        items_omitted: omitted,
    }
}

/// One entry as status shows it; `None` for debris (an empty entry of an interrupted hide).
fn item(t: &Trash, name: &std::ffi::CStr, now: f64, count: bool) -> Option<Item> {
    let mut it = Item {
        id: name.to_string_lossy().into_owned(),
        original: "?".into(),
        original_hex: None,
        kind: "?".into(),
        state: "damaged".into(),
        allocated: None,
        files: None,
        created_unix: None,
        grace_until_unix: None,
        holder_pid: None,
        damage: None,
        failure: None,
    };
    let entry = match dirfd::open_dir_at(&t.dir, name) {
        Ok(fd) => fd,
        // Freed or restored while this was listing: nothing to show.
        Err(Errno::NOENT) => return None,
        Err(e) => {
            it.damage = Some(format!("cannot open it: {}", crate::error::errno_text(e)));
            return Some(it);
        }
    };
    if let Ok(f) = dirfd::fstat(&entry) {
        it.holder_pid = crate::locks::recent_holder(crate::locks::Kind::Flock, f.ident);
    }
    let m = match Meta::read(&entry, t.uid) {
        Ok(m) => m,
        Err(bad) => {
            it.damage = Some(format!("meta.json {bad}"));
            return Some(it);
        }
    };
    let data = dirfd::lstat_at(&entry, DATA).ok();
    let reaping = dirfd::lstat_at(&entry, REAPING).ok();
    if data.is_none() && reaping.is_none() && m.is_none() {
        return None; // debris of an interrupted hide
    }
    if let Some(m) = &m {
        if m.uid != t.uid {
            it.damage = Some(format!(
                "its record names uid {}, not the trash's owner (uid {})",
                m.uid, t.uid
            ));
            return Some(it);
        }
        let p = m.original_path();
        it.original = p.to_string_lossy().into_owned();
        it.original_hex = crate::quote::hex_if_needed(&p);
        it.kind = m.kind.clone();
        it.created_unix = Some(m.created_unix);
        it.grace_until_unix = m.grace_until_unix;
        it.files = m.files;
    }
    match FailedRecord::read(&entry, t.uid) {
        Ok(f) => it.failure = f,
        Err(bad) => {
            it.damage = Some(format!("failed.json {bad}"));
            return Some(it);
        }
    }
    let is_dir = data
        .or(reaping)
        .is_some_and(|f| f.file_type == rustix::fs::FileType::Directory);
    it.allocated = if !is_dir {
        // Live: a file being shrunk counts down. Never what a record claims.
        Some(trash::entry_allocated(&entry))
    } else if count {
        // What is left of it now (a tree being reaped shrinks).
        let entry = std::sync::Arc::new(entry);
        let inner = if data.is_some() { DATA } else { REAPING };
        let shown = t.shown(name, Some(inner));
        let (bytes, n) = crate::remove::measure(&entry, inner, &shown);
        it.files = Some(n);
        // A whole entry's size, learned once, is kept in its record: `reap` and `--wait`
        // show progress against it. Only while nobody else holds the entry.
        if let (Some(mut m), true) = (m.clone(), data.is_some()) {
            if crate::locks::try_exclusive(&*entry).unwrap_or(false)
                && (m.allocated, m.files) != (Some(bytes), Some(n))
            {
                m.allocated = Some(bytes);
                m.files = Some(n);
                let _ = m.rewrite(&entry);
            }
        }
        Some(bytes)
    } else {
        m.as_ref().and_then(|m| m.allocated)
    };
    it.state = if it.failure.is_some() {
        "failed"
    } else if data.is_none() {
        "reaping"
    } else if m.as_ref().is_some_and(|m| m.in_grace(now)) {
        "grace"
    } else {
        "pending"
    }
    .into();
    Some(it)
}

/// The reaper of `t`: the holder of its lock, or one that waits (holding nothing) for a grace
/// window, known by `reaper.json` alone.
fn reaper_status(t: &Trash, pending_bytes: u64, unknown: bool) -> Option<ReaperStatus> {
    let st = state::read(&t.dir, t.uid);
    let pid = match reaper::holder(t) {
        Some(pid) => pid,
        None => {
            let s = st.as_ref().filter(|s| s.state == "waiting" && s.alive())?;
            s.pid
        }
    };
    let st = st.filter(|s| s.pid == pid);
    let rate = st.as_ref().map_or(0.0, |s| s.rate_bps);
    let files = st.as_ref().map_or(0, |s| s.files);
    let secs = st
        .as_ref()
        .map_or(0.0, |s| (s.updated_unix - s.started_unix).max(0.0));
    Some(ReaperStatus {
        pid,
        state: st
            .as_ref()
            .map_or_else(|| "starting".into(), |s| s.state.clone()),
        entry: st.as_ref().and_then(|s| s.entry.clone()),
        rate_bps: rate,
        freed_bytes: st.as_ref().map_or(0, |s| s.freed_bytes),
        files,
        files_per_s: if secs > 0.5 { files as f64 / secs } else { 0.0 },
        eta_s: (rate > 0.0 && !unknown).then(|| pending_bytes as f64 / rate),
        next_due_unix: st.as_ref().and_then(|s| s.next_due_unix),
    })
}

impl Status {
    /// The human report: one paragraph per trash with anything in it.
    pub fn human(&self) -> String {
        let mut s = String::new();
        for u in &self.unusable {
            s.push_str(&format!("ignoring {}: {}\n", quote(&u.path), u.reason));
        }
        if self.unusable_more > 0 {
            s.push_str(&format!(
                "... and {} more names that look like a trash but are not usable (squatted, \
                 links, open modes: `reclaim status --json` lists the first)\n",
                group(self.unusable_more)
            ));
        }
        for k in &self.skipped {
            s.push_str(&format!(
                "uid {}: {} more trashes not looked at (at most {} per user and file system)\n",
                k.uid,
                group(k.trashes),
                trash::discover::MAX_PER_USER
            ));
        }
        for e in &self.errors {
            s.push_str(&format!("cannot read {e}\n"));
        }
        for u in &self.unreachable {
            s.push_str(&format!("warning: {} {}\n", quote(&u.path), u.reason));
        }
        let busy: Vec<&TrashStatus> = self
            .trashes
            .iter()
            .filter(|t| t.entries > 0 || t.reaper.is_some())
            .collect();
        if busy.is_empty() {
            s.push_str("nothing pending: no trash holds entries");
            // What the reapers did last, from each trash's log.
            for t in self.trashes.iter().filter(|t| !t.log_tail.is_empty()) {
                s.push_str(&format!("\n{} last logged:", quote(&t.trash)));
                for l in &t.log_tail {
                    s.push_str(&format!("\n  log: {l}"));
                }
            }
            return s;
        }
        let now = now_unix();
        for t in busy {
            // What is known, and what is not (a tree is not walked unless --count).
            let pending = if t.unknown_size == 0 {
                format!(
                    "{}, {} pending",
                    plural(t.pending_files, "file", "files"),
                    bytes(t.pending_bytes)
                )
            } else if t.unknown_size == t.entries {
                format!(
                    "size unknown ({}: `reclaim status --count` walks {})",
                    plural(t.unknown_size, "tree", "trees"),
                    if t.unknown_size == 1 { "it" } else { "them" }
                )
            } else {
                format!(
                    "at least {} in {} pending, and {} of unknown size \
                     (`reclaim status --count` walks them)",
                    bytes(t.pending_bytes),
                    plural(t.pending_files, "file", "files"),
                    plural(t.unknown_size, "tree", "trees"),
                )
            };
            s.push_str(&format!(
                "{} (file system at {}): {}, {pending}\n",
                quote(&t.trash),
                quote(&t.mount),
                plural(t.entries, "entry", "entries"),
            ));
            let stuck = t
                .items
                .iter()
                .all(|i| i.state == "failed" || i.state == "damaged");
            match &t.reaper {
                Some(r) if r.state == "waiting" => {
                    s.push_str(&format!(
                        "  reaper {} waiting for a grace window{}\n",
                        r.pid,
                        r.next_due_unix
                            .map(|d| format!(" (next in {})", duration_rounded(d - now)))
                            .unwrap_or_default()
                    ));
                }
                Some(r) => {
                    let eta = match r.eta_s {
                        Some(e) => format!("ETA {}", duration_rounded(e)),
                        None if t.unknown_size > 0 => "ETA ? (a tree of unknown size)".into(),
                        None => "ETA ?".into(),
                    };
                    s.push_str(&format!(
                        "  reaper {} {}: {}, {} freed and {} removed so far ({} files/s), {eta}{}\n",
                        r.pid,
                        r.state,
                        rate(r.rate_bps),
                        bytes(r.freed_bytes),
                        plural(r.files, "file", "files"),
                        group(r.files_per_s as u64),
                        r.entry
                            .as_ref()
                            .map(|e| format!(" (now: {})", quote(e)))
                            .unwrap_or_default()
                    ));
                }
                None if t.entries > 0 && !stuck => {
                    s.push_str("  no reaper running: `reclaim reap` frees it\n");
                }
                None => {}
            }
            for l in &t.log_tail {
                s.push_str(&format!("  log: {l}\n"));
            }
            // Damaged entries (anyone can make thousands in their own trash): the first few.
            let mut damaged = 0u64;
            for i in &t.items {
                if i.damage.is_some() {
                    damaged += 1;
                    if damaged > MAX_DAMAGED_SHOWN {
                        continue;
                    }
                }
                let size = i.allocated.map_or_else(|| "?".into(), bytes);
                let when = match (i.state.as_str(), i.grace_until_unix) {
                    ("grace", Some(g)) => format!(", restorable for {}", duration_rounded(g - now)),
                    _ => String::new(),
                };
                let original = crate::quote::PathField {
                    path: i.original.clone(),
                    path_hex: i.original_hex.clone(),
                };
                s.push_str(&format!(
                    "  {}  {:<8} {:>10}  {} {}{when}\n",
                    quote(&i.id),
                    i.state,
                    size,
                    i.kind,
                    original
                ));
                if let Some(d) = &i.damage {
                    s.push_str(&format!("      damaged: {d}; left alone\n"));
                }
                if let Some(f) = &i.failure {
                    for e in &f.errors {
                        s.push_str(&format!("      cannot free {e}\n"));
                    }
                    if f.more > 0 {
                        s.push_str(&format!("      ... and {} more\n", group(f.more)));
                    }
                    s.push_str(&format!(
                        "      {}; the next in {} (fix the cause, then `reclaim reap`)\n",
                        crate::format::plural(u64::from(f.attempts), "attempt", "attempts"),
                        duration_rounded(f.next_attempt_unix - now)
                    ));
                }
                if let Some(pid) = i.holder_pid {
                    s.push_str(&format!("      being worked on by process {pid}\n"));
                }
            }
            if damaged > MAX_DAMAGED_SHOWN {
                s.push_str(&format!(
                    "  ... and {} more damaged entries, left alone (`reclaim status --json` \
                     lists them)\n",
                    group(damaged - MAX_DAMAGED_SHOWN)
                ));
            }
            if t.items_omitted > 0 {
                s.push_str(&format!(
                    "  ... and {} more entries\n",
                    group(t.items_omitted)
                ));
            }
        }
        s.pop();
        s
    }
}

/// `reclaim status [--json] [--count] [--trash DIR]`; returns the exit code.
pub fn command(json: bool, count: bool, only: Option<&std::path::Path>) -> u8 {
    let found = match only {
        Some(p) => match Trash::open_path(p).and_then(|t| Ok(trash::Found::of(&t)?)) {
            Ok(t) => trash::Discovery::one(t),
            Err(e) => {
                let err = format!("cannot use trash {}: {e}", quote(p));
                if json {
                    let st = Status {
                        errors: vec![ErrorEntry::new(p, e.to_string())],
                        ..Status::default()
                    };
                    println!("{}", serde_json::to_string(&st).expect("status serializes"));
                } else {
                    eprintln!("reclaim status: {err}");
                }
                return 1;
            }
        },
        None => trash::discover(trash::uid()),
    };
    let st = collect(found, count);
    if json {
        println!("{}", serde_json::to_string(&st).expect("status serializes"));
    } else {
        println!("{}", st.human());
    }
    u8::from(!st.errors.is_empty())
}
