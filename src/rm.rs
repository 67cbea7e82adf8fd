//! The `reclaim rm` command: resolves arguments, removes single entries directly and trees with
//! the parallel engine, and reports. Owns the mapping from what happened to the exit code.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rustix::fs::{unlinkat, AtFlags};
use rustix::io::Errno;

use crate::error::{Failure, Reason};
use crate::remove::{self, Counters, Options, Sink};
use crate::report::{Printer, Progress, Summary};
use crate::target::{Rejection, Resolver, Target};

/// What the user asked for.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub paths: Vec<PathBuf>,
    pub recursive: bool,
    pub force: bool,
    pub dir: bool,
    pub verbose: bool,
    pub json: bool,
    pub progress: bool,
    /// `--threads` was given; otherwise the worker count follows the file system.
    pub threads_given: bool,
    pub engine: Options,
}

/// Runs `reclaim rm`; returns the summary (already printed) for the exit code.
pub fn run(req: &Request) -> Summary {
    let started = Instant::now();
    let counters = Counters::default();
    let progress = Progress::start(req.progress && !req.json);
    let printer = Printer::new(req.verbose, req.engine.dry_run, req.json, progress.bar());
    let mut failures: Vec<Failure> = Vec::new();

    let mut resolver = Resolver::new(req.recursive, req.dir);
    let mut trees = Vec::new();
    for path in &req.paths {
        match resolver.resolve(path) {
            Ok(Target::Tree(tree)) => trees.push(tree),
            Ok(Target::Entry {
                base,
                name,
                display,
                is_dir,
                allocated,
            }) => {
                let flags = if is_dir {
                    AtFlags::REMOVEDIR
                } else {
                    AtFlags::empty()
                };
                let result = if req.engine.dry_run {
                    Ok(())
                } else {
                    unlinkat(&*base, &name, flags)
                };
                match result {
                    Ok(()) => {
                        let counter = if is_dir {
                            &counters.dirs
                        } else {
                            &counters.files
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        counters.bytes.fetch_add(allocated, Ordering::Relaxed);
                        if req.verbose {
                            printer.removed(&display, is_dir);
                        }
                    }
                    Err(Errno::NOENT) if req.force => {}
                    Err(e) => fail(&printer, &mut failures, display, Reason::Os(e)),
                }
            }
            Err(Rejection::Missing) if req.force => {}
            Err(Rejection::Missing) => fail(
                &printer,
                &mut failures,
                path.clone(),
                Reason::Os(Errno::NOENT),
            ),
            Err(Rejection::Refused(reason)) => fail(&printer, &mut failures, path.clone(), reason),
        }
    }

    let done = AtomicBool::new(false);
    let mut engine = req.engine.clone();
    if let (false, Some(first)) = (req.threads_given, trees.first()) {
        engine.threads = remove::threads_for(&*first.base);
    }
    let outcome = std::thread::scope(|s| {
        s.spawn(|| progress.tick_until(&counters, started, &done));
        let outcome = remove::remove_trees(trees, &engine, &counters, &printer);
        done.store(true, Ordering::Relaxed);
        outcome
    });
    printer.flush();
    failures.extend(outcome.failures);

    // Counting bytes per file costs a stat each; otherwise ask the file systems what they got
    // back; it is never less than what reclaim knows exactly (directories' st_blocks, from the
    // statx it does anyway, and the single entries it resolved).
    let known = counters.bytes.load(Ordering::Relaxed);
    let bytes_freed = if req.engine.dry_run || req.engine.stat_files {
        known
    } else {
        known.max(resolver.space_before.freed_since(&resolver.space_now()))
    };
    let summary = Summary::new(
        &counters,
        bytes_freed,
        started.elapsed(),
        &failures,
        &outcome.skipped_mounts,
        req.engine.dry_run,
    );
    if req.json {
        println!(
            "{}",
            serde_json::to_string(&summary).expect("summary serializes")
        );
    } else if req.progress || req.verbose || req.engine.dry_run {
        eprintln!("{}", summary.human());
    }
    // Recap when the lines may have scrolled away; one failure was already said once.
    if failures.len() > 1 {
        printer.error_line(&format!("{} paths could not be removed:", failures.len()));
        for f in &failures {
            eprintln!("  {f}");
        }
    }
    summary
}

fn fail(printer: &Printer, failures: &mut Vec<Failure>, path: PathBuf, reason: Reason) {
    let f = Failure { path, reason };
    printer.failed(&f);
    failures.push(f);
}
