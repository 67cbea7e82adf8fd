//! `reclaim prune`: lists the entries of the given directories, decides by the retention rules
//! (`policy.rs`, a pure function) what goes, prints that plan, then removes the chosen entries
//! through the same path as `reclaim rm -r` (the trash and a background reaper by default).
//! It only ever removes direct entries of the directories it was given, never follows a
//! symlink, and never touches names starting with a dot unless `--all` (so never `.reclaim`).

pub mod policy;

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;
use serde::Serialize;

use crate::cli::args::{PruneArgs, SortArg};
use crate::cmd::rm::{Mode, Request};
use crate::engine::pace::EntryPacing;
use crate::engine::remove;
use crate::sys::dirfd;
use crate::sys::format::{bytes, group, plural, seconds};
use policy::{Candidate, Plan, Policy, SortBy, Space};

/// One entry of a pruned directory.
#[derive(Debug, Serialize)]
pub struct Entry {
    #[serde(flatten)]
    pub path: crate::sys::quote::PathField,
    pub kind: &'static str,
    pub mtime_unix: f64,
    pub allocated: Option<u64>,
    pub files: Option<u64>,
    pub remove: bool,
    pub reasons: Vec<String>,
    #[serde(skip)]
    path_os: PathBuf,
}

#[derive(Debug, Default, Serialize)]
struct Report {
    /// Why nothing was done, when the run failed before removing anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    plan: Vec<Entry>,
    unmet: Vec<String>,
    dry_run: bool,
    remove_count: usize,
    remove_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<crate::ui::report::Summary>,
}

/// `reclaim prune`; returns the exit code.
pub fn command(a: &PruneArgs, progress: bool) -> u8 {
    let pol = Policy {
        keep_last: a.keep_last,
        keep_hourly: a.keep_hourly,
        keep_daily: a.keep_daily,
        keep_weekly: a.keep_weekly,
        keep_monthly: a.keep_monthly,
        keep_yearly: a.keep_yearly,
        keep_within: a.keep_within,
        older_than: a.older_than.map(|d| d.as_secs_f64()),
        keep_free: a.keep_free,
        max_total: a.max_total,
        sort: match a.sort.unwrap_or_default() {
            SortArg::Mtime => SortBy::Mtime,
            SortArg::Name => SortBy::Name,
        },
        allow_empty: a.allow_empty,
    };
    // A failure before anything is removed: one line, or (`--json`) one object that says it.
    let failed = |msg: String, code: u8| -> u8 {
        if a.json {
            let r = Report {
                error: Some(msg),
                ..Report::default()
            };
            println!("{}", serde_json::to_string(&r).expect("report serializes"));
        } else {
            eprintln!("reclaim prune: {msg}");
        }
        code
    };
    if !pol.has_keep_rule() && !pol.has_remove_rule() {
        return failed(policy::PlanError::NoRule.to_string(), 2);
    }
    let mut listed = Vec::new();
    let mut space: HashMap<u64, Space> = HashMap::new();
    for dir in &a.dirs {
        match list(Path::new(dir), a) {
            Ok((entries, dev, sp)) => {
                listed.extend(entries);
                space.entry(dev).or_insert(sp);
            }
            Err(e) => {
                // A missing directory would shrink the pool (keep-last would keep fewer
                // elsewhere): plan nothing rather than a different plan.
                return failed(
                    format!(
                        "cannot list {}: {e}; nothing removed",
                        crate::sys::quote::quote(dir)
                    ),
                    1,
                );
            }
        }
    }
    // Trees others hid without a recorded size are walked only when a free-space target
    // needs them (undercounting would remove more than needed).
    let devs: Vec<u64> = space.keys().copied().collect();
    let pending = pending_by_dev(pol.keep_free.is_some(), &devs);
    for (dev, sp) in space.iter_mut() {
        sp.pending = pending.get(dev).copied().unwrap_or(0);
    }
    let cands: Vec<Candidate> = listed.iter().map(|(c, _)| c.clone()).collect();
    let now = crate::trash::meta::now_unix();
    let zone = crate::sys::format::local_zone();
    let plan = match policy::plan(&cands, &pol, now, &space, &zone) {
        Ok(p) => p,
        Err(e) => return failed(e.to_string(), 1),
    };
    let mut report = report_of(&listed, &plan, a.dry_run, pol.sort);
    if !a.json {
        print!("{}", human(&report, &zone));
    }
    // Not an error (everything removable goes), but the operator must hear of it.
    for u in &report.unmet {
        eprintln!("reclaim prune: warning: --keep-free not reachable: {u}");
    }
    let mut code = 0;
    if !a.dry_run && report.remove_count > 0 {
        let summary = remove(&report.plan, a, progress);
        if !summary.errors.is_empty() {
            code = 1;
        }
        if !a.json {
            println!("{}", outcome_line(&summary, a));
        }
        report.result = Some(summary);
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("report serializes")
        );
    }
    code
}

type Listed = (Candidate, (PathBuf, &'static str, Option<u64>));

/// Why a directory could not be listed (then nothing is removed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    /// Opening, examining or reading the directory itself failed.
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(Errno),
    /// One of its entries could not be examined.
    #[error("{}: {}", crate::sys::quote::quote(.path), crate::sys::error::errno_text(*.error))]
    Entry { path: PathBuf, error: Errno },
}

/// The entries of `dir` (filtered by name), with their times and allocated bytes (a
/// directory's as the engine's dry run counts them, one walk each); the file system's device
/// and space.
fn list(dir: &Path, a: &PruneArgs) -> Result<(Vec<Listed>, u64, Space), ListError> {
    let fd = dirfd::open_dir_path(dir).map_err(ListError::Os)?;
    let fd = Arc::new(fd);
    let dev = rustix::fs::fstat(&*fd).map_err(ListError::Os)?.st_dev;
    let vfs = rustix::fs::fstatvfs(&*fd).map_err(ListError::Os)?;
    let sp = Space {
        total: vfs.f_blocks * vfs.f_frsize,
        avail: vfs.f_bavail * vfs.f_frsize,
        pending: 0,
    };
    let mut names = Vec::new();
    let list = dirfd::open_dir_at(&*fd, c".").map_err(ListError::Os)?;
    let mut buf = dirfd::DirBuf::new(256 << 10);
    dirfd::for_each_entry(&list, &mut buf, |name, _, _| {
        let b = name.to_bytes();
        if (b.starts_with(b".") && !a.all) || crate::trash::is_trash_name(b) {
            return;
        }
        if let Some(p) = &a.pattern {
            if !fnmatch(p, name) {
                return;
            }
        }
        names.push(name.to_owned());
    })
    .map_err(ListError::Os)?;
    let mut out = Vec::new();
    for name in names {
        let st = match rustix::fs::statat(&*fd, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(error) => {
                return Err(ListError::Entry {
                    path: dir.join(OsStr::from_bytes(name.to_bytes())),
                    error,
                })
            }
        };
        let ft = FileType::from_raw_mode(st.st_mode);
        let mtime = st.st_mtime as f64 + st.st_mtime_nsec as f64 * 1e-9;
        let (allocated, files) = if ft == FileType::Directory {
            let (b, f) = remove::measure(&fd, &name, &dir.join(OsStr::from_bytes(name.to_bytes())));
            (Some(b), Some(f))
        } else {
            let own = if st.st_nlink <= 1 {
                st.st_blocks as u64 * 512
            } else {
                0
            };
            (Some(own), Some(1))
        };
        out.push((
            Candidate {
                name: String::from_utf8_lossy(name.to_bytes()).into_owned(),
                mtime,
                allocated,
                dev,
            },
            (
                dir.join(OsStr::from_bytes(name.to_bytes())),
                crate::trash::hide::kind(ft),
                files,
            ),
        ));
    }
    Ok((out, dev, sp))
}

/// `fnmatch(3)` on a name (no `FNM_PATHNAME` needed: names have no slash).
fn fnmatch(pattern: &str, name: &CStr) -> bool {
    let Ok(p) = CString::new(pattern) else {
        return false;
    };
    // SAFETY: both are valid NUL-terminated strings that outlive the call.
    unsafe { libc::fnmatch(p.as_ptr(), name.as_ptr(), 0) == 0 }
}

/// Space already on its way back per device of `devs`: what the trashes there still hold
/// (`count`: walking trees whose size was not recorded).
fn pending_by_dev(count: bool, devs: &[u64]) -> HashMap<u64, u64> {
    let mut found = crate::trash::discover(crate::trash::uid());
    found.trashes.retain(|t| devs.contains(&t.ident.dev));
    let dev_of: HashMap<String, u64> = found
        .trashes
        .iter()
        .map(|t| (t.path.to_string_lossy().into_owned(), t.ident.dev))
        .collect();
    let st = crate::cmd::status::collect(found, count);
    let mut m: HashMap<u64, u64> = HashMap::new();
    for s in &st.trashes {
        if let Some(dev) = dev_of.get(&s.trash) {
            let e = m.entry(*dev).or_insert(0);
            *e = e.saturating_add(s.pending_bytes);
        }
    }
    m
}

fn report_of(listed: &[Listed], plan: &Plan, dry_run: bool, sort: SortBy) -> Report {
    let mut plan_entries: Vec<Entry> = listed
        .iter()
        .zip(&plan.decisions)
        .map(|((c, (path, kind, files)), d)| Entry {
            path: crate::sys::quote::PathField::new(path),
            kind,
            mtime_unix: c.mtime,
            allocated: c.allocated,
            files: *files,
            remove: d.remove,
            reasons: d.reasons.clone(),
            path_os: path.clone(),
        })
        .collect();
    let cands: Vec<Candidate> = listed.iter().map(|(c, _)| c.clone()).collect();
    let order = policy::newest_first(&cands, sort);
    let mut slots: Vec<Option<Entry>> = plan_entries.drain(..).map(Some).collect();
    let plan_entries: Vec<Entry> = order.iter().filter_map(|&i| slots[i].take()).collect();
    let removing: Vec<&Entry> = plan_entries.iter().filter(|e| e.remove).collect();
    Report {
        remove_count: removing.len(),
        remove_bytes: removing
            .iter()
            .filter_map(|e| e.allocated)
            .fold(0, u64::saturating_add),
        plan: plan_entries,
        unmet: plan.unmet.clone(),
        dry_run,
        result: None,
        error: None,
    }
}

fn human(r: &Report, zone: &jiff::tz::TimeZone) -> String {
    let mut s = String::new();
    for e in &r.plan {
        let size = e.allocated.map_or_else(|| "?".into(), bytes);
        s.push_str(&format!(
            "{:<6}  {}  {:>10}  {}  ({})\n",
            if e.remove { "REMOVE" } else { "keep" },
            crate::sys::format::minute(&policy::civil(zone, e.mtime_unix)),
            size,
            e.path,
            e.reasons.join("; ")
        ));
    }
    s.push_str(&format!(
        "plan: remove {} of {} ({}){}\n",
        group(r.remove_count as u64),
        plural(r.plan.len() as u64, "entry", "entries"),
        bytes(r.remove_bytes),
        if r.dry_run {
            "; dry run, nothing removed"
        } else {
            ""
        }
    ));
    s
}

/// Removes the planned entries as `reclaim rm -r` would, in the mode asked for.
fn remove(plan: &[Entry], a: &PruneArgs, progress: bool) -> crate::ui::report::Summary {
    let paths: Vec<PathBuf> = plan
        .iter()
        .filter(|e| e.remove)
        .map(|e| e.path_os.clone())
        .collect();
    let known = plan
        .iter()
        .filter(|e| e.remove)
        .filter_map(|e| Some((e.path_os.clone(), (e.allocated?, e.files.unwrap_or(0)))))
        .collect();
    let req = Request {
        paths,
        recursive: true,
        force: true,
        dir: false,
        verbose: false,
        json: a.json,
        progress,
        threads_given: false,
        pace: EntryPacing::from(&a.pace),
        pace_trace: None,
        engine: remove::Options::default(),
        mode: if a.now {
            Mode::Now
        } else if a.wait {
            Mode::Wait
        } else {
            Mode::Background
        },
        grace: None,
        durable: false,
        known_sizes: known,
        profile: None,
        small_dir_stats: None,
        batch_threads: None,
        preserve_all_root: false,
        print_summary: false,
    };
    crate::cmd::rm::run(&req)
}

fn outcome_line(s: &crate::ui::report::Summary, a: &PruneArgs) -> String {
    let failed = if s.errors.is_empty() {
        String::new()
    } else {
        format!("; {} failed", s.errors.len())
    };
    if !s.hidden.is_empty() && !a.wait {
        format!(
            "hid {} into the trash; a reaper frees the space in the background (`reclaim status`){failed}",
            plural(s.hidden.len() as u64, "entry", "entries")
        )
    } else {
        format!(
            "removed {} and {}, {} freed, in {}{failed}",
            plural(s.files, "file", "files"),
            plural(s.dirs, "directory", "directories"),
            bytes(s.bytes_freed),
            seconds(s.elapsed_s)
        )
    }
}
