//! Where the files are (`reclaim scan`'s library half). Resolves the PATHs (a symlink named as
//! a PATH is not followed unless written with a trailing slash), runs the parallel walk
//! (`walk`), adds up (`tally`, `histogram`), estimates the removal time (`estimate`), and
//! returns the report (`report`); what happens meanwhile goes to its caller's `Events`.
//!
//! A scan reads only. The one thing it writes is the estimate's private calibration directory
//! (skipped with `--no-estimate`), in reclaim's own cache directory only unless `--estimate`
//! allows other places: never inside a scanned tree, and it removes only what it created.

pub mod estimate;
pub mod export;
pub mod histogram;
pub mod import;
mod partial;
pub mod report;
pub mod tally;
pub mod tree;
pub mod walk;

use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rustix::fs::CWD;
use rustix::io::Errno;

use crate::engine::profile::Class;
use crate::sys::dirfd::Ident;
use crate::sys::error::errno_text;
use crate::sys::quote::PathField;
use report::{
    ErrorEntry, Estimate, FileEntry, ListedOf, NotEstimated, PackEntry, PackRule, RootEntry,
    ScanReport, TopEntry,
};
use tally::Counts;
use walk::{Live, ScanError, Start};

/// What to scan, and how.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    pub paths: Vec<std::ffi::OsString>,
    /// Directories in each top list.
    pub top: usize,
    /// Files smaller than this count as small.
    pub small: u64,
    /// Workers (`None`: as the first directory's file system profile says).
    pub threads: Option<u16>,
    pub cross_mounts: bool,
    pub exclude: Vec<crate::engine::glob::exclude::Pattern>,
    /// No removal-time estimate.
    pub no_estimate: bool,
    /// Calibrate the estimate outside reclaim's cache directory too (`--estimate`): in
    /// `$TMPDIR`, the mount's top or a directory above a PATH.
    pub estimate_anywhere: bool,
    /// The file system class to assume instead of the detected one.
    pub profile: Option<Class>,
    /// What makes a subtree a pack candidate.
    pub pack: crate::engine::pack::candidates::Rule,
    /// `--export FILE`: the whole tree in ncdu's format.
    pub export: Option<PathBuf>,
}

/// What a scan tells its caller as it goes.
pub trait Events: Sync {
    /// A path could not be read (once per failure, as it happens).
    fn error(&self, e: &ScanError);
    /// Something the scan went on without (under MPI: another rank's message unread).
    fn warning(&self, what: &dyn std::fmt::Display);
    /// The walk runs: `live` moves until `done` is set. Called from a thread of its own,
    /// which it may keep until then.
    fn walking(&self, live: &Live, started: Instant, done: &AtomicBool);
    /// The estimate is being calibrated in `place`.
    fn calibrating(&self, place: &Path);
}

/// What a scan found. Under MPI, rank 0 has the report for all ranks; the others none.
pub struct Scanned {
    pub report: Option<ScanReport>,
    /// Some path could not be read.
    pub failed: bool,
    /// `--export`: the file written, or why not. Without a report: refused before the scan
    /// (a usage error).
    pub export: Option<Result<PathBuf, export::ExportError>>,
}

/// Scans `o.paths`, telling `events` as it goes.
pub fn run(o: &ScanOptions, events: &dyn Events) -> Scanned {
    let started = Instant::now();
    // Under MPI, rank 0 names the PATHs' errors and reports for all ranks; each rank names
    // the errors of what it walked.
    let leads = crate::engine::spread::leads();
    let say = |e: &ScanError| events.error(e);
    let (starts, places, mut errors) = resolve_all(&o.paths, leads, &say);
    // No PATH could be opened: each was named with why; there is nothing to report. (Every
    // rank of an MPI job resolves the same PATHs and walks nothing with the others.)
    let nothing = starts.is_empty() && !errors.is_empty();
    let exporting = match &o.export {
        Some(file) if !nothing => match prepare_export(file, &starts, &places) {
            Ok(x) => Some(x),
            Err(e) => {
                return Scanned {
                    report: None,
                    failed: true,
                    export: Some(Err(e)),
                }
            }
        },
        _ => None,
    };
    let first_dir = places.iter().find_map(|p| p.1.as_ref());
    let (profile, threads) = workers(o, first_dir);
    let nofile = crate::sys::limits::raise_nofile();
    let opts = walk::ScanWalkOptions {
        threads,
        cross_mounts: o.cross_mounts,
        small: o.small,
        top: o.top,
        exclude: crate::engine::glob::exclude::Exclude::new(&o.exclude),
        fd_budget: crate::sys::limits::fd_budget(256, nofile, threads),
        pack: Some(o.pack),
        tree: None,
    };
    let live = Live::default();
    let done = AtomicBool::new(false);
    let outcome = std::thread::scope(|s| {
        s.spawn(|| events.walking(&live, started, &done));
        let warn = |w: &dyn std::fmt::Display| events.warning(w);
        let outcome = walk::scan(
            starts,
            &opts,
            &live,
            &say,
            &warn,
            crate::engine::spread::job(),
            exporting.as_ref(),
        );
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        outcome
    });
    let elapsed = started.elapsed();

    if !leads || nothing {
        return Scanned {
            report: None,
            failed: nothing || !outcome.errors.is_empty(),
            export: None,
        };
    }
    let exported = exporting.map(finish_export);
    let estimate = if o.no_estimate || crate::engine::spread::job().is_some() {
        None
    } else {
        Some(estimate_all(
            &places,
            &outcome.per_root,
            o.estimate_anywhere,
            events,
        ))
    };
    errors.extend(outcome.errors);
    let mut ranks = outcome.ranks;

    let mut totals = Counts::default();
    for c in &outcome.per_root {
        totals.merge(c);
    }
    let lossy = |p: &Path| p.to_string_lossy().into_owned();
    let report = ScanReport {
        paths: o.paths.iter().map(|p| lossy(Path::new(p))).collect(),
        totals,
        small_threshold: o.small,
        histogram: outcome.histogram.buckets(),
        exclude: o.exclude.iter().map(|p| p.text.clone()).collect(),
        top_by_allocated_bytes: top(outcome.top_bytes),
        top_by_files: top(outcome.top_files),
        top_by_small_files: top(outcome.top_small),
        largest_files: outcome
            .largest
            .iter()
            .map(|f| FileEntry {
                path: PathField::new(&f.path),
                allocated_bytes: f.allocated,
                apparent_bytes: f.size,
            })
            .collect(),
        pack_candidates: outcome.pack_candidates.iter().map(pack_entry).collect(),
        listed_of: ListedOf {
            top_by_allocated_bytes: outcome.ranked[0],
            top_by_files: outcome.ranked[1],
            top_by_small_files: outcome.ranked[2],
            largest_files: outcome.ranked[3],
            pack_candidates: outcome.pack_candidates_total as u64,
        },
        pack_rule: PackRule {
            age_days: o.pack.age_days,
            time: if o.pack.atime { "atime" } else { "mtime" },
            min_files: o.pack.min_files,
        },
        roots: places
            .iter()
            .zip(outcome.per_root)
            .map(|(p, counts)| RootEntry {
                path: PathField::new(&p.2),
                counts,
            })
            .collect(),
        skipped_mounts: outcome.skipped_mounts.iter().map(|p| lossy(p)).collect(),
        errors: errors
            .iter()
            .map(|e| ErrorEntry {
                path: PathField::new(&e.path),
                op: e.doing.to_string(),
                error: e.reason.clone(),
            })
            .collect(),
        estimate,
        elapsed_s: elapsed.as_secs_f64(),
        threads,
        profile,
        ranks: std::mem::take(&mut ranks),
    };
    Scanned {
        report: Some(report),
        failed: !errors.is_empty() || exported.as_ref().is_some_and(|e| e.is_err()),
        export: exported,
    }
}

/// `--export`: one directory PATH, no MPI job, FILE's directory outside the tree.
fn prepare_export(
    file: &Path,
    starts: &[Start],
    places: &[Place],
) -> Result<export::Export, export::ExportError> {
    let refuse = |why: &str| export::ExportError::Refused {
        file: file.to_path_buf(),
        why: why.into(),
    };
    if crate::engine::spread::job().is_some() {
        return Err(refuse("not supported in an MPI job (scan without mpirun)"));
    }
    match starts {
        [Start::Dir { .. }] => {}
        [_] => return Err(refuse("the PATH is not a directory")),
        _ => return Err(refuse("the export holds one tree: give one PATH")),
    }
    let trees: Vec<Ident> = places
        .iter()
        .filter_map(|(_, fd, _)| fd.as_ref())
        .filter_map(|fd| crate::sys::dirfd::fstat(fd).ok().map(|f| f.ident))
        .collect();
    export::Export::prepare(file, &trees)
}

/// Writes the export on a thread with a stack for the tree's depth (it recurses per level).
fn finish_export(x: export::Export) -> Result<PathBuf, export::ExportError> {
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || x.finish())
        .expect("a thread to write the export")
        .join()
        .expect("the export writer does not panic")
}

/// A pack candidate as the report shows it.
fn pack_entry(c: &crate::engine::pack::candidates::Candidate) -> PackEntry {
    PackEntry {
        path: PathField::new(&c.path),
        files: c.files,
        small_files: c.small_files,
        tree_allocated_bytes: c.allocated,
        apparent_bytes: c.apparent,
        saves_bytes: c.saves(),
        newest: c.newest,
        command: c.command(),
    }
}

/// Per PATH: its device, a dup of its directory fd (for the estimate), the path shown.
type Place = (u64, Option<OwnedFd>, PathBuf);

/// Opens the PATHs: what to walk, where each is, and (when `leads`: rank 0 names them) the
/// ones that could not be opened, each said to `say` too.
fn resolve_all(
    paths: &[std::ffi::OsString],
    leads: bool,
    say: &dyn Fn(&ScanError),
) -> (Vec<Start>, Vec<Place>, Vec<ScanError>) {
    let (mut starts, mut places, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for arg in paths {
        match resolve(arg) {
            Ok(start) => {
                let place = match &start {
                    Start::Dir { display, fd, stat } => {
                        (stat.ident.dev, fd.try_clone().ok(), display.clone())
                    }
                    Start::Entry { display, stat } => (stat.ident.dev, None, display.clone()),
                };
                places.push(place);
                starts.push(start);
            }
            Err(e) => {
                if leads {
                    say(&e);
                    errors.push(e);
                }
            }
        }
    }
    (starts, places, errors)
}

/// The profile of the first directory's file system and the workers it (or `--threads`)
/// says: a stat is a round trip on a network file system, so tens go in flight there.
fn workers(
    o: &ScanOptions,
    first_dir: Option<&OwnedFd>,
) -> (Option<crate::engine::profile::Profile>, usize) {
    let profile = first_dir.map(|fd| crate::engine::profile::Profile::asked(o.profile, fd));
    let threads = match (o.threads, &profile) {
        (Some(n), _) => usize::from(n),
        (None, Some(p)) => p.workers,
        (None, None) => crate::engine::profile::cpus(),
    };
    (profile, threads)
}

/// A top list as reported.
fn top(list: Vec<walk::TopDir>) -> Vec<TopEntry> {
    list.into_iter()
        .map(|d| TopEntry {
            path: PathField::new(&d.path),
            tree_allocated_bytes: d.tree_allocated,
            tree_files: d.tree_files,
            files: d.files,
            small_files: d.small_files,
        })
        .collect()
}

/// How `reclaim browse` walks a directory into its tree.
#[derive(Clone, Debug)]
pub struct TreeOptions {
    /// Workers (`None`: as the directory's file system profile says).
    pub threads: Option<u16>,
    pub cross_mounts: bool,
    /// Files smaller than this count as small (pack candidates).
    pub small: u64,
    /// What makes a subtree a pack candidate.
    pub pack: crate::engine::pack::candidates::Rule,
}

/// `reclaim browse`: walks the directory `start` (opened by `resolve`, or reached again and
/// checked by the caller) into `tree` at entry `at` (the root, or a directory being scanned
/// again), as `reclaim scan`'s walk does, filling `live` as it goes; each failure goes to
/// `on_error` as it happens. The tree's totals are exact when it returns.
pub fn into_tree(
    start: Start,
    tree: &std::sync::Arc<tree::Tree>,
    at: u32,
    o: &TreeOptions,
    live: &Live,
    on_error: &(dyn Fn(&ScanError) + Sync),
) -> walk::ScanWalkOutcome {
    let threads = match (o.threads, &start) {
        (Some(n), _) => usize::from(n),
        (None, Start::Dir { fd, .. }) => crate::engine::profile::Profile::detect(fd).workers,
        (None, Start::Entry { .. }) => 1,
    };
    let nofile = crate::sys::limits::raise_nofile();
    let opts = walk::ScanWalkOptions {
        threads,
        cross_mounts: o.cross_mounts,
        small: o.small,
        top: 0,
        exclude: crate::engine::glob::exclude::Exclude::new(&[]),
        fd_budget: crate::sys::limits::fd_budget(256, nofile, threads),
        pack: Some(o.pack),
        tree: Some(walk::Feed {
            tree: tree.clone(),
            roots: vec![at],
        }),
    };
    let out = walk::scan(vec![start], &opts, live, on_error, &|_| {}, None, None);
    tree.walked(at);
    out
}

/// Opens a PATH: a directory with `O_DIRECTORY|O_NOFOLLOW` (a trailing slash makes the kernel
/// resolve a symlink first, as the user asked), anything else as the one entry it is.
pub fn resolve(arg: &OsStr) -> Result<Start, ScanError> {
    let display = PathBuf::from(arg);
    let fail = |doing: &'static str, reason: String| ScanError {
        path: display.clone(),
        doing,
        reason,
    };
    let Ok(name) = CString::new(arg.as_bytes()) else {
        return Err(fail("cannot scan", errno_text(Errno::INVAL)));
    };
    if name.as_bytes().is_empty() {
        return Err(fail("cannot scan", errno_text(Errno::NOENT)));
    }
    match crate::sys::dirfd::open_dir_at(CWD, &name) {
        Ok(fd) => {
            let stat =
                crate::sys::dirfd::fstat(&fd).map_err(|e| fail("cannot stat", errno_text(e)))?;
            Ok(Start::Dir { display, fd, stat })
        }
        Err(Errno::NOTDIR) | Err(Errno::LOOP) => match crate::sys::dirfd::lstat_at(CWD, &name) {
            Ok(st) if st.file_type == rustix::fs::FileType::Symlink => Err(fail(
                "not following",
                "it is a symbolic link (add a trailing slash to scan the directory it points to)"
                    .into(),
            )),
            Ok(stat) => Ok(Start::Entry { display, stat }),
            Err(e) => Err(fail("cannot stat", errno_text(e))),
        },
        Err(e) => Err(fail("cannot scan", errno_text(e))),
    }
}

/// Calibrates once per file system of the PATHs and adds up the estimate. With
/// `--cross-mounts`, what lies on other file systems inside a PATH is counted at its PATH's
/// rates.
fn estimate_all(
    places: &[(u64, Option<OwnedFd>, PathBuf)],
    per_root: &[Counts],
    anywhere: bool,
    events: &dyn Events,
) -> Estimate {
    /// The work on one device, and the first directory PATH there (where it is calibrated).
    struct Group<'a> {
        dev: u64,
        place: Option<(&'a OwnedFd, &'a Path)>,
        work: estimate::Work,
    }
    // No calibration directory may be made in or below any of these.
    let trees: Vec<Ident> = places
        .iter()
        .filter_map(|(_, fd, _)| fd.as_ref())
        .filter_map(|fd| crate::sys::dirfd::fstat(fd).ok().map(|f| f.ident))
        .collect();
    let mut groups: Vec<Group> = Vec::new();
    for ((dev, fd, shown), c) in places.iter().zip(per_root) {
        let i = match groups.iter().position(|g| g.dev == *dev) {
            Some(i) => i,
            None => {
                groups.push(Group {
                    dev: *dev,
                    place: None,
                    work: estimate::Work::default(),
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[i];
        if g.place.is_none() {
            g.place = fd.as_ref().map(|fd| (fd, shown.as_path()));
        }
        g.work.names += c.names();
        g.work.big_dir_names += c.big_dir_names;
        g.work.dirs += c.dirs;
    }
    let mut seconds = 0.0;
    let mut not_estimated: Vec<NotEstimated> = Vec::new();
    let mut calibrations = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    for Group { dev, place, work } in groups {
        if work == estimate::Work::default() {
            continue;
        }
        let Some((fd, shown)) = place else {
            // Only single files named on this file system: nothing worth calibrating.
            continue;
        };
        let skip = |reason: &'static str, detail: String| NotEstimated {
            path: PathField::new(shown),
            reason,
            detail,
        };
        if estimate::read_only(fd) {
            not_estimated.push(skip(
                "read-only",
                format!(
                    "{} is on a read-only file system: `reclaim rm` could remove nothing there",
                    crate::sys::quote::quote(shown)
                ),
            ));
            continue;
        }
        match calibrate_near(
            fd,
            shown,
            dev,
            &work,
            (&trees, anywhere),
            events,
            &mut warnings,
        ) {
            Ok(c) => {
                seconds += estimate::seconds(&work, &c);
                calibrations.push(c);
            }
            Err(why) => not_estimated.push(skip(why.reason(), why.to_string())),
        }
    }
    Estimate {
        seconds: not_estimated.is_empty().then_some(seconds),
        unavailable: (!not_estimated.is_empty()).then(|| {
            not_estimated
                .iter()
                .map(|n| n.detail.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        }),
        not_estimated,
        calibrations,
        warnings,
    }
}

/// Calibrates for the directory PATH `root` (shown as `shown`, on device `dev`) in the first
/// place outside every scanned tree (`trees`) where it works (`estimate::places`); never in
/// the PATH or below it, nor in or below another PATH. A cache directory not used because
/// someone else could own it is said once (to `events` and into `warnings`).
fn calibrate_near(
    root: &OwnedFd,
    shown: &Path,
    dev: u64,
    work: &estimate::Work,
    (trees, anywhere): (&[Ident], bool),
    events: &dyn Events,
    warnings: &mut Vec<String>,
) -> Result<estimate::Calibration, Uncalibrated> {
    // A removal that stays small runs on one thread, without the file system's profile: so is
    // it calibrated, and no larger than it is.
    let (threads, sizes) = if estimate::small(work) {
        (1, estimate::Sizes::for_work(work))
    } else {
        (
            crate::engine::remove::threads_for(root),
            estimate::Sizes::FULL,
        )
    };
    let estimate::Places {
        found,
        mut passed,
        refused,
    } = estimate::places(root, trees, anywhere);
    for line in refused {
        if !warnings.contains(&line) {
            events.warning(&line);
            warnings.push(line);
        }
    }
    let tried_any = !found.is_empty();
    for place in found {
        events.calibrating(&place.path);
        match estimate::calibrate(&place.fd, &place.path, dev, threads, sizes) {
            Ok(mut c) => {
                c.place = Some(place.kind);
                return Ok(c);
            }
            Err(e) => passed.push(estimate::Passed {
                kind: place.kind,
                path: place.path,
                why: estimate::PassedWhy::Failed(e),
            }),
        }
    }
    Err(Uncalibrated {
        shown: shown.to_path_buf(),
        tried_any,
        passed,
    })
}

/// Why no place near a PATH could be calibrated: no place outside the scanned trees on its
/// file system (`tried_any` false), or the calibration failed in every one; what was passed
/// over or failed, in order.
#[derive(Debug)]
struct Uncalibrated {
    shown: PathBuf,
    tried_any: bool,
    passed: Vec<estimate::Passed>,
}

impl std::fmt::Display for Uncalibrated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.not_asked() {
            write!(
                f,
                "not calibrated for {}: reclaim's cache directory is not on its file system, \
                 and --estimate was not given to calibrate elsewhere",
                crate::sys::quote::quote(&self.shown)
            )?;
            let cache: Vec<String> = self
                .passed
                .iter()
                .filter(|p| p.kind == estimate::PlaceKind::Cache)
                .map(ToString::to_string)
                .collect();
            if !cache.is_empty() {
                write!(f, " ({})", cache.join("; "))?;
            }
            return Ok(());
        }
        if self.tried_any {
            write!(f, "the calibration failed for ")?;
        } else {
            write!(
                f,
                "no place outside the scanned tree on the file system of "
            )?;
        }
        write!(f, "{}", crate::sys::quote::quote(&self.shown))?;
        if !self.passed.is_empty() {
            let passed: Vec<String> = self.passed.iter().map(ToString::to_string).collect();
            write!(f, " ({})", passed.join("; "))?;
        }
        Ok(())
    }
}

impl Uncalibrated {
    /// Whether only `--estimate` was missing: some place was left alone for it.
    fn not_asked(&self) -> bool {
        !self.tried_any
            && self
                .passed
                .iter()
                .any(|p| p.why == estimate::PassedWhy::NotAsked)
    }

    /// The `--json` reason code.
    fn reason(&self) -> &'static str {
        if self.not_asked() {
            return "not-asked";
        }
        if self.tried_any {
            "calibration-failed"
        } else {
            "no-place-outside-tree"
        }
    }
}
