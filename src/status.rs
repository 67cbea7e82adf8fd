//! `reclaim status`: what waits in each trash this user may see (entries, files, allocated
//! bytes, which are in their grace window, which are being freed) and the reaper working on
//! it (pid, rate, ETA) — like ZFS's `freeing`. Reads only.

use serde::Serialize;

use crate::dirfd;
use crate::reaper::{self, state};
use crate::report::{bytes, group};
use crate::trash::meta::{now_unix, Meta};
use crate::trash::{self, Trash, DATA, REAPING};

#[derive(Debug, Serialize)]
pub struct Status {
    pub trashes: Vec<TrashStatus>,
}

#[derive(Debug, Serialize)]
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
    pub items: Vec<Item>,
}

#[derive(Debug, Serialize)]
pub struct ReaperStatus {
    pub pid: u32,
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
}

#[derive(Debug, Serialize)]
pub struct Item {
    pub id: String,
    pub original: String,
    pub kind: String,
    /// "pending", "grace" or "reaping".
    pub state: String,
    pub allocated: Option<u64>,
    pub files: Option<u64>,
    pub created_unix: Option<f64>,
    pub grace_until_unix: Option<f64>,
}

/// The status of every trash in `trashes`; `count` walks pending trees of unknown size.
pub fn collect(trashes: &[Trash], count: bool) -> Status {
    Status {
        trashes: trashes.iter().map(|t| of_trash(t, count)).collect(),
    }
}

fn of_trash(t: &Trash, count: bool) -> TrashStatus {
    let now = now_unix();
    let mut items = Vec::new();
    for name in t.entries() {
        let Ok(entry) = dirfd::open_dir_at(&t.dir, &name) else {
            continue;
        };
        let m = Meta::read(&entry);
        let data = dirfd::lstat_at(&entry, DATA).ok();
        let reaping = data.is_none();
        if data.is_none() && dirfd::lstat_at(&entry, REAPING).is_err() && m.is_none() {
            continue; // debris of an interrupted hide
        }
        let is_dir = m.as_ref().is_some_and(|m| m.kind == "dir");
        let mut files = m.as_ref().and_then(|m| m.files);
        let allocated = if !is_dir {
            Some(trash::entry_allocated(&entry))
        } else if count {
            // What is left of it now (a tree being reaped shrinks).
            let entry = std::sync::Arc::new(entry);
            let inner = if data.is_some() { DATA } else { REAPING };
            let shown = t.shown(&name, Some(inner));
            let (bytes, n) = crate::remove::measure(&entry, inner, &shown);
            files = Some(n);
            Some(bytes)
        } else {
            m.as_ref().and_then(|m| m.allocated)
        };
        let state = if reaping {
            "reaping"
        } else if m.as_ref().is_some_and(|m| m.in_grace(now)) {
            "grace"
        } else {
            "pending"
        };
        items.push(Item {
            id: name.to_string_lossy().into_owned(),
            original: m
                .as_ref()
                .map_or_else(|| "?".into(), |m| m.original.clone()),
            kind: m.as_ref().map_or_else(|| "?".into(), |m| m.kind.clone()),
            state: state.into(),
            allocated,
            files,
            created_unix: m.as_ref().map(|m| m.created_unix),
            grace_until_unix: m.as_ref().and_then(|m| m.grace_until_unix),
        });
    }
    let pending_bytes = items.iter().filter_map(|i| i.allocated).sum();
    let unknown = items.iter().any(|i| i.allocated.is_none());
    let reaper = reaper::holder(t).map(|pid| {
        let st = state::read(&t.dir).filter(|s| s.pid == pid);
        let rate = st.as_ref().map_or(0.0, |s| s.rate_bps);
        let files = st.as_ref().map_or(0, |s| s.files);
        let secs = st
            .as_ref()
            .map_or(0.0, |s| (s.updated_unix - s.started_unix).max(0.0));
        ReaperStatus {
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
        }
    });
    TrashStatus {
        trash: t.path.to_string_lossy().into_owned(),
        mount: t.mount.to_string_lossy().into_owned(),
        uid: t.uid,
        entries: items.len() as u64,
        pending_bytes,
        pending_files: items.iter().filter_map(|i| i.files).sum(),
        unknown_size: items.iter().filter(|i| i.allocated.is_none()).count() as u64,
        reaper,
        items,
    }
}

impl Status {
    /// The human report: one paragraph per trash with anything in it.
    pub fn human(&self) -> String {
        let busy: Vec<&TrashStatus> = self
            .trashes
            .iter()
            .filter(|t| t.entries > 0 || t.reaper.is_some())
            .collect();
        if busy.is_empty() {
            return "nothing pending: no trash holds entries".into();
        }
        let now = now_unix();
        let mut s = String::new();
        for t in busy {
            let unknown = if t.unknown_size > 0 {
                format!(
                    " (+{} trees of unknown size: `reclaim status --count` walks them)",
                    t.unknown_size
                )
            } else {
                String::new()
            };
            s.push_str(&format!(
                "{} (file system at {}): {} entries, {} files, {} pending{unknown}\n",
                t.trash,
                t.mount,
                group(t.entries),
                group(t.pending_files),
                bytes(t.pending_bytes),
            ));
            match &t.reaper {
                Some(r) => {
                    let eta = match r.eta_s {
                        Some(e) => format!("ETA {}", secs(e)),
                        None if t.unknown_size > 0 => "ETA ? (a tree of unknown size)".into(),
                        None => "ETA ?".into(),
                    };
                    s.push_str(&format!(
                        "  reaper {} {}: {}/s, {} freed and {} files removed so far ({} files/s), {eta}{}\n",
                        r.pid,
                        r.state,
                        bytes(r.rate_bps as u64),
                        bytes(r.freed_bytes),
                        group(r.files),
                        group(r.files_per_s as u64),
                        r.entry
                            .as_ref()
                            .map(|e| format!(" (now: '{e}')"))
                            .unwrap_or_default()
                    ));
                }
                None if t.entries > 0 => {
                    s.push_str("  no reaper running: `reclaim reap` frees it\n");
                }
                None => {}
            }
            for i in &t.items {
                let size = i.allocated.map_or_else(|| "?".into(), bytes);
                let when = match (i.state.as_str(), i.grace_until_unix) {
                    ("grace", Some(g)) => format!(", restorable for {}", secs(g - now)),
                    _ => String::new(),
                };
                s.push_str(&format!(
                    "  {}  {:<7} {:>10}  {} '{}'{when}\n",
                    i.id, i.state, size, i.kind, i.original
                ));
            }
        }
        s.pop();
        s
    }
}

fn secs(s: f64) -> String {
    let s = s.max(0.0);
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// `reclaim status [--json] [--count]`; returns the exit code.
pub fn command(json: bool, count: bool) -> u8 {
    let st = collect(&trash::discover(trash::uid()), count);
    if json {
        println!("{}", serde_json::to_string(&st).expect("status serializes"));
    } else {
        println!("{}", st.human());
    }
    0
}
