//! `reclaim prune`: lists the entries of the given directories (`engine::prune`), decides by
//! the retention rules (`engine::prune::policy`, a pure function) what goes, prints that plan,
//! then removes the chosen entries through the same path as `reclaim rm -r` (`reaper::rm`: the
//! trash and a background reaper by default).

use crate::cmd::exit::Exit;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::engine::prune::policy::{self, Candidate, Policy, Space};
use crate::engine::prune::{self as prune, Entry, Names};
use crate::reaper::rm::{Mode, Request, Summary};
use crate::sys::quote::quote;
use crate::trash::meta::EntryPacing;
use crate::ui::prune::Report;
use crate::ui::report::RmView;

/// What `reclaim prune` was asked.
#[derive(Clone, Debug)]
pub struct PruneOptions {
    pub policy: Policy,
    pub dirs: Vec<OsString>,
    pub names: Names,
    pub dry_run: bool,
    pub json: bool,
    /// `--start-pool` (hidden): the pool from the first, as `rm --start-pool`.
    pub start_pool: bool,
    /// `--now` (foreground, no trash), `--wait`, or the default: a background reaper.
    pub mode: Mode,
    pub pace: EntryPacing,
    /// `--min-free`: the free space to leave the others.
    pub min_free: crate::sys::space::Floor,
}

/// `reclaim prune`.
pub fn run(o: &PruneOptions) -> ExitCode {
    crate::sys::limits::raise_nofile();
    super::catch_signals(true);
    // A failure before anything is removed: one line, or (`--json`) one object that says it.
    let failed = |msg: String, code: Exit| -> ExitCode {
        if o.json {
            let r = Report {
                error: Some(msg),
                ..Report::default()
            };
            println!("{}", serde_json::to_string(&r).expect("report serializes"));
        } else {
            eprintln!("reclaim prune: {msg}");
        }
        code.into()
    };
    let pol = &o.policy;
    if !pol.has_keep_rule() && !pol.has_remove_rule() {
        return failed(policy::PlanError::NoRule.to_string(), Exit::Usage);
    }
    let mut listed = Vec::new();
    let mut space: HashMap<u64, Space> = HashMap::new();
    for dir in &o.dirs {
        match prune::list(Path::new(dir), &o.names) {
            Ok((entries, dev, sp)) => {
                listed.extend(entries);
                space.entry(dev).or_insert(sp);
            }
            Err(e) => {
                // A missing directory would shrink the pool (keep-last would keep fewer
                // elsewhere): plan nothing rather than a different plan.
                return failed(
                    format!("cannot list {}: {e}; nothing removed", quote(dir)),
                    Exit::Failed,
                );
            }
        }
    }
    // Without --match, the entries named like the most of them: a README beside dated
    // backups is no backup (`engine::prune::shape`).
    let mut left_out = Vec::new();
    if o.names.pattern.is_none() {
        let names: Vec<&str> = listed.iter().map(|(c, _)| c.name.as_str()).collect();
        match prune::shape::choose(&names) {
            Ok(chosen) => {
                left_out = chosen.left_out;
                let keep: std::collections::HashSet<usize> =
                    chosen.considered.into_iter().collect();
                let mut i = 0;
                listed.retain(|_| {
                    i += 1;
                    keep.contains(&(i - 1))
                });
            }
            Err(e) => return failed(format!("{e}; nothing removed"), Exit::Usage),
        }
    }
    // Trees others hid without a recorded size are walked only when a free-space target
    // needs them (undercounting would remove more than needed).
    let devs: Vec<u64> = space.keys().copied().collect();
    let pending = crate::reaper::status::pending_by_dev(pol.keep_free.is_some(), &devs, &mut |l| {
        eprintln!("reclaim status: {l}")
    });
    for (dev, sp) in space.iter_mut() {
        sp.pending = pending.get(dev).copied().unwrap_or(0);
    }
    let cands: Vec<Candidate> = listed.iter().map(|(c, _)| c.clone()).collect();
    let now = crate::sys::format::now_unix();
    let zone = crate::sys::format::local_zone();
    let plan = match policy::plan(&cands, pol, now, &space, &zone) {
        Ok(p) => p,
        Err(e) => return failed(e.to_string(), Exit::Failed),
    };
    let entries = prune::plan_entries(&listed, &plan, pol.sort);
    let mut report = Report::new(entries, plan.unmet.clone(), o.dry_run);
    report.left_out = left_out;
    if !o.json {
        print!("{}", crate::ui::prune::plan(&report, &zone));
    }
    // Not an error (everything removable goes), but the operator must hear of it.
    for u in &report.unmet {
        eprintln!("reclaim prune: warning: --keep-free not reachable: {u}");
    }
    let mut code = Exit::Done;
    if !o.dry_run && report.remove_count > 0 {
        let summary = remove(&report.plan, o);
        if !summary.errors.is_empty() {
            code = Exit::Failed;
        }
        if !o.json {
            println!(
                "{}",
                crate::ui::prune::outcome(&summary, o.mode == Mode::Wait)
            );
        }
        report.result = Some(summary);
    }
    if o.json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("report serializes")
        );
    }
    code.into()
}

/// Removes the planned entries as `reclaim rm -r` would, in the mode asked for.
fn remove(plan: &[Entry], o: &PruneOptions) -> Summary {
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
        pace: o.pace.clone(),
        floor: o.min_free,
        mode: o.mode,
        known_sizes: known,
        start_pool: o.start_pool,
        count_bytes: true,
        batch: true,
        ..Request::default()
    };
    let live = std::io::stderr().is_terminal();
    let view = RmView::new(false, false, o.json, live && !o.json);
    let removal = crate::reaper::rm::run(&req, &view);
    view.printer().flush();
    for line in view.printer().conditions() {
        view.printer().error_line(&line);
    }
    if let Some(sig) = removal.summary.interrupted {
        view.printer()
            .error_line(&crate::ui::report::interrupted(sig, &removal));
    }
    removal.summary
}
