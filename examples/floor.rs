//! The *syscall floor* of a removal: unlinks every file of a workload by its KNOWN name (from
//! `Spec::layout()`, never reading a directory) with P threads, then removes the directories
//! deepest level first (each level in parallel), then DIR itself. No remover that has to
//! discover names can beat it with the same number of threads, so it is the lower bound in
//! benchmarks.
//!
//! `floor --shape flat|tree --files N [--fanout 32] [--per-leaf 100] --threads P DIR`
//!
//! It only ever unlinks names the workload spec produced (`f<i>` files, `d<k>` directories,
//! directories only when empty), so run against anything else it fails without harm.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;
use reclaim::workload::{file_name, Spec};
use reclaim::WorkloadArgs;
use rustix::fs::{openat, unlinkat, AtFlags, Mode, OFlags};

/// Names per unit of work handed to a thread.
const CHUNK: u64 = 1024;

/// Remove a workload by its known names: the lower bound for a remover with P threads.
#[derive(Debug, Parser)]
#[command(name = "floor")]
struct Args {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Threads issuing unlinks.
    #[arg(long)]
    threads: usize,
    /// Print what was done and how long each phase took.
    #[arg(long, short)]
    verbose: bool,
    /// Root of the workload; removed at the end.
    dir: PathBuf,
}

/// Collects failures from all threads; keeps the first message.
#[derive(Default)]
struct Errors {
    count: AtomicU64,
    first: Mutex<Option<String>>,
}

impl Errors {
    fn record(&self, what: impl FnOnce() -> String) {
        if self.count.fetch_add(1, Ordering::Relaxed) == 0 {
            *self.first.lock().unwrap_or_else(|e| e.into_inner()) = Some(what());
        }
    }
}

/// Writes `f<i>\0` into `buf` and returns it as a C string, without allocating. Must agree with
/// `workload::file_name` (checked at start-up).
fn file_cname(i: u64, buf: &mut [u8; 24]) -> &CStr {
    let mut digits = [0u8; 20];
    let mut n = i;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf[0] = b'f';
    for k in 0..len {
        buf[1 + k] = digits[len - 1 - k];
    }
    buf[1 + len] = 0;
    CStr::from_bytes_with_nul(&buf[..len + 2]).expect("one trailing NUL")
}

/// Opens `rel` (relative to `root`; empty means `root` itself) as a directory.
fn open_dir(root: BorrowedFd<'_>, rel: &Path) -> rustix::io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    openat(
        root,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Runs `work` on every item with `threads` threads pulling items from a shared index.
fn par_for<T: Sync>(threads: usize, items: &[T], work: impl Fn(&T) + Sync) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1).min(items.len().max(1)) {
            s.spawn(|| {
                while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                    work(item);
                }
            });
        }
    });
}

fn spec(args: &Args) -> Spec {
    args.workload.spec(0)
}

fn run(args: &Args) -> anyhow::Result<()> {
    let start = Instant::now();
    for i in [0, 1, 9, 10, 99, 1023, 1_000_000, u64::MAX] {
        let mut buf = [0u8; 24];
        let fast = file_cname(i, &mut buf).to_str().expect("ASCII");
        if fast != file_name(i) {
            bail!("floor's file names disagree with workload::file_name ({fast:?})");
        }
    }
    let meta = args
        .dir
        .symlink_metadata()
        .with_context(|| format!("{}", args.dir.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", args.dir.display());
    }
    let layout = spec(args).layout();
    let root = rustix::fs::open(
        &args.dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("opening {}", args.dir.display()))?;
    let errors = Errors::default();

    // Phase 1: files, in chunks of CHUNK names of one leaf.
    let mut chunks: Vec<(&Path, u64, u64)> = Vec::new();
    for leaf in &layout.leaves {
        let mut lo = 0;
        while lo < leaf.count {
            let hi = (lo + CHUNK).min(leaf.count);
            chunks.push((leaf.dir.as_path(), lo, hi));
            lo = hi;
        }
    }
    par_for(args.threads, &chunks, |&(dir, lo, hi)| {
        let dirfd = match open_dir(root.as_fd(), dir) {
            Ok(fd) => fd,
            Err(e) => {
                errors.record(|| format!("opening {}: {e}", dir.display()));
                return;
            }
        };
        let mut buf = [0u8; 24];
        for i in lo..hi {
            if let Err(e) = unlinkat(&dirfd, file_cname(i, &mut buf), AtFlags::empty()) {
                errors.record(|| format!("unlinking {}: {e}", dir.join(file_name(i)).display()));
            }
        }
    });
    let files_done = start.elapsed();

    // Phase 2: directories, deepest level first; each level in parallel, chunks of siblings
    // so that a chunk opens its parent once.
    let depth = |p: &Path| p.components().count();
    let max_depth = layout.dirs.iter().map(|d| depth(d)).max().unwrap_or(0);
    for level in (1..=max_depth).rev() {
        let mut dir_chunks: Vec<(&Path, Vec<&Path>)> = Vec::new();
        for d in layout.dirs.iter().filter(|d| depth(d) == level) {
            let parent = d.parent().unwrap_or(Path::new(""));
            let name = Path::new(d.file_name().expect("workload dirs have names"));
            match dir_chunks.last_mut() {
                Some((p, names)) if *p == parent && (names.len() as u64) < CHUNK => {
                    names.push(name)
                }
                _ => dir_chunks.push((parent, vec![name])),
            }
        }
        par_for(args.threads, &dir_chunks, |(parent, names)| {
            let dirfd = match open_dir(root.as_fd(), parent) {
                Ok(fd) => fd,
                Err(e) => {
                    errors.record(|| format!("opening {}: {e}", parent.display()));
                    return;
                }
            };
            for name in names {
                if let Err(e) = unlinkat(&dirfd, *name, AtFlags::REMOVEDIR) {
                    errors.record(|| format!("removing {}: {e}", parent.join(name).display()));
                }
            }
        });
    }
    drop(root);
    if let Err(e) = std::fs::remove_dir(&args.dir) {
        errors.record(|| format!("removing {}: {e}", args.dir.display()));
    }

    if args.verbose {
        eprintln!(
            "floor: {} files in {:.3}s, {} dirs + root in {:.3}s, {} threads",
            args.workload.files,
            files_done.as_secs_f64(),
            layout.dirs.len(),
            (start.elapsed() - files_done).as_secs_f64(),
            args.threads
        );
    }
    let failed = errors.count.load(Ordering::Relaxed);
    if failed > 0 {
        let first = errors
            .first
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        bail!(
            "{failed} operations failed; first: {}",
            first.unwrap_or_default()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floor: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
