//! Selection on `reclaim rm -r` (issue 22; docs/ARCHITECTURE.md): which entries below the named directories are
//! removed, decided entry by entry by the engine's worker that removes them. Owns the tests
//! (name and path globs, exclusions, depth, type, age, size, owner, emptiness), what a
//! matched directory means, the per-owner and per-directory totals, the audit list, the age
//! histogram of `--keep-free` and the grouping of `--from` lists. Never prints and never walks:
//! the engine (`remove.rs`) asks it about each entry and reports through its Sink.
//!
//! The rules (also in `rm --help`, the man page and docs/purge-by-age.md):
//! - The named directories are where it searches; they are never removed themselves.
//! - Name, path and type tests (`--name`, `--path`, `--type`) choose entries. A chosen
//!   directory carries its whole contents (`--name cache` removes cache directories whole),
//!   except with `--empty` (then it must be empty itself).
//! - Attribute tests (`--older-than`, `--newer-than`, `--larger-than`, `--smaller-than`,
//!   `--user`, `--group`) hold for every entry removed, on its own inode, also inside a chosen
//!   directory: an old directory never takes a newer file with it.
//! - Non-directories are tested right before their unlink (from `d_type` alone when the tests
//!   allow, else one `statx` with only the fields needed). A directory's own tests read it as
//!   the walk found it, before any of its entries went (as `find -depth` does: removing
//!   entries does not make it new), and it goes only if it is empty by its `rmdir`;
//!   `--prune-empty` also removes the directories the run left empty that its tests keep.
//! - `--exclude` entries are never removed nor entered; `--max-depth N` tests entries at most N
//!   levels below the argument (a chosen directory still goes whole).
//! - Ages are exact (now minus the duration, to the nanosecond), never rounded to days.

pub mod from;
pub mod keepfree;
pub mod list;
pub mod owner;
pub mod tally;

use std::ffi::CStr;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use rustix::fs::{statx, AtFlags, FileType, StatxFlags};
use rustix::io::Errno;

use crate::engine::glob::exclude::{Exclude, Pattern};
use crate::engine::glob::{self, Globs};

/// Which of an inode's times the age tests read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeField {
    /// Last change of the data (find's -mtime, -newermt).
    #[default]
    Mtime,
    /// Last access (find's -atime, -newerat): "least recently used".
    Atime,
    /// Last change of the inode (find's -ctime, -newercmt).
    Ctime,
    /// Creation (find's -newerBt); entries on a file system that does not record it never
    /// pass an age test.
    Btime,
}

/// A `--time` or `--type` value that names no time or type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnknownValue {
    #[error("'{0}' is not a time (use mtime, atime, ctime or btime)")]
    Time(String),
    /// One letter of the list (the others may be right).
    #[error("'{0}' is not a type (use f, d, l, p, s, b, c, comma-separated)")]
    Type(String),
}

impl TimeField {
    pub fn parse(s: &str) -> Result<TimeField, UnknownValue> {
        match s {
            "mtime" => Ok(TimeField::Mtime),
            "atime" => Ok(TimeField::Atime),
            "ctime" => Ok(TimeField::Ctime),
            "btime" => Ok(TimeField::Btime),
            _ => Err(UnknownValue::Time(s.to_string())),
        }
    }

    fn flag(self) -> StatxFlags {
        match self {
            TimeField::Mtime => StatxFlags::MTIME,
            TimeField::Atime => StatxFlags::ATIME,
            TimeField::Ctime => StatxFlags::CTIME,
            TimeField::Btime => StatxFlags::BTIME,
        }
    }
}

/// One letter of `--type` (find's): f d l p s b c.
pub fn parse_types(s: &str) -> Result<u8, UnknownValue> {
    let mut mask = 0;
    for part in s.split(',') {
        mask |= match part.trim() {
            "f" => kind_bit(FileType::RegularFile),
            "d" => kind_bit(FileType::Directory),
            "l" => kind_bit(FileType::Symlink),
            "p" => kind_bit(FileType::Fifo),
            "s" => kind_bit(FileType::Socket),
            "b" => kind_bit(FileType::BlockDevice),
            "c" => kind_bit(FileType::CharacterDevice),
            other => return Err(UnknownValue::Type(other.to_string())),
        };
    }
    Ok(mask)
}

fn kind_bit(t: FileType) -> u8 {
    match t {
        FileType::RegularFile => 1,
        FileType::Directory => 2,
        FileType::Symlink => 4,
        FileType::Fifo => 8,
        FileType::Socket => 16,
        FileType::BlockDevice => 32,
        FileType::CharacterDevice => 64,
        _ => 0,
    }
}

/// A point in time, as statx gives it.
pub type Stamp = (i64, u32);

fn stamp(t: SystemTime) -> Stamp {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let (s, n) = (d.as_secs() as i64, d.subsec_nanos());
            if n == 0 {
                (-s, 0)
            } else {
                (-s - 1, 1_000_000_000 - n)
            }
        }
    }
}

/// `now` minus `d`, exactly.
fn before(now: Stamp, d: Duration) -> Stamp {
    let mut secs = now.0 - d.as_secs() as i64;
    let mut nanos = now.1 as i64 - d.subsec_nanos() as i64;
    if nanos < 0 {
        nanos += 1_000_000_000;
        secs -= 1;
    }
    (secs, nanos as u32)
}

/// The selection as asked on the command line, before it is compiled.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub names: Vec<String>,
    pub paths: Vec<String>,
    pub exclude: Vec<Pattern>,
    pub max_depth: Option<u32>,
    pub older_than: Option<Duration>,
    pub newer_than: Option<Duration>,
    pub time: TimeField,
    pub larger_than: Option<u64>,
    pub smaller_than: Option<u64>,
    /// Bits of `parse_types`; 0: any type.
    pub types: u8,
    pub users: Vec<u32>,
    pub groups: Vec<u32>,
    pub empty: bool,
    pub prune_empty: bool,
}

impl Spec {
    /// Whether any test or selection option was given.
    pub fn is_active(&self) -> bool {
        !self.names.is_empty()
            || !self.paths.is_empty()
            || !self.exclude.is_empty()
            || self.max_depth.is_some()
            || self.older_than.is_some()
            || self.newer_than.is_some()
            || self.larger_than.is_some()
            || self.smaller_than.is_some()
            || self.types != 0
            || !self.users.is_empty()
            || !self.groups.is_empty()
            || self.empty
            || self.prune_empty
    }
}

/// Why a selection cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("--{flag} '{glob}': {why}")]
    Glob {
        flag: &'static str,
        glob: String,
        why: glob::GlobError,
    },
    #[error("--older-than {older:?} and --newer-than {newer:?} select nothing together (the entry would have to be older than {older:?} and newer than {newer:?})")]
    EmptyAge { older: Duration, newer: Duration },
    #[error("--larger-than {larger} and --smaller-than {smaller} select nothing together")]
    EmptySize { larger: u64, smaller: u64 },
}

/// What an entry's place (its name, path, depth and `d_type`) says, before any stat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Excluded: never removed (its directory stays).
    Excluded,
    /// Not chosen (name, path, depth or type); it stays.
    Out,
    /// Inside a chosen directory: only the attribute tests remain.
    Carried,
    /// Chosen by name, path and type: the attribute tests remain.
    Chosen,
    /// Chosen by name and path, but `d_type` did not tell its type: a stat will.
    ChosenIfType,
}

impl Place {
    /// Whether it may still be removed (after its attribute tests).
    pub fn candidate(self) -> bool {
        matches!(self, Place::Carried | Place::Chosen | Place::ChosenIfType)
    }
}

/// Where the entries of one directory are: what `place` needs to know about their directory.
pub struct Here {
    /// Depth of the entries below the argument (1: directly in it).
    pub depth: u32,
    /// The directory is chosen or inside a chosen one: its entries are carried.
    pub carried: bool,
    /// The directory's path relative to the argument (empty for the argument itself), when
    /// some glob looks at paths.
    pub rel: Option<Vec<u8>>,
}

impl Here {
    /// The relative path of entry `name` of this directory.
    fn rel_of(&self, name: &[u8]) -> Vec<u8> {
        let mut p = self.rel.clone().unwrap_or_default();
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(name);
        p
    }
}

/// The facts of one entry the tests read (only those asked for are filled in).
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    pub kind: FileType,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    /// The time the age tests read; `None` if the file system does not record it (btime).
    pub time: Option<Stamp>,
    pub allocated: u64,
    pub nlink: u32,
    /// Whether the file system said how many blocks and links it has (statx's mask): only
    /// then does the stat tell that it is not a large file for the gentle path.
    pub counted: bool,
}

impl Stat {
    /// Certainly not what the gentle path shrinks (`shrink::candidate` for a file in a tree):
    /// it can be unlinked at once, without a second stat.
    pub fn small(&self) -> bool {
        use crate::engine::shrink::{candidate_of, Found};
        self.kind != FileType::RegularFile
            || (self.counted && !candidate_of(self.kind, self.allocated, self.nlink, Found::InTree))
    }
}

/// The fields a stat must have for `Stat::small`.
const COUNTED: StatxFlags = StatxFlags::BLOCKS.union(StatxFlags::NLINK);

/// A compiled selection, shared by the engine's workers.
#[derive(Debug)]
pub struct Selection {
    names: Globs,
    paths: Globs,
    exclude: Exclude,
    max_depth: u32,
    types: u8,
    time: TimeField,
    /// Entries whose time is at or before this pass `--older-than`.
    older: Option<Stamp>,
    /// Entries whose time is after this pass `--newer-than`.
    newer: Option<Stamp>,
    larger: Option<u64>,
    smaller: Option<u64>,
    users: Vec<u32>,
    groups: Vec<u32>,
    empty: bool,
    pub prune_empty: bool,
    /// Chosen directories carry their contents.
    carries: bool,
    now: Stamp,
    /// Stat every removed entry: bytes, owners (a dry run, a report, a histogram).
    pub counting: bool,
    /// Totals per top-level directory and per owner (`--dry-run`, `--json`).
    pub tally: Option<tally::Tally>,
    /// `--list FILE`.
    pub list: Option<list::List>,
    /// `--keep-free`'s first walk: the selected bytes by age (nothing is removed).
    pub histogram: Option<keepfree::Histogram>,
    /// Set when the run must remove nothing more (`--keep-free` reached its target).
    stop: AtomicBool,
    /// `--keep-free`'s cutoff, once the first walk fixed it: only entries at or before it go.
    cutoff: std::sync::OnceLock<Stamp>,
    /// The roots go too, whole (`--from`'s listed directories), not only what is below them.
    pub roots_too: bool,
    /// `--list`'s own file (device, inode), when it is a regular file: never removed, even
    /// if it lies in a searched directory and matches (the audit trail would go with it).
    pub own_list: Option<crate::sys::dirfd::Ident>,
}

impl Selection {
    /// Compiles `spec`; ages count from `now`.
    pub fn new(spec: &Spec, now: SystemTime) -> Result<Selection, SpecError> {
        let compile = |flag: &'static str, globs: &[String]| {
            globs
                .iter()
                .map(|g| {
                    glob::compile(g).map_err(|why| SpecError::Glob {
                        flag,
                        glob: g.clone(),
                        why,
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let names = Globs::new(compile("name", &spec.names)?);
        // A path glob is relative to the argument: a leading "/" or "./" anchors nothing more.
        let paths: Vec<String> = spec
            .paths
            .iter()
            .map(|p| {
                p.strip_prefix("./")
                    .or_else(|| p.strip_prefix('/'))
                    .unwrap_or(p)
                    .trim_end_matches('/')
                    .to_string()
            })
            .collect();
        let paths = Globs::new(compile("path", &paths)?);
        if let (Some(older), Some(newer)) = (spec.older_than, spec.newer_than) {
            // Older than `older` and newer than `newer`: only if `newer` is the longer.
            if newer <= older {
                return Err(SpecError::EmptyAge { older, newer });
            }
        }
        if let (Some(larger), Some(smaller)) = (spec.larger_than, spec.smaller_than) {
            if smaller <= larger.saturating_add(1) {
                return Err(SpecError::EmptySize { larger, smaller });
            }
        }
        let now = stamp(now);
        Ok(Selection {
            carries: (!names.is_empty() || !paths.is_empty()) && !spec.empty,
            names,
            paths,
            exclude: Exclude::new(&spec.exclude),
            max_depth: spec.max_depth.unwrap_or(u32::MAX),
            types: spec.types,
            time: spec.time,
            older: spec.older_than.map(|d| before(now, d)),
            newer: spec.newer_than.map(|d| before(now, d)),
            larger: spec.larger_than,
            smaller: spec.smaller_than,
            users: spec.users.clone(),
            groups: spec.groups.clone(),
            empty: spec.empty,
            prune_empty: spec.prune_empty,
            now,
            counting: false,
            tally: None,
            list: None,
            histogram: None,
            stop: AtomicBool::new(false),
            cutoff: std::sync::OnceLock::new(),
            roots_too: false,
            own_list: None,
        })
    }

    /// Sets `--keep-free`'s cutoff: from now on only entries whose time is at or before it go.
    pub fn set_cutoff(&self, cutoff: Stamp) {
        let _ = self.cutoff.set(cutoff);
    }

    /// Whether an age test applies (asked, or `--keep-free`'s cutoff).
    fn ages(&self) -> bool {
        self.older.is_some() || self.newer.is_some() || self.cutoff.get().is_some()
    }

    /// The moment ages count from.
    pub fn now(&self) -> Stamp {
        self.now
    }

    pub fn time_field(&self) -> TimeField {
        self.time
    }

    /// Whether some glob looks at paths (the engine then builds relative paths).
    pub fn needs_path(&self) -> bool {
        !self.paths.is_empty() || self.exclude.needs_path()
    }

    /// Whether the entry with inode `ino` on device `dev` is `--list`'s own file.
    pub fn is_own_list(&self, dev: Option<u64>, ino: u64) -> bool {
        self.own_list
            .is_some_and(|o| o.ino == ino && dev.is_some_and(|d| d == o.dev))
    }

    /// Removes nothing more from now on.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether name and path choose `name` (the place tests other than type).
    fn named(&self, here: &Here, name: &[u8]) -> bool {
        (self.names.is_empty() || self.names.is_match(name))
            && (self.paths.is_empty() || self.paths.is_match(&here.rel_of(name)))
    }

    fn type_ok(&self, t: FileType) -> bool {
        self.types == 0 || self.types & kind_bit(t) != 0
    }

    /// A non-directory entry (by `d_type`; `Unknown` if the file system did not say) of the
    /// directory `here`.
    pub fn place(&self, here: &Here, name: &[u8], dtype: FileType) -> Place {
        let dir = dtype == FileType::Directory;
        if !self.exclude.is_empty() && self.exclude.excludes(name, || here.rel_of(name), dir) {
            return Place::Excluded;
        }
        if here.carried {
            return Place::Carried;
        }
        if here.depth > self.max_depth || !self.named(here, name) {
            return Place::Out;
        }
        if self.types == 0 {
            Place::Chosen
        } else if dtype == FileType::Unknown {
            Place::ChosenIfType
        } else if self.type_ok(dtype) {
            Place::Chosen
        } else {
            Place::Out
        }
    }

    /// For subdirectory `name` of the directory `here`: `None` if the walk leaves it out
    /// (excluded, or nothing in it nor itself can be chosen: its parent stays), else whether
    /// its entries are carried.
    pub fn descend(&self, here: &Here, name: &[u8]) -> Option<bool> {
        if !self.exclude.is_empty() && self.exclude.excludes(name, || here.rel_of(name), true) {
            return None;
        }
        if here.carried {
            return Some(true);
        }
        if here.depth > self.max_depth {
            return None;
        }
        let chosen = self.named(here, name) && self.type_ok(FileType::Directory);
        if chosen && self.carries {
            return Some(true);
        }
        // At the last depth only the directory itself can still be chosen.
        if here.depth == self.max_depth && !chosen {
            return None;
        }
        Some(false)
    }

    /// Whether directory `name` of `here` is chosen itself (it is removed if its attribute
    /// tests pass right before its rmdir and it is empty by then).
    pub fn dir_chosen(&self, here: &Here, name: &[u8]) -> bool {
        here.carried
            || (here.depth <= self.max_depth
                && self.named(here, name)
                && self.type_ok(FileType::Directory))
    }

    /// Whether the chosen directory `name` of `here` carries its contents.
    pub fn carries(&self, here: &Here, name: &[u8]) -> bool {
        here.carried
            || (self.carries
                && here.depth <= self.max_depth
                && self.named(here, name)
                && self.type_ok(FileType::Directory))
    }

    /// Whether an entry of type `dtype` (maybe `Unknown`) needs a stat before its unlink.
    pub fn needs_stat(&self, place: Place) -> bool {
        self.counting
            || place == Place::ChosenIfType
            || self.ages()
            || self.larger.is_some()
            || self.smaller.is_some()
            || !self.users.is_empty()
            || !self.groups.is_empty()
            || (self.empty && place != Place::Carried)
    }

    fn mask(&self) -> StatxFlags {
        // Blocks and links come with the inode (no extra cost): the gentle path's test and
        // the bytes freed read them.
        let mut m = StatxFlags::TYPE | COUNTED;
        if self.ages() || self.histogram.is_some() {
            m |= self.time.flag();
        }
        if self.larger.is_some() || self.smaller.is_some() || self.empty {
            m |= StatxFlags::SIZE;
        }
        if !self.users.is_empty() || self.tally.is_some() {
            m |= StatxFlags::UID;
        }
        if !self.groups.is_empty() {
            m |= StatxFlags::GID;
        }
        m
    }

    /// One `statx` of `name` in `dir` (not following a symlink; `""`: `dir` itself) with only
    /// the fields the tests need.
    pub fn stat<Fd: AsFd>(&self, dir: Fd, name: &CStr) -> Result<Stat, Errno> {
        let flags = if name.is_empty() {
            AtFlags::SYMLINK_NOFOLLOW | AtFlags::EMPTY_PATH
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        let s = statx(dir, name, flags, self.mask())?;
        let time = match self.time {
            TimeField::Mtime => Some(s.stx_mtime),
            TimeField::Atime => Some(s.stx_atime),
            TimeField::Ctime => Some(s.stx_ctime),
            TimeField::Btime => (s.stx_mask & StatxFlags::BTIME.bits() != 0).then_some(s.stx_btime),
        };
        Ok(Stat {
            kind: FileType::from_raw_mode(s.stx_mode.into()),
            size: s.stx_size,
            uid: s.stx_uid,
            gid: s.stx_gid,
            time: time.map(|t| (t.tv_sec, t.tv_nsec)),
            allocated: s.stx_blocks * 512,
            nlink: s.stx_nlink,
            counted: s.stx_mask & COUNTED.bits() == COUNTED.bits(),
        })
    }

    /// Whether the age tests cannot judge this entry: its file system did not give the time
    /// they read (`--time btime` where creation times are not recorded). It stays.
    pub fn untimed(&self, st: &Stat) -> bool {
        self.ages() && st.time.is_none()
    }

    /// Whether the file system of the directory `dir` records the time the age tests read
    /// (only creation times may be missing). A stat that fails says yes: the walk meets the
    /// error itself.
    pub fn records_time<Fd: AsFd>(&self, dir: Fd) -> bool {
        if self.time != TimeField::Btime || !self.ages() {
            return true;
        }
        let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::EMPTY_PATH;
        statx(dir, c"", flags, StatxFlags::BTIME)
            .map_or(true, |s| s.stx_mask & StatxFlags::BTIME.bits() != 0)
    }

    /// The attribute tests on an entry's own facts. `carried`: inside a chosen directory (the
    /// type and emptiness tests were the chosen directory's).
    pub fn attributes(&self, st: &Stat, carried: bool) -> bool {
        let dir = st.kind == FileType::Directory;
        if !carried {
            if !self.type_ok(st.kind) {
                return false;
            }
            // A directory reaches this test only when it is empty (its rmdir decides).
            if self.empty && !dir && !(st.kind == FileType::RegularFile && st.size == 0) {
                return false;
            }
        }
        if self.ages() {
            let Some(t) = st.time else { return false };
            if self.older.is_some_and(|o| t > o)
                || self.newer.is_some_and(|n| t <= n)
                || self.cutoff.get().is_some_and(|c| t > *c)
            {
                return false;
            }
        }
        if self.larger.is_some_and(|l| st.size <= l) || self.smaller.is_some_and(|s| st.size >= s) {
            return false;
        }
        if !self.users.is_empty() && !self.users.contains(&st.uid) {
            return false;
        }
        if !self.groups.is_empty() && !self.groups.contains(&st.gid) {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests;

/// What a selection adds to `reclaim rm`'s summary (`"selection"` in `--json`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Report {
    /// Totals per top-level directory below each PATH (per listed parent with `--from`) and
    /// per owner; a dry run or `--json` only (they cost a stat per entry).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub totals: Option<tally::Report>,
    /// `--from`: paths listed more than once (each removed once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<u64>,
    /// `--list`: where the audit list went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<crate::sys::quote::PathField>,
    /// `--keep-free`: the target, what the first walk found and where it cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_free: Option<keepfree::KeepFreeOutcome>,
}
