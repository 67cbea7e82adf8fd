//! What one `reclaim scan` found, as it is reported: totals, histogram, top lists, roots,
//! errors, the estimate; `--json` prints `ScanReport` exactly (`ui::scan` words it).

use serde::Serialize;

use super::estimate::Calibration;
use super::histogram::Bucket;
use super::tally::Counts;
use crate::sys::quote::PathField;

/// The whole result of one `reclaim scan`; `--json` prints exactly this.
#[derive(Debug, Serialize)]
pub struct ScanReport {
    /// The PATHs, as given (lossy UTF-8).
    pub paths: Vec<String>,
    /// Totals over all PATHs.
    #[serde(flatten)]
    pub totals: Counts,
    /// Files below this many bytes count as small (`--small`).
    pub small_threshold: u64,
    /// Regular files by apparent size, each inode once; only non-empty buckets.
    pub histogram: Vec<Bucket>,
    /// The `--exclude` globs, as given (how many entries they left out: `excluded`).
    pub exclude: Vec<String>,
    /// Directories with the most allocated bytes, themselves and all below them (as `du -x`).
    pub top_by_allocated_bytes: Vec<TopEntry>,
    /// Directories with the most regular files directly inside.
    pub top_by_files: Vec<TopEntry>,
    /// Directories with the most small regular files directly inside.
    pub top_by_small_files: Vec<TopEntry>,
    /// The largest regular files by allocated bytes, each inode once.
    pub largest_files: Vec<FileEntry>,
    /// Subtrees to pack into one archive (`reclaim pack`): nine in ten files small, none
    /// newer than the rule says; none inside another; the most files first.
    pub pack_candidates: Vec<PackEntry>,
    /// How many each list was chosen from: the lists hold the first `--top`.
    pub listed_of: ListedOf,
    pub pack_rule: PackRule,
    /// Per PATH, in the order given.
    pub roots: Vec<RootEntry>,
    /// Mount points inside that were not entered (other file systems, bind mounts).
    pub skipped_mounts: Vec<String>,
    pub errors: Vec<ErrorEntry>,
    /// `null` with `--no-estimate`.
    pub estimate: Option<Estimate>,
    pub elapsed_s: f64,
    pub threads: usize,
    /// The file system profile of the first directory (it chose the workers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::engine::profile::Profile>,
    /// Under MPI: what each rank counted (names, directories, allocated bytes, errors).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<crate::engine::spread::Rank>,
}

/// One directory of a top list; every list has every number.
#[derive(Debug, Serialize)]
pub struct TopEntry {
    #[serde(flatten)]
    pub path: PathField,
    /// Allocated bytes of the directory and everything counted below it (each inode once).
    pub tree_allocated_bytes: u64,
    /// Regular files (names) at any depth below it.
    pub tree_files: u64,
    /// Regular files (names) directly inside.
    pub files: u64,
    /// Of those, smaller than `--small`.
    pub small_files: u64,
}

/// How many each list was chosen from: directories with a count (a directory with no small
/// file is in no list of small files), files with allocated bytes, pack candidates.
#[derive(Debug, Default, Serialize)]
pub struct ListedOf {
    pub top_by_allocated_bytes: u64,
    pub top_by_files: u64,
    pub top_by_small_files: u64,
    pub largest_files: u64,
    pub pack_candidates: u64,
}

/// One of the largest files.
#[derive(Debug, Serialize)]
pub struct FileEntry {
    #[serde(flatten)]
    pub path: PathField,
    pub allocated_bytes: u64,
    pub apparent_bytes: u64,
}

/// A pack candidate.
#[derive(Debug, Serialize)]
pub struct PackEntry {
    #[serde(flatten)]
    pub path: PathField,
    /// Regular files below it (they become one file).
    pub files: u64,
    pub small_files: u64,
    pub tree_allocated_bytes: u64,
    pub apparent_bytes: u64,
    /// At least this much comes back (allocated minus the data, before compression).
    pub saves_bytes: u64,
    /// Its newest mtime (or atime), seconds since the epoch.
    pub newest: i64,
    /// The command that packs it.
    pub command: String,
}

/// What made a pack candidate.
#[derive(Debug, Serialize)]
pub struct PackRule {
    pub age_days: u64,
    /// "mtime" or "atime".
    pub time: &'static str,
    pub min_files: u64,
}

#[derive(Debug, Serialize)]
pub struct RootEntry {
    #[serde(flatten)]
    pub path: PathField,
    #[serde(flatten)]
    pub counts: Counts,
}

#[derive(Debug, Serialize)]
pub struct ErrorEntry {
    #[serde(flatten)]
    pub path: PathField,
    /// What failed: "cannot open directory", "cannot read directory", "cannot stat", ...
    pub op: String,
    pub error: String,
}

/// How long `reclaim rm -r` would take for all PATHs.
#[derive(Debug, Serialize)]
pub struct Estimate {
    /// Seconds, warm cache; `null` when some file system could not be calibrated.
    pub seconds: Option<f64>,
    /// Why there is no estimate (read-only file system, no place outside the scanned tree,
    /// ...): the `detail`s of `not_estimated`, joined.
    pub unavailable: Option<String>,
    /// Each PATH whose file system was not calibrated, and why.
    pub not_estimated: Vec<NotEstimated>,
    /// One per file system calibrated.
    pub calibrations: Vec<Calibration>,
    /// A cache directory not used for the calibration because someone else could own it
    /// (also said on stderr).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A PATH (the first directory PATH of its file system) whose file system was not calibrated.
#[derive(Debug, Serialize)]
pub struct NotEstimated {
    #[serde(flatten)]
    pub path: PathField,
    /// `read-only`, `no-place-outside-tree` (the calibration never writes inside a scanned
    /// tree), `calibration-failed`.
    pub reason: &'static str,
    /// For people.
    pub detail: String,
}
