//! What waits in each trash this user may see (entries, files, allocated bytes, which are in
//! their grace window, being freed, failed or damaged) and the reaper working on it (pid, rate,
//! ETA), like ZFS's `freeing`: `reclaim status`'s library half, and the space `prune` counts as
//! on its way back. Reads only (but for a size learned by `count`, kept in the entry's record).
//! Root reads another user's trash through a child running as that user (`asuser`), and trusts
//! nothing it says beyond reporting it: sums saturate, names are quoted. Never prints.

use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use crate::reaper::{self, failure::FailedRecord, state};
use crate::sys::dirfd;
use crate::sys::error::ErrorEntry;
use crate::sys::format::now_unix;
use crate::trash::meta::Meta;
use crate::trash::{self, Trash, Unusable, DATA, REAPING};

/// At most this many entries of one trash are listed (all are counted).
const MAX_ITEMS: usize = 10_000;

/// Entries freed before their grace ended listed per trash (all are counted).
const MAX_EARLY_SHOWN: usize = 5;

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
    /// What file systems still free in their own threads (btrfs: deleted subvolumes queued
    /// for its cleaner), one per btrfs file system mounted here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_systems: Vec<FsFreeing>,
    /// Each file system with trashes: what they hold against its free space and floor
    /// (`reaper::space`).
    #[serde(default)]
    pub space: Vec<FsSpace>,
}

/// One file system with trashes: what they hold against its space (`reaper::space` sums it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FsSpace {
    /// A mount point of it (the first trash's).
    pub mount: String,
    pub size_bytes: u64,
    /// What applications may still write there.
    pub free_bytes: u64,
    /// The floor of free space (`--min-free`); none when off.
    pub floor_bytes: Option<u64>,
    /// Under the floor now.
    pub short: bool,
    /// Entries in its trashes, and the bytes they hold (trees of unknown size not counted:
    /// `unknown_size` says how many).
    pub entries: u64,
    pub pending_bytes: u64,
    pub unknown_size: u64,
    /// Of those entries, how many are in their grace window (restorable), and how many could
    /// not be freed (failed or damaged).
    pub in_grace: u64,
    pub failed: u64,
    /// Bytes per second the reapers there give back (the fastest one's reading: each reads
    /// the file system's free space), and when that frees the pending bytes.
    pub rate_bps: f64,
    pub eta_s: Option<f64>,
    /// Entries freed before their grace window ended (space ran short), ever.
    pub freed_early: u64,
    /// Trashes on it.
    pub trashes: u64,
}

/// A file system freeing space in its own threads.
#[derive(Debug, Serialize, Deserialize)]
pub struct FsFreeing {
    /// A mount point of it (the first in the mount table).
    pub mount: String,
    pub fs_type: String,
    /// Deleted subvolumes its cleaner has not freed yet (the kernel gives no sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subvolumes_queued: Option<u32>,
    /// Why the queue could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
}

/// The cleaner's queue of every btrfs file system mounted in this namespace (once per file
/// system; under `$RECLAIM_UNDER` if set, as trashes). Reading it needs `CAP_SYS_ADMIN` (none
/// are listed for others) and kernel 6.8 (`BTRFS_IOC_SUBVOL_SYNC_WAIT`; before, says so).
pub fn file_systems() -> Vec<FsFreeing> {
    let under = std::env::var_os(trash::discover::UNDER_ENV)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for m in crate::sys::mounts::all() {
        // As for trashes: only those under $RECLAIM_UNDER, if set.
        if m.fstype != "btrfs" || under.as_ref().is_some_and(|u| !m.point.starts_with(u)) {
            continue;
        }
        let Ok(fd) = dirfd::open_dir_path(&m.point) else {
            continue;
        };
        // One line per file system, whatever subvolumes or binds of it are mounted.
        let fsid = rustix::fs::fstatvfs(&fd).map(|s| s.f_fsid);
        if !fsid.is_ok_and(|id| seen.insert(id)) {
            continue;
        }
        let (queued, unknown) = match crate::sys::btrfs::cleaner_queue(&fd) {
            Ok(n) => (Some(n), None),
            // Only root may read it: nothing to say to others.
            Err(Errno::PERM | Errno::ACCESS) => continue,
            Err(Errno::NOTTY | Errno::INVAL | Errno::OPNOTSUPP) => (
                None,
                Some(
                    "the kernel (before 6.8) cannot tell; `btrfs subvolume list -d` as root".into(),
                ),
            ),
            Err(e) => (None, Some(crate::sys::error::errno_text(e))),
        };
        out.push(FsFreeing {
            mount: m.point.to_string_lossy().into_owned(),
            fs_type: m.fstype.clone(),
            subvolumes_queued: queued,
            unknown,
        });
    }
    out
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
    /// Entries freed before their grace window ended (their file system ran short of space),
    /// ever, and the latest few of them (`early.json`).
    #[serde(default)]
    pub freed_early: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub freed_early_recent: Vec<crate::trash::early::Early>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ReaperStatus {
    pub pid: u32,
    /// "starting", "freeing", "finishing" (a pass, before it waits) or "waiting" (for a grace
    /// window, holding nothing open).
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
    /// A batch (`kind` "batch": many paths of the directory `original`): how many paths it
    /// holds ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u64>,
    /// ... and the names of the first few (`reclaim restore ID` lists them all as it puts them
    /// back).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_first: Vec<crate::trash::meta::HeldName>,
}

/// The status of every trash this process may see: its own read here, other users' (root)
/// each through a child running as that user (what it prints on stderr goes to `on_line`).
/// `count` walks pending trees of unknown size.
pub fn collect(found: trash::Discovery, count: bool, on_line: &mut dyn FnMut(&str)) -> Status {
    let mut st = Status {
        unusable: found.unusable,
        unusable_more: found.unusable_more,
        skipped: found.skipped,
        unreachable: found.unreachable,
        ..Status::default()
    };
    // One trash open at a time (another user's only in its child).
    for t in &found.trashes {
        if crate::sys::asuser::needed(t.uid) && t.is_idle_and_empty() {
            st.trashes.push(empty(t));
        } else if crate::sys::asuser::needed(t.uid) {
            match as_owner(t, count, on_line) {
                Ok(mut s) => {
                    // Only what that trash is: its own lines, never more, under its own name.
                    st.trashes
                        .extend(s.trashes.drain(..).filter(|x| x.uid == t.uid).take(1).map(
                            |mut x| {
                                x.trash = t.path.to_string_lossy().into_owned();
                                x.mount = t.mount.to_string_lossy().into_owned();
                                x.freed_early_recent.truncate(MAX_EARLY_SHOWN);
                                x
                            },
                        ));
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
        freed_early: 0,
        freed_early_recent: Vec::new(),
    }
}

/// `reclaim status --trash T --json` as the owner of `t`.
pub(super) fn as_owner(
    t: &trash::Found,
    count: bool,
    on_line: &mut dyn FnMut(&str),
) -> Result<Status, crate::sys::asuser::ChildError> {
    let who = crate::sys::asuser::Identity::of(t.uid);
    let mut argv: Vec<std::ffi::OsString> = vec![
        "status".into(),
        "--json".into(),
        "--trash".into(),
        t.path.clone().into_os_string(),
    ];
    if count {
        argv.push("--count".into());
    }
    crate::sys::asuser::run_json::<Status>(Some(&who), &argv, on_line).map(|(s, _)| s)
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
    let early = crate::trash::early::EarlyRecord::read(&t.dir, t.uid)
        .ok()
        .flatten()
        .unwrap_or_default();
    let recent = early.recent.len().saturating_sub(MAX_EARLY_SHOWN);
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
        freed_early: early.count,
        freed_early_recent: early.recent[recent..].to_vec(),
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
        held: None,
        held_first: Vec::new(),
    };
    let entry = match dirfd::open_dir_at(&t.dir, name) {
        Ok(fd) => fd,
        // Freed or restored while this was listing: nothing to show.
        Err(Errno::NOENT) => return None,
        Err(e) => {
            it.damage = Some(format!(
                "cannot open it: {}",
                crate::sys::error::errno_text(e)
            ));
            return Some(it);
        }
    };
    if let Ok(f) = dirfd::fstat(&entry) {
        it.holder_pid = crate::sys::locks::recent_holder(crate::sys::locks::Kind::Flock, f.ident);
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
        it.original_hex = crate::sys::quote::hex_if_needed(&p);
        it.kind = m.kind.clone();
        it.created_unix = Some(m.created_unix);
        it.grace_until_unix = m.grace_until_unix;
        it.files = m.files;
        if m.is_batch() {
            // What it holds now (a hide killed midway leaves a record that names more).
            it.held = trash::held_now(&entry).or(m.held);
            it.held_first = m.held_first.clone();
        }
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
        let (bytes, n) = count_tree(t, name, entry, m.clone(), data.is_some());
        it.files = Some(n);
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

/// What is left of the tree of entry `name` now (a tree being reaped shrinks): allocated bytes
/// and files. A whole entry's size (`whole`: not claimed yet), learned once, is kept in its
/// record (`m`): `reap` and `--wait` show progress against it. Only while nobody else holds
/// the entry.
fn count_tree(
    t: &Trash,
    name: &std::ffi::CStr,
    entry: std::os::fd::OwnedFd,
    m: Option<Meta>,
    whole: bool,
) -> (u64, u64) {
    let entry = std::sync::Arc::new(entry);
    let inner = if whole { DATA } else { REAPING };
    let shown = t.shown(name, Some(inner));
    let (bytes, n) = crate::engine::remove::measure(&entry, inner, &shown);
    if let (Some(mut m), true) = (m, whole) {
        if crate::sys::locks::try_exclusive(&*entry).unwrap_or(false)
            && (m.allocated, m.files) != (Some(bytes), Some(n))
        {
            m.allocated = Some(bytes);
            m.files = Some(n);
            let _ = m.rewrite(&entry);
        }
    }
    (bytes, n)
}

/// The reaper of `t`: the holder of its lock, or one that waits (holding nothing) for a grace
/// window, known by `reaper.json` alone.
fn reaper_status(t: &Trash, pending_bytes: u64, unknown: bool) -> Option<ReaperStatus> {
    let st = state::read(&t.dir, t.uid);
    let pid = match reaper::holder(t) {
        Some(pid) => pid,
        None => {
            let s = st.as_ref().filter(|s| s.between_passes() && s.alive())?;
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

/// Space already on its way back per device of `devs`: what this user's trashes there still
/// hold (`count`: walking trees whose size was not recorded).
pub fn pending_by_dev(
    count: bool,
    devs: &[u64],
    on_line: &mut dyn FnMut(&str),
) -> std::collections::HashMap<u64, u64> {
    let mut found = trash::discover(trash::uid());
    found.trashes.retain(|t| devs.contains(&t.ident.dev));
    let dev_of: std::collections::HashMap<String, u64> = found
        .trashes
        .iter()
        .map(|t| (t.path.to_string_lossy().into_owned(), t.ident.dev))
        .collect();
    let st = collect(found, count, on_line);
    let mut m = std::collections::HashMap::new();
    for s in &st.trashes {
        if let Some(dev) = dev_of.get(&s.trash) {
            let e = m.entry(*dev).or_insert(0u64);
            *e = e.saturating_add(s.pending_bytes);
        }
    }
    m
}
