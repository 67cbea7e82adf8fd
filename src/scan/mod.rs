//! `reclaim scan PATH...`: where the files are. Resolves the PATHs (a symlink named as a PATH
//! is not followed unless written with a trailing slash), runs the parallel walk (`walk`),
//! adds up (`tally`, `histogram`), estimates the removal time (`estimate`), and prints
//! (`report`). Owns the mapping from what happened to the exit code: 0 all read, 1 some paths
//! could not be read (each named on stderr), 2 usage (clap).
//!
//! A scan reads only. The one thing it writes is the estimate's private calibration directory
//! (skipped with `--no-estimate`): never inside a scanned tree, and it removes only what it
//! created.

pub mod estimate;
pub mod exclude;
pub mod histogram;
pub mod report;
pub mod tally;
pub mod walk;

use std::ffi::{CString, OsStr};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rustix::fs::{openat, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::cli::ScanArgs;
use crate::dirfd::Ident;
use crate::error::errno_text;
use crate::quote::PathField;
use report::{ErrorEntry, Estimate, NotEstimated, Progress, RootEntry, ScanReport, TopEntry};
use tally::Counts;
use walk::{Kind, Live, ScanError, Start};

/// `reclaim scan`; returns the exit code.
pub fn command(a: &ScanArgs) -> u8 {
    let started = Instant::now();
    let progress = Progress::start();
    // Under MPI, rank 0 names the PATHs' errors and prints the report for all ranks; each
    // rank names the errors of what it walked.
    let leads = crate::spread::leads();
    let say = |e: &ScanError| progress.println(&format!("reclaim: {e}"));
    let mut errors: Vec<ScanError> = Vec::new();

    let mut starts = Vec::new();
    // Per PATH: (device, a dup of its directory fd for the estimate, the path shown).
    let mut places: Vec<(u64, Option<OwnedFd>, PathBuf)> = Vec::new();
    for arg in &a.paths {
        match resolve(arg) {
            Ok(start) => {
                let place = match &start {
                    Start::Dir { display, fd, stat } => {
                        (stat.dev, fd.try_clone().ok(), display.clone())
                    }
                    Start::Entry { display, stat } => (stat.dev, None, display.clone()),
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

    let first_dir = places.iter().find_map(|p| p.1.as_ref());
    // The first directory's file system profile decides the workers (a stat is a round trip
    // on a network file system: tens in flight).
    let profile = first_dir.map(|fd| match a.profile {
        Some(class) => crate::profile::Profile::named(class, fd),
        None => crate::profile::Profile::detect(fd),
    });
    let threads = match (a.threads, &profile) {
        (Some(n), _) => usize::from(n),
        (None, Some(p)) => p.workers,
        (None, None) => crate::remove::cpus(),
    };
    let nofile = crate::limits::raise_nofile();
    let opts = walk::Options {
        threads,
        cross_mounts: a.cross_mounts,
        small: a.small,
        top: a.top,
        exclude: exclude::Exclude::new(&a.exclude),
        fd_budget: crate::limits::fd_budget(256, nofile, threads),
        pack: Some(crate::pack::candidates::Rule::new(
            a.pack_age,
            a.time == crate::cli::ScanTime::Atime,
            a.pack_min_files,
        )),
    };
    let live = Live::default();
    let done = AtomicBool::new(false);
    let outcome = std::thread::scope(|s| {
        s.spawn(|| progress.tick_until(&live, started, &done));
        let outcome = walk::scan(starts, &opts, &live, &say, crate::spread::job());
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        outcome
    });
    let elapsed = started.elapsed();

    if !leads {
        return u8::from(!outcome.errors.is_empty());
    }
    let estimate = if a.no_estimate || crate::spread::job().is_some() {
        None
    } else {
        Some(estimate_all(&places, &outcome.per_root, &progress))
    };
    progress.clear();
    errors.extend(outcome.errors);
    let mut ranks = outcome.ranks;

    let mut totals = Counts::default();
    for c in &outcome.per_root {
        totals.merge(c);
    }
    let lossy = |p: &Path| p.to_string_lossy().into_owned();
    let top = |list: Vec<walk::TopDir>| -> Vec<TopEntry> {
        list.into_iter()
            .map(|d| TopEntry {
                path: PathField::new(&d.path),
                tree_allocated_bytes: d.tree_allocated,
                tree_files: d.tree_files,
                files: d.files,
                small_files: d.small_files,
            })
            .collect()
    };
    let report = ScanReport {
        paths: a.paths.iter().map(|p| lossy(Path::new(p))).collect(),
        totals,
        small_threshold: a.small,
        histogram: outcome.histogram.buckets(),
        exclude: a.exclude.iter().map(|p| p.text.clone()).collect(),
        top_by_allocated_bytes: top(outcome.top_bytes),
        top_by_files: top(outcome.top_files),
        top_by_small_files: top(outcome.top_small),
        pack_candidates: outcome
            .pack_candidates
            .iter()
            .map(|c| report::PackEntry {
                path: PathField::new(&c.path),
                files: c.files,
                small_files: c.small_files,
                tree_allocated_bytes: c.allocated,
                apparent_bytes: c.apparent,
                saves_bytes: c.saves(),
                newest: c.newest,
                command: c.command(),
            })
            .collect(),
        pack_rule: report::PackRule {
            age_days: a.pack_age.as_secs() / 86_400,
            time: if a.time == crate::cli::ScanTime::Atime {
                "atime"
            } else {
                "mtime"
            },
            min_files: a.pack_min_files,
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
    let text = if a.json {
        serde_json::to_string(&report).expect("scan report serializes") + "\n"
    } else {
        report::human(&report)
    };
    // A closed stdout (`| head`) is not an error worth a panic.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    u8::from(!errors.is_empty())
}

/// Opens a PATH: a directory with `O_DIRECTORY|O_NOFOLLOW` (a trailing slash makes the kernel
/// resolve a symlink first, as the user asked), anything else as the one entry it is.
fn resolve(arg: &OsStr) -> Result<Start, ScanError> {
    let display = PathBuf::from(arg);
    let fail = |doing: &'static str, reason: String| ScanError {
        path: display.clone(),
        doing,
        reason,
    };
    let Ok(name) = CString::new(arg.as_bytes()) else {
        return Err(fail("cannot open", errno_text(Errno::INVAL)));
    };
    if name.as_bytes().is_empty() {
        return Err(fail("cannot open", errno_text(Errno::NOENT)));
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match openat(CWD, &name, flags, Mode::empty()) {
        Ok(fd) => {
            let stat = walk::stat_fd(&fd).map_err(|e| fail("cannot stat", errno_text(e)))?;
            Ok(Start::Dir { display, fd, stat })
        }
        Err(Errno::NOTDIR) | Err(Errno::LOOP) => match walk::stat_at(CWD, &name) {
            Ok(st) if st.kind == Kind::Symlink => Err(fail(
                "not following",
                "it is a symbolic link (add a trailing slash to scan the directory it points to)"
                    .into(),
            )),
            Ok(stat) => Ok(Start::Entry { display, stat }),
            Err(e) => Err(fail("cannot stat", errno_text(e))),
        },
        Err(e) => Err(fail("cannot open directory", errno_text(e))),
    }
}

/// Calibrates once per file system of the PATHs and adds up the estimate. With
/// `--cross-mounts`, what lies on other file systems inside a PATH is counted at its PATH's
/// rates.
fn estimate_all(
    places: &[(u64, Option<OwnedFd>, PathBuf)],
    per_root: &[Counts],
    progress: &Progress,
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
        .filter_map(|fd| crate::dirfd::fstat(fd).ok().map(|f| f.ident))
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
                    crate::quote::quote(shown)
                ),
            ));
            continue;
        }
        match calibrate_near(fd, shown, dev, &trees, progress) {
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
    }
}

/// Calibrates for the directory PATH `root` (shown as `shown`, on device `dev`) in the first
/// place outside every scanned tree (`trees`) where it works (`estimate::places`); never in
/// the PATH or below it, nor in or below another PATH.
fn calibrate_near(
    root: &OwnedFd,
    shown: &Path,
    dev: u64,
    trees: &[Ident],
    progress: &Progress,
) -> Result<estimate::Calibration, Uncalibrated> {
    let threads = crate::remove::threads_for(root);
    let (found, mut passed) = estimate::places(root, trees);
    let tried_any = !found.is_empty();
    for place in found {
        progress.message(&format!(
            "calibrating the removal estimate in {}",
            crate::quote::quote(&place.path)
        ));
        match estimate::calibrate(&place.fd, &place.path, dev, threads) {
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
        if self.tried_any {
            write!(f, "the calibration failed for ")?;
        } else {
            write!(
                f,
                "no place outside the scanned tree on the file system of "
            )?;
        }
        write!(f, "{}", crate::quote::quote(&self.shown))?;
        if !self.passed.is_empty() {
            let passed: Vec<String> = self.passed.iter().map(ToString::to_string).collect();
            write!(f, " ({})", passed.join("; "))?;
        }
        Ok(())
    }
}

impl Uncalibrated {
    /// The `--json` reason code.
    fn reason(&self) -> &'static str {
        if self.tried_any {
            "calibration-failed"
        } else {
            "no-place-outside-tree"
        }
    }
}
