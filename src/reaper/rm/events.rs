//! What a removal tells its caller as it goes (`Events`, `Shrinking`) and the account it returns
//! (`Removal`: its `Summary`, the subvolumes deleted whole, what a stop signal `Left`). Words for
//! the caller to show; never prints.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::pace::PaceReport;
use crate::engine::profile::Profile;
use crate::engine::remove::{self, Sink};
use crate::engine::shrink::Gentle;
use crate::engine::spread::Rank;
use crate::sys::error::{ErrorEntry, Failure};
use crate::sys::quote::PathField;
use crate::trash::hide::Hidden;
use crate::trash::Passed;

/// What a removal tells its caller as it goes, beyond the engine's `Sink` (removed entries,
/// failures as they happen): the caller shows it.
pub trait Events: Sink {
    /// An argument was hidden into a trash as entry `id`; `passed_over`: trash names someone
    /// else had, passed over on the way.
    fn hidden(&self, display: &Path, id: &str, passed_over: &Passed);
    /// Arguments could not go to a trash (`why`, the same for all of them), and are removed
    /// here instead.
    fn fallback(&self, paths: &[PathBuf], why: &str);
    /// Arguments could not go to a trash (`why`, the same for all of them) and stay where
    /// they are: a grace window was asked for (they are among the failures too).
    fn refused(&self, paths: &[PathBuf], why: &str);
    /// An argument gone from its path is an interrupted removal waiting in `trash` as entry
    /// `id`: it is finished now.
    fn resuming(&self, path: &Path, id: &str, trash: &Path);
    /// A large file being shrunk: `freed` of `total` bytes since `started`; the latency other
    /// I/O sees, when measured. `None`: it is done.
    fn shrinking(&self, progress: Option<Shrinking<'_>>);
    /// A reaper's progress (a resumed entry; `--wait`).
    fn reaping(&self, progress: &crate::reaper::Progress<'_>);
    /// `--wait` starts freeing the entries hidden (`true`), or is done (`false`).
    fn waiting(&self, on: bool);
}

/// A large file being shrunk, for `Events::shrinking`.
#[derive(Clone, Copy, Debug)]
pub struct Shrinking<'a> {
    pub path: &'a Path,
    pub freed: u64,
    pub total: u64,
    pub started: Instant,
    pub latency: Option<Duration>,
}

/// The final account of one removal; `reclaim rm --json` prints exactly this.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub files: u64,
    pub dirs: u64,
    pub bytes_freed: u64,
    pub elapsed_s: f64,
    pub files_per_s: f64,
    pub errors: Vec<ErrorEntry>,
    pub skipped_mounts: Vec<String>,
    pub dry_run: bool,
    /// Large files freed gently (shrunk in paced steps), with what it cost other I/O.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gentle: Vec<Gentle>,
    /// How tree removal was paced (probe latency before vs during, back-offs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<PaceReport>,
    /// Targets hidden into a trash (`--background`, `--wait`; empty otherwise).
    pub hidden: Vec<Hidden>,
    /// Targets that could not go to a trash and were removed in the foreground.
    pub fallback: Vec<String>,
    /// The signal that stopped the run before the end, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<i32>,
    /// The file system profile the trees were removed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// The workers the trees were removed with, and why (measured or `--threads`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<crate::engine::pace::concurrency::Report>,
    /// Under MPI: what each rank did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<Rank>,
    /// A selection (`rm -r --name ...`, `--from`): totals per directory and owner, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<crate::engine::select::Report>,
    /// btrfs subvolumes met (targets or inside trees) and how each was removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subvolumes: Vec<SubvolumeEntry>,
}

/// A subvolume in `Summary::subvolumes`.
#[derive(Debug, Serialize)]
pub struct SubvolumeEntry {
    #[serde(flatten)]
    pub path: PathField,
    /// `snap_destroy_v2` or `snap_destroy`: deleted whole by the file system (btrfs's cleaner
    /// frees its blocks afterwards; `status` shows it); `walk`: removed file by file.
    pub how: String,
    /// Its subvolume id, when deleted whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Subvolumes inside it deleted first (their ids).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<u64>,
    /// Why it was walked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl SubvolumeEntry {
    pub(super) fn of(s: &remove::Subvolume) -> Self {
        let path = PathField::new(&s.path);
        match &s.deleted {
            Ok(d) => SubvolumeEntry {
                path,
                how: serde_json::to_value(d.how)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                id: Some(d.id),
                nested: d.nested.clone(),
                why: None,
            },
            Err(why) => SubvolumeEntry {
                path,
                how: "walk".into(),
                id: None,
                nested: Vec::new(),
                why: Some(why.clone()),
            },
        }
    }
}

/// What one removal did: the account, every failure (in the order met) and, after a stop
/// signal, what is left.
#[derive(Debug)]
pub struct Removal {
    pub summary: Summary,
    pub failures: Vec<Failure>,
    /// What a stop signal left, in the order met.
    pub left: Vec<Left>,
    /// Arguments a stop signal came before.
    pub not_started: usize,
}

/// Something a stop signal left undone.
#[derive(Clone, Debug)]
pub enum Left {
    /// The trees (quoted and joined), partly removed.
    Trees(String),
    /// A large file whose shrink stopped, with `bytes` still allocated: in the trash as `entry`
    /// (a reaper was started for it), or under a hidden name in its directory.
    File {
        path: PathField,
        bytes: u64,
        entry: Option<String>,
        hidden: Option<PathField>,
    },
    /// `--background`: `hidden` of `of` arguments were hidden; `untouched` were not started.
    Hid {
        hidden: usize,
        of: usize,
        untouched: usize,
    },
    /// `--wait`: entries left in the trash for a reaper.
    InTrash(u64),
}
