//! The running reaper's live state, `reaper.json` in its trash: what it is doing, how fast
//! space comes back (statvfs of the file system, over the last seconds). Written atomically
//! (temp file + rename) about once a second; `reclaim status` reads it.

use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::fs::{openat, renameat, Mode, OFlags};
use serde::{Deserialize, Serialize};

use crate::trash::meta::now_unix;
use crate::trash::STATUS;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ReaperState {
    pub pid: u32,
    /// "freeing", "waiting" (entries in their grace window) or "idle" (watching).
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
}

const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Keeps `ReaperState` current and on disk.
pub struct StateFile<'t> {
    dir: &'t OwnedFd,
    state: Mutex<Books>,
}

/// The state, free-space samples of the last seconds, and free space at the start.
type Books = (ReaperState, VecDeque<(Instant, u64)>, u64);

impl<'t> StateFile<'t> {
    pub fn new(dir: &'t OwnedFd) -> Self {
        let free = free_bytes(dir);
        let now = now_unix();
        StateFile {
            dir,
            state: Mutex::new((
                ReaperState {
                    pid: std::process::id(),
                    state: "freeing".into(),
                    started_unix: now,
                    updated_unix: now,
                    ..ReaperState::default()
                },
                VecDeque::from([(Instant::now(), free)]),
                free,
            )),
        }
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

    /// Samples free space and writes the file (call about once a second).
    pub fn write(&self) {
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
        let tmp = c"reaper.json.tmp";
        let Ok(fd) = openat(
            self.dir,
            tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) else {
            return;
        };
        if std::fs::File::from(fd).write_all(&text).is_ok() {
            let _ = renameat(self.dir, tmp, self.dir, STATUS);
        }
    }

    /// Removes the file (the reaper is leaving), unless a newer reaper wrote it meanwhile.
    pub fn remove(&self) {
        if read(self.dir).is_some_and(|st| st.pid == std::process::id()) {
            let _ = rustix::fs::unlinkat(self.dir, STATUS, rustix::fs::AtFlags::empty());
        }
    }
}

/// Reads a trash's `reaper.json`.
pub fn read(dir: &OwnedFd) -> Option<ReaperState> {
    crate::trash::meta::read_json(dir, STATUS)
}

fn free_bytes(dir: &OwnedFd) -> u64 {
    rustix::fs::fstatvfs(dir).map_or(0, |s| s.f_bfree * s.f_frsize)
}
