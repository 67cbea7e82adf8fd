//! The running reaper's live state, `reaper.json` in its trash: what it is doing, how fast
//! space comes back (statvfs of the file system, over the last seconds). Written atomically
//! under a fresh name then renamed (never through a name someone else made) about twice a
//! second; `reclaim status` reads it as hostile input. A reaper that only waits for grace
//! windows holds nothing open and is known by this file alone (pid and start time).

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::sys::format::now_unix;
use crate::trash::{safefile, STATUS};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ReaperState {
    pub pid: u32,
    /// The process's start time (clock ticks after boot, `/proc/PID/stat`), so a reused pid is
    /// not taken for the reaper.
    #[serde(default)]
    pub pid_start: u64,
    /// "freeing", "finishing" (its last look at the trash before it waits), "waiting"
    /// (entries in their grace window; holding nothing) or "idle" (watching).
    pub state: String,
    /// Original path of the entry being freed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    pub started_unix: f64,
    pub updated_unix: f64,
    /// Bytes the file system got back since the reaper started (statvfs).
    pub freed_bytes: u64,
    pub files: u64,
    /// Bytes per second coming back, over the last few seconds.
    pub rate_bps: f64,
    /// When the earliest entry in its grace window becomes due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_due_unix: Option<f64>,
    /// The entry being freed: its size and files as recorded (when known), and `freed_bytes`
    /// and `files` when it started, for its own progress and ETA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_files: Option<u64>,
    #[serde(default)]
    pub entry_freed_base: u64,
    #[serde(default)]
    pub entry_files_base: u64,
    #[serde(default)]
    pub entry_started_unix: f64,
    /// The entry is a tree (a file's shrink reports its own progress).
    #[serde(default)]
    pub entry_tree: bool,
}

const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Keeps `ReaperState` current and on disk.
pub struct StateFile<'t> {
    dir: &'t OwnedFd,
    owner: u32,
    state: Mutex<Books>,
    /// Whether there is anything to tell yet (an entry is being freed): a pass that finds
    /// nothing to do leaves the trash untouched (the `--watch` supervisor would otherwise see
    /// a changed trash after every pass and start another).
    active: std::sync::atomic::AtomicBool,
}

/// The state, free-space samples of the last seconds, and free space at the start.
type Books = (ReaperState, VecDeque<(Instant, u64)>, u64);

impl<'t> StateFile<'t> {
    /// The state of this process's reaping of the trash `dir`, owned by `owner`.
    pub fn new(dir: &'t OwnedFd, owner: u32) -> Self {
        let free = free_bytes(dir);
        let now = now_unix();
        StateFile {
            dir,
            owner,
            state: Mutex::new((
                ReaperState {
                    pid: std::process::id(),
                    pid_start: crate::sys::process::start_time(std::process::id()).unwrap_or(0),
                    state: "freeing".into(),
                    started_unix: now,
                    updated_unix: now,
                    ..ReaperState::default()
                },
                VecDeque::from([(Instant::now(), free)]),
                free,
            )),
            active: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// From now on the file is kept (the reaper started freeing something).
    pub fn activate(&self) {
        self.active
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Changes what the reaper says it does, and writes the file.
    pub fn set(&self, f: impl FnOnce(&mut ReaperState)) {
        {
            let mut g = self.state.lock().expect("state lock");
            f(&mut g.0);
        }
        self.write();
    }

    /// The state as last written.
    pub fn snapshot(&self) -> ReaperState {
        self.state.lock().expect("state lock").0.clone()
    }

    /// Samples free space and writes the file (call about once a second), once active.
    pub fn write(&self) {
        if !self.active.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let free = free_bytes(self.dir);
        let text = {
            let mut g = self.state.lock().expect("state lock");
            let (st, samples, first) = &mut *g;
            let now = Instant::now();
            samples.push_back((now, free));
            while samples.len() > 2 && now - samples[0].0 > RATE_WINDOW {
                samples.pop_front();
            }
            let (t0, f0) = samples[0];
            let secs = (now - t0).as_secs_f64();
            st.rate_bps = if secs > 0.2 {
                free.saturating_sub(f0) as f64 / secs
            } else {
                st.rate_bps
            };
            st.freed_bytes = free.saturating_sub(*first);
            st.updated_unix = now_unix();
            serde_json::to_vec(st).expect("state serializes")
        };
        let _ = safefile::replace(self.dir, STATUS, &text);
    }

    /// Removes the file (the reaper is leaving), unless a newer reaper wrote it meanwhile or
    /// this one said it waits for a grace window.
    pub fn remove(&self) {
        if !self.active.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        if read(self.dir, self.owner).is_some_and(|st| !st.between_passes()) {
            remove_mine(self.dir, self.owner);
        }
    }
}

/// Writes that this process waits (holding nothing) until `next_due` for the trash `dir`.
pub fn write_waiting(dir: &OwnedFd, next_due: f64) {
    write_between(dir, next_due, "waiting");
}

/// Writes that this process, about to let go of the trash `dir`, will wait until `next_due`
/// (`finishing`: it still holds the trash; `waiting`: it holds nothing).
fn write_between(dir: &OwnedFd, next_due: f64, what: &str) {
    let now = now_unix();
    let st = ReaperState {
        pid: std::process::id(),
        pid_start: crate::sys::process::start_time(std::process::id()).unwrap_or(0),
        state: what.into(),
        started_unix: now,
        updated_unix: now,
        next_due_unix: Some(next_due),
        ..ReaperState::default()
    };
    let _ = safefile::replace(
        dir,
        STATUS,
        &serde_json::to_vec(&st).expect("state serializes"),
    );
}

/// Writes that this process waits until `next_due` for the trash `dir` (of `owner`), unless
/// another live reaper already waits for it at least as early (then that one is its reaper).
pub fn wait_unless_covered(dir: &OwnedFd, owner: u32, next_due: f64) {
    let covered = read(dir, owner).is_some_and(|st| {
        st.pid != std::process::id()
            && st.state == "waiting"
            && st.next_due_unix.is_some_and(|d| d <= next_due)
            && st.alive()
    });
    if !covered {
        write_between(dir, next_due, "finishing");
    }
}

/// Removes the trash `dir`'s `reaper.json` if this process wrote it (a reaper leaving).
pub fn remove_mine(dir: &OwnedFd, owner: u32) {
    if read(dir, owner).is_some_and(|st| st.pid == std::process::id()) {
        let _ = crate::sys::safeopen::unlink_at(dir, STATUS);
    }
}

/// Reads a trash's `reaper.json` (a trash of `owner`); `None` if missing or not a plain record.
pub fn read(dir: &OwnedFd, owner: u32) -> Option<ReaperState> {
    safefile::read_json(dir, STATUS, owner).ok().flatten()
}

impl ReaperState {
    /// Whether the reaper it names is between passes (finishing one, or waiting for a grace
    /// window): known by this file alone, not by the trash's lock.
    pub fn between_passes(&self) -> bool {
        self.state == "waiting" || self.state == "finishing"
    }

    /// Whether the process it names is alive and is the one that wrote it (same start time).
    pub fn alive(&self) -> bool {
        self.pid != 0
            && crate::sys::process::start_time(self.pid).is_some_and(|t| t == self.pid_start)
    }
}

fn free_bytes(dir: &OwnedFd) -> u64 {
    rustix::fs::fstatvfs(dir).map_or(0, |s| s.f_bfree * s.f_frsize)
}
