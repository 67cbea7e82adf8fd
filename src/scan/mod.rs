//! `reclaim scan PATH...`: where the files are. Resolves the PATHs (a symlink named as a PATH
//! is not followed unless written with a trailing slash), runs the parallel walk (`walk`),
//! adds up (`tally`, `histogram`), estimates the removal time (`estimate`), and prints
//! (`report`). Owns the mapping from what happened to the exit code: 0 all read, 1 some paths
//! could not be read (each named on stderr), 2 usage (clap).
//!
//! A scan reads only. The one thing it writes is the estimate's private calibration directory
//! (skipped with `--no-estimate`), and that removes only what it created.

pub mod estimate;
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
use crate::error::errno_text;
use crate::quote::PathField;
use report::{ErrorEntry, Estimate, Progress, RootEntry, ScanReport, TopEntry};
use tally::Counts;
use walk::{Kind, Live, ScanError, Start, Stat};

/// `reclaim scan`; returns the exit code.
pub fn command(a: &ScanArgs) -> u8 {
    let started = Instant::now();
    let progress = Progress::start();
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
                say(&e);
                errors.push(e);
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
        fd_budget: crate::limits::fd_budget(256, nofile, threads),
    };
    let live = Live::default();
    let done = AtomicBool::new(false);
    let outcome = std::thread::scope(|s| {
        s.spawn(|| progress.tick_until(&live, started, &done));
        let outcome = walk::scan(starts, &opts, &live, &say);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        outcome
    });
    let elapsed = started.elapsed();

    let estimate = if a.no_estimate {
        None
    } else {
        Some(estimate_all(&places, &outcome.per_root, &progress))
    };
    progress.clear();
    errors.extend(outcome.errors);

    let mut totals = Counts::default();
    for c in &outcome.per_root {
        totals.merge(c);
    }
    let lossy = |p: &Path| p.to_string_lossy().into_owned();
    let top = |list: Vec<walk::TopDir>| -> Vec<TopEntry> {
        list.into_iter()
            .map(|d| TopEntry {
                path: PathField::new(&d.path),
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
        top_by_files: top(outcome.top_files),
        top_by_small_files: top(outcome.top_small),
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
    let mut unavailable: Vec<String> = Vec::new();
    let mut calibrations = Vec::new();
    for Group { dev, place, work } in groups {
        if work == estimate::Work::default() {
            continue;
        }
        let Some((fd, shown)) = place else {
            // Only single files named on this file system: nothing worth calibrating.
            continue;
        };
        if estimate::read_only(fd) {
            unavailable.push(format!(
                "'{}' is on a read-only file system: `reclaim rm` could remove nothing there",
                shown.display()
            ));
            continue;
        }
        match calibrate_near(fd, shown, dev, progress) {
            Ok(c) => {
                seconds += estimate::seconds(&work, &c);
                calibrations.push(c);
            }
            Err(why) => unavailable.push(why.to_string()),
        }
    }
    Estimate {
        seconds: unavailable.is_empty().then_some(seconds),
        unavailable: (!unavailable.is_empty()).then(|| unavailable.join("; ")),
        calibrations,
    }
}

/// Calibrates in the temporary directory if it is on the same file system (so the scanned
/// tree is not touched), else in the PATH itself.
fn calibrate_near(
    root: &OwnedFd,
    shown: &Path,
    dev: u64,
    progress: &Progress,
) -> Result<estimate::Calibration, Uncalibrated> {
    let threads = crate::remove::threads_for(root);
    let mut why = Vec::new();
    let tmp = std::env::temp_dir();
    if let Ok(fd) = crate::dirfd::open_dir_path(&tmp) {
        if walk::stat_fd(&fd).is_ok_and(|s: Stat| s.dev == dev) && !estimate::read_only(&fd) {
            progress.message(&format!(
                "calibrating the removal estimate in '{}'",
                tmp.display()
            ));
            match estimate::calibrate(&fd, &tmp, dev, threads) {
                Ok(c) => return Ok(c),
                Err(e) => why.push(e),
            }
        }
    }
    progress.message(&format!(
        "calibrating the removal estimate in '{}'",
        shown.display()
    ));
    match estimate::calibrate(root, shown, dev, threads) {
        Ok(c) => Ok(c),
        Err(e) => {
            why.push(e);
            Err(Uncalibrated(why))
        }
    }
}

/// Why no place near a PATH could be calibrated: what went wrong at each place tried, in order.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
struct Uncalibrated(Vec<estimate::CalibrationError>);
