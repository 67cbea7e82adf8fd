//! `reclaim bench`: lets any user see, on their own disk, what reclaim does against `rm -rf`.
//! Creates identical scratch workloads in a fresh directory it owns, removes them alternately
//! with both tools, and prints times and the ratio. It removes nothing outside that directory:
//! the directory is made in a parent only the caller and root may change (or a sticky one,
//! like /tmp), and everything in it is reached through the directory's fd
//! (`/proc/<pid>/fd/<n>`), never by a path someone could swap for a symlink meanwhile.

use crate::cmd::exit::Exit;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::engine::workload::scratch::Scratch;
use crate::engine::workload::{self, Shape, Spec};
use crate::sys::format::group;

/// What `reclaim bench` was asked.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// 100,000 files instead of 1,000,000.
    pub quick: bool,
    /// Where the scratch directory goes (`None`: the system temp dir).
    pub dir: Option<PathBuf>,
    /// Number of files (overrides `quick`).
    pub files: Option<u64>,
    pub shape: Shape,
    /// Runs per method (the median is reported).
    pub runs: u32,
    /// Drop the page cache before each timed removal.
    pub cold: bool,
    /// Workers for reclaim.
    pub threads: Option<u16>,
}

/// `reclaim bench`.
pub fn run(o: &BenchOptions) -> ExitCode {
    match bench(o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reclaim bench: {e:#}");
            Exit::Failed.into()
        }
    }
}

fn bench(args: &BenchOptions) -> Result<()> {
    let files = args
        .files
        .unwrap_or(if args.quick { 100_000 } else { 1_000_000 });
    let shape = args.shape;
    let spec = Spec {
        shape,
        files,
        file_size: 0,
    };
    if args.cold && !rustix::process::geteuid().is_root() {
        bail!("--cold drops the page cache and needs root");
    }
    let parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let scratch = Scratch::make(&parent)?;
    let me = std::env::current_exe().context("cannot find the reclaim binary")?;
    let threads = args.threads.map(|t| t.to_string());

    let shape_text = match shape {
        Shape::Flat => "in one directory".to_string(),
        Shape::Tree { fanout, per_leaf } => {
            format!("in a tree (fan-out {fanout}, {per_leaf} per leaf)")
        }
    };
    println!(
        "reclaim bench: {} empty files {shape_text}, in {} ({}), {} cache, {} runs",
        group(files),
        scratch.shown.display(),
        fs_name(scratch.path()),
        if args.cold { "cold" } else { "warm" },
        args.runs
    );
    println!("{:>4}  {:>10}  {:>14}", "run", "rm -rf", "reclaim rm -r");

    let mut rm_times = Vec::new();
    let mut reclaim_times = Vec::new();
    for run in 0..args.runs {
        let a = scratch.path().join(format!("run{run}-rm"));
        let b = scratch.path().join(format!("run{run}-reclaim"));
        for d in [&a, &b] {
            scratch.make_dir(d)?;
            workload::create(d, &spec, 2)
                .with_context(|| format!("cannot create workload in '{}'", d.display()))?;
        }
        // Alternate which goes first, so cache and writeback effects hit both equally.
        let mut rm = Command::new("rm");
        rm.arg("-rf").arg(&a);
        let mut rc = Command::new(&me);
        rc.args(["rm", "-r"]);
        if let Some(t) = &threads {
            rc.args(["--threads", t]);
        }
        rc.arg(&b);
        let order: [(&mut Command, &Path, bool); 2] = if run % 2 == 0 {
            [(&mut rm, &a, false), (&mut rc, &b, true)]
        } else {
            [(&mut rc, &b, true), (&mut rm, &a, false)]
        };
        let mut t = [Duration::ZERO; 2];
        for (cmd, dir, is_reclaim) in order {
            settle(args.cold)?;
            let took = time(cmd, dir)?;
            t[usize::from(is_reclaim)] = took;
        }
        scratch.check()?;
        rm_times.push(t[0]);
        reclaim_times.push(t[1]);
        println!(
            "{:>4}  {:>8.2} s  {:>12.2} s",
            run + 1,
            t[0].as_secs_f64(),
            t[1].as_secs_f64()
        );
    }
    let rm_med = median(&mut rm_times);
    let rc_med = median(&mut reclaim_times);
    let ratio = rc_med / rm_med;
    println!("{:>4}  {rm_med:>8.2} s  {rc_med:>12.2} s", "med");
    println!(
        "reclaim took {ratio:.2}x the time of rm -rf ({:.1}x as fast)",
        1.0 / ratio
    );
    Ok(())
}

/// Flushes dirty data (so one run's writeback does not land in the next) and, if asked, drops
/// the page cache.
fn settle(cold: bool) -> Result<()> {
    rustix::fs::sync();
    if cold {
        crate::sys::safeopen::kernel::write("/proc/sys/vm/drop_caches", b"3\n").map_err(|e| {
            anyhow::anyhow!("cannot drop caches: {}", crate::sys::error::errno_text(e))
        })?;
    }
    Ok(())
}

fn time(cmd: &mut Command, dir: &Path) -> Result<Duration> {
    let start = Instant::now();
    let status = cmd.status().context("cannot start removal command")?;
    let took = start.elapsed();
    if !status.success() || crate::sys::dirfd::lstat_path(dir).is_ok() {
        bail!("{:?} did not remove '{}' ({status})", cmd, dir.display());
    }
    Ok(took)
}

fn median(v: &mut [Duration]) -> f64 {
    v.sort();
    let n = v.len();
    let mid = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    };
    mid.as_secs_f64()
}

fn fs_name(path: &Path) -> String {
    let Ok(st) = rustix::fs::statfs(path) else {
        return "unknown file system".into();
    };
    match st.f_type as u64 {
        0xEF53 => "ext2/3/4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x0102_1994 => "tmpfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        other => format!("file system type {other:#x}"),
    }
}
