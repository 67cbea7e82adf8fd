//! `reclaim bench`: lets any user see, on their own disk, what reclaim does against `rm -rf`.
//! Creates identical scratch workloads in a fresh directory it owns, removes them alternately
//! with both tools, and prints times and the ratio. It removes nothing outside that directory:
//! the directory is made in a parent only the caller and root may change (or a sticky one,
//! like /tmp), and everything in it is reached through the directory's fd
//! (`/proc/<pid>/fd/<n>`), never by a path someone could swap for a symlink meanwhile.

use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::engine::workload::{self, Shape, Spec};
use crate::sys::format::group;

/// What `reclaim bench` was asked.
#[derive(Clone, Debug)]
pub struct Options {
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
pub fn run(o: &Options) -> ExitCode {
    match bench(o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reclaim bench: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn bench(args: &Options) -> Result<()> {
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

/// The bench's scratch directory: made (0700) in the parent's fd under a fresh name, held open,
/// and reached through `/proc/<pid>/fd/<n>` (also by the removal commands it runs), so a swap
/// of its name for a symlink changes nothing. Emptied and removed on drop, through the same fd;
/// its name in the parent is removed only while it is still this directory.
struct Scratch {
    parent: std::os::fd::OwnedFd,
    name: std::ffi::CString,
    fd: std::os::fd::OwnedFd,
    ident: crate::sys::dirfd::Ident,
    /// `/proc/<pid>/fd/<n>`.
    path: std::path::PathBuf,
    /// Where it was made, for messages.
    pub shown: std::path::PathBuf,
}

impl Scratch {
    fn make(parent: &Path) -> Result<Scratch> {
        use crate::sys::dirfd;
        let cannot = |why: String| {
            anyhow::anyhow!("cannot work in {}: {why}", crate::sys::quote::quote(parent))
        };
        let parent_fd =
            dirfd::open_dir_path(parent).map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
        let st =
            rustix::fs::fstat(&parent_fd).map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
        let me = rustix::process::geteuid().as_raw();
        if let Some(why) = dirfd::others_may_move_names(&st, me) {
            return Err(cannot(format!(
                "{why}, so its scratch directory could be swapped for another; give a \
                 directory only you or root may change, or a sticky one like /tmp"
            )));
        }
        for _ in 0..8 {
            let name = format!("reclaim-bench-{}", crate::trash::safefile::random_hex(6));
            let name = std::ffi::CString::new(name).expect("no NUL");
            match crate::sys::safeopen::mkdir_at(&parent_fd, &name, 0o700) {
                Ok(()) => {}
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(cannot(crate::sys::error::errno_text(e))),
            }
            let fd = dirfd::open_dir_at(&parent_fd, &name)
                .map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
            let facts = dirfd::fstat(&fd).map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
            let own =
                rustix::fs::fstat(&fd).map_err(|e| cannot(crate::sys::error::errno_text(e)))?;
            if own.st_uid != me
                || facts.ident.dev != dirfd::fstat(&parent_fd).map_or(0, |f| f.ident.dev)
            {
                return Err(cannot("its new scratch directory was replaced".into()));
            }
            let path = format!("/proc/{}/fd/{}", std::process::id(), fd.as_raw_fd()).into();
            let shown = parent.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
            return Ok(Scratch {
                parent: parent_fd,
                name,
                fd,
                ident: facts.ident,
                path,
                shown,
            });
        }
        Err(cannot("no fresh name for a scratch directory".into()))
    }

    /// Where to reach what is inside (`/proc/<pid>/fd/<n>`).
    fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the directory `dir` (a name directly inside, reached as `path()`'s child).
    fn make_dir(&self, dir: &Path) -> Result<()> {
        let name = dir
            .file_name()
            .and_then(|n| std::ffi::CString::new(n.as_bytes()).ok())
            .ok_or_else(|| anyhow::anyhow!("no name in {}", dir.display()))?;
        crate::sys::safeopen::mkdir_at(&self.fd, &name, 0o755).map_err(|e| {
            anyhow::anyhow!(
                "cannot make {}: {}",
                crate::sys::quote::quote(dir),
                crate::sys::error::errno_text(e)
            )
        })
    }

    /// Fails if the scratch directory is no longer at its name (someone moved it).
    fn check(&self) -> Result<()> {
        match crate::sys::dirfd::lstat_at(&self.parent, &self.name) {
            Ok(f) if f.ident == self.ident => Ok(()),
            _ => bail!(
                "{} was moved or replaced while the bench ran; stopping",
                crate::sys::quote::quote(&self.shown)
            ),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // What is inside, through the fd (each a real directory: remove_dir_all never follows
        // a symlink it meets).
        let mut names = Vec::new();
        if let Ok(list) = crate::trash::reopen(&self.fd) {
            let mut buf = crate::sys::dirfd::DirBuf::new(8 << 10);
            let _ = crate::sys::dirfd::for_each_entry(&list, &mut buf, |n, _, _| {
                names.push(std::ffi::OsStr::from_bytes(n.to_bytes()).to_owned())
            });
        }
        for n in names {
            if let Ok(n) = std::ffi::CString::new(n.as_bytes()) {
                let _ = crate::sys::safeopen::remove_tree_at(&self.fd, &n);
            }
        }
        if crate::sys::dirfd::lstat_at(&self.parent, &self.name)
            .is_ok_and(|f| f.ident == self.ident)
        {
            let _ = crate::sys::safeopen::rmdir_at(&self.parent, &self.name);
        }
    }
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
