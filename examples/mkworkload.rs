//! Creates a deterministic benchmark workload (see `reclaim::workload`).
//!
//! `mkworkload --shape flat|tree --files N [--fanout 32] [--per-leaf 100] [--size BYTES]
//! [--threads T] DIR`
//!
//! DIR must not exist; its parent must. Only ever creates, never removes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;
use reclaim::workload::{self, Spec};
use reclaim::WorkloadArgs;

/// Create a deterministic workload of files in a new directory.
#[derive(Debug, Parser)]
#[command(name = "mkworkload")]
struct Args {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Size of each file in bytes.
    #[arg(long, default_value_t = 0)]
    size: usize,
    /// Threads creating files (default: available parallelism).
    #[arg(long)]
    threads: Option<usize>,
    /// Directory to create; must not exist.
    dir: PathBuf,
}

fn spec(args: &Args) -> Spec {
    args.workload.spec(args.size)
}

fn run(args: &Args) -> anyhow::Result<()> {
    if args.dir.symlink_metadata().is_ok() {
        bail!(
            "{} already exists; refusing to touch it",
            args.dir.display()
        );
    }
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let spec = spec(args);
    let start = Instant::now();
    std::fs::create_dir(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    workload::create(&args.dir, &spec, threads)
        .with_context(|| format!("creating the workload in {}", args.dir.display()))?;
    eprintln!(
        "mkworkload: {} files, {} dirs in {} ({:.2}s, {threads} threads)",
        spec.files,
        spec.dir_count(),
        args.dir.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mkworkload: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
