//! What a removal request asks (`Request`: the paths, the pacing, the mode, the selection,
//! the measurements' overrides), resolved once from the command line (`cli::rm`) or by the
//! command that removes (`prune`), and the few things derived from it: how the engine's big
//! phase starts (`start`: the engine's derived numbers are decided there, `remove::Start::
//! tuned`), the pacing the shrinker takes, a reaper's flags. Only the caller's choices:
//! nothing here acts.

use std::path::PathBuf;

use super::Asked;
use crate::engine::pace::Pacing;
use crate::engine::profile::Class;
use std::sync::Arc;

use crate::engine::pace::tree::Joint;
use crate::engine::remove::{Settings, Start};
use crate::reaper::spawn::pace_args;
use crate::trash::meta::EntryPacing;

/// What is to be removed, and how.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub paths: Vec<PathBuf>,
    pub recursive: bool,
    pub force: bool,
    pub dir: bool,
    /// Every removed entry is told (`Events::removed`), the trees one argument after the
    /// other in the order given.
    pub verbose: bool,
    /// The pacing asked for (`--fast`, `--max-latency`, `--rate`, `--iops`): how large files
    /// are freed, how trees are governed, what trash entries record (a reaper frees them that
    /// way) and the flags of a detached reaper. Trees are paced by the latency probe only when
    /// `--max-latency` was given (`pace_trees`): on an idle xfs the probe sees the removal's own
    /// journal traffic and slowed a 200k-file tree 4.6x, and on the emulated HDD it did not
    /// lower the victims' p99 (bench/RESULTS.md).
    pub pace: EntryPacing,
    /// `--pace-trace`: the pacer's per-window decisions go to this file.
    pub pace_trace: Option<PathBuf>,
    /// `--min-free`: the free space to leave the others. Under it, or falling toward it,
    /// pacing yields; a grace window on a file system already under it is refused (it could
    /// not be kept); reapers started here watch it.
    pub floor: crate::sys::space::Floor,
    /// The engine's options as asked: `--threads` (0: measured from the file system's
    /// profile), `--fd-budget`, `--one-file-system`'s opposite, `--dry-run`, `--stat-files`,
    /// the compiled selection. What the file system decides is added once it is known
    /// (`start`).
    pub engine: Settings,
    /// Foreground, or hide into the trash first (`--background`, `--wait`).
    pub mode: Mode,
    /// `--grace`: how long hidden entries stay restorable before the reaper frees them.
    pub grace: Option<std::time::Duration>,
    /// `--durable`: one fsync per affected directory after its unlinks.
    pub durable: bool,
    /// Sizes (allocated bytes, files) the caller measured, by path as given (prune).
    pub known_sizes: std::collections::HashMap<PathBuf, (u64, u64)>,
    /// `--profile`: the file system class to assume instead of the detected one.
    pub profile: Option<Class>,
    /// Stat small directories' entries or not, whatever the profile says (measurements).
    pub small_dir_stats: Option<bool>,
    /// Workers at once in one directory's batches, whatever the profile says (measurements).
    pub batch_threads: Option<usize>,
    /// The profile, the pool and the governor from the first, not once the trees prove big
    /// (measurements; tests of what they decide).
    pub start_pool: bool,
    /// The bytes freed are said (`--json`, `-v`, a dry run, a terminal): measured as the file
    /// systems give them back (each file system's free space before and after, each single
    /// file's own blocks); otherwise only what is known anyway is counted.
    pub count_bytes: bool,
    /// `--preserve-root=all`: refuse directory arguments that are mount points.
    pub preserve_all_root: bool,
    /// A selection (`--name`, `--older-than`, `--from`, ...: `selected.rs`); compiled in
    /// `engine.select`.
    pub select: Option<Asked>,
    /// Hide the arguments together: one trash entry per directory they are in, holding many
    /// paths (`prune`), instead of an entry each.
    pub batch: bool,
}

impl Request {
    /// How the engine's big phase starts for this removal: the pacing, the floor, the
    /// profile and the measurements' overrides asked, governed where pacing decides
    /// something; under MPI with the job's one governor (rank 0 judges, every rank follows).
    pub(crate) fn start(&self) -> Start {
        let mut start = Start::default();
        start.pace = self.pace.clone();
        start.trace = self.pace_trace.clone();
        start.profile = self.profile;
        start.small_dir_stats = self.small_dir_stats;
        start.batch_threads = self.batch_threads;
        start.govern = true;
        start.floor = self.floor;
        start.at_once = self.start_pool;
        start.joint = crate::engine::spread::job()
            .map(|t| Arc::new(crate::engine::spread::Verdicts::new(t)) as Arc<dyn Joint>);
        start
    }

    /// What the shrinker and the tree governor take of the pacing asked for.
    pub(super) fn pacing(&self) -> Pacing {
        Pacing {
            trace: self.pace_trace.clone(),
            floor: self.floor,
            ..self.pace.pacing()
        }
    }

    /// The flags of a reaper started for this removal: its pacing and floor.
    pub(super) fn reaper_args(&self) -> Vec<std::ffi::OsString> {
        let mut args = pace_args(&self.pace);
        args.push(format!("--min-free={}", self.floor.arg()).into());
        args
    }
}

/// How `reclaim rm` frees space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Remove in the foreground (paced).
    #[default]
    Now,
    /// Hide into the trash; a detached reaper frees it.
    Background,
    /// Hide into the trash, then free it here before returning.
    Wait,
}
