//! `slowdisk`: mount a FUSE file system exposing `MOUNTPOINT/disk.img`, backed
//! by a real file, whose I/O is delayed by a hard-disk model (see `model.rs`).
//! Attach a loop device to it and mkfs/mount on top to emulate a slow disk.
//!
//! This file owns the CLI, the backing-file setup, mounting, the readiness
//! signal (stderr line + `--ready-file`) and the clean unmount on SIGINT/SIGTERM.

mod fs;
mod model;

use std::ffi::CString;
use std::fs::OpenOptions;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Parser;

use crate::model::{Disk, Params};

#[derive(Parser, Debug)]
#[command(about = "FUSE file system emulating a slow disk: MOUNTPOINT/disk.img")]
struct Cli {
    /// Real file holding the emulated disk's bytes.
    #[arg(long)]
    backing: PathBuf,
    /// Create or extend the backing file (sparse) to this size: bytes or
    /// with a K/M/G/T suffix (binary), e.g. 20G.
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Disk model preset; the explicit parameters below override it.
    #[arg(long, default_value = "hdd-7200", value_parser = ["hdd-7200", "ssd-sata", "none"])]
    model: String,
    /// Short (adjacent-track) seek time, ms.
    #[arg(long)]
    seek_min_ms: Option<f64>,
    /// Full-stroke seek time, ms.
    #[arg(long)]
    seek_max_ms: Option<f64>,
    /// Spindle speed (rotational latency is uniform in one revolution).
    #[arg(long)]
    rpm: Option<f64>,
    /// Sequential media rate, MB/s (10^6 bytes).
    #[arg(long)]
    seq_mbps: Option<f64>,
    /// Constant added to every request, ms.
    #[arg(long)]
    fixed_latency_ms: Option<f64>,
    /// A sequential request arriving within this long of the head going idle
    /// streams on without a gap (forgives host turnaround), ms.
    #[arg(long)]
    stream_gap_ms: Option<f64>,
    /// Write one line per request: `t_arrive_s op offset len wait_ms service_ms`, after a
    /// first line `# epoch UNIX_SECONDS` (the wall-clock time of t = 0).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Create this file once mounted and ready.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Run in the foreground (the only mode; accepted for clarity).
    #[arg(long)]
    foreground: bool,
    /// Directory to mount on; the disk appears as MOUNTPOINT/disk.img.
    mountpoint: PathBuf,
}

/// "20G" -> 20 GiB; plain numbers are bytes.
fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        Some('T') => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} too large"))
}

fn params(cli: &Cli) -> Params {
    let mut p = Params::preset(&cli.model).expect("clap restricts the preset names");
    let overrides = [
        (&mut p.seek_min_ms, cli.seek_min_ms),
        (&mut p.seek_max_ms, cli.seek_max_ms),
        (&mut p.rpm, cli.rpm),
        (&mut p.seq_mbps, cli.seq_mbps),
        (&mut p.fixed_latency_ms, cli.fixed_latency_ms),
        (&mut p.stream_gap_ms, cli.stream_gap_ms),
    ];
    let mut any = false;
    for (field, value) in overrides {
        if let Some(v) = value {
            *field = v;
            any = true;
        }
    }
    // Any explicit parameter turns the `none` preset on; a seek or rpm
    // parameter makes the model positional (seek + rotation) whatever the preset.
    p.enabled |= any;
    p.mechanical |= cli.seek_min_ms.is_some() || cli.seek_max_ms.is_some() || cli.rpm.is_some();
    p
}

/// Block SIGINT/SIGTERM in this thread before any other thread exists, so
/// every thread inherits the mask and `sigtimedwait` here receives them.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a local, then pthread_sigmask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Wait up to 1 s for a blocked signal; returns it, or None on timeout.
fn wait_signal(set: &libc::sigset_t) -> Option<i32> {
    let ts = libc::timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    // SAFETY: valid set and timespec; info may be null.
    let sig = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    (sig > 0).then_some(sig)
}

/// umount2(mountpoint, 0); Err carries the errno.
fn umount(mountpoint: &Path) -> std::io::Result<()> {
    let c = CString::new(mountpoint.as_os_str().as_bytes())?;
    // SAFETY: valid NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let params = params(&cli);

    let backing = OpenOptions::new()
        .read(true)
        .write(true)
        .create(cli.size.is_some())
        .truncate(false)
        .open(&cli.backing)
        .with_context(|| format!("opening backing file {}", cli.backing.display()))?;
    let mut size = backing.metadata()?.len();
    if let Some(want) = cli.size {
        if want > size {
            backing.set_len(want).context("extending backing file")?;
            size = want;
        }
    }
    if size == 0 {
        bail!("backing file is empty; give --size");
    }
    let trace = match &cli.trace {
        Some(p) => Some(
            std::fs::File::create(p).with_context(|| format!("creating trace {}", p.display()))?,
        ),
        None => None,
    };
    let mountpoint = cli
        .mountpoint
        .canonicalize()
        .with_context(|| format!("mount point {}", cli.mountpoint.display()))?;

    let sigs = block_signals();
    let describe = params.describe();
    let fs = fs::SlowFs::new(Disk::new(params, size), backing, size, trace);
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("slowdisk".into()),
        fuser::MountOption::Subtype("slowdisk".into()),
        fuser::MountOption::RW,
    ];
    // One event-loop thread: the emulated head serves one request at a time.
    config.n_threads = Some(1);
    let session = fuser::spawn_mount(fs, &mountpoint, &config)
        .with_context(|| format!("mounting FUSE on {}", mountpoint.display()))?;

    // The first stat goes through FUSE INIT + LOOKUP: once it answers, we serve.
    let img = mountpoint.join(fs::FILE_NAME);
    std::fs::metadata(&img).with_context(|| format!("stat {}", img.display()))?;
    eprintln!(
        "slowdisk: ready at {} size={} {}",
        img.display(),
        size,
        describe
    );
    if let Some(r) = &cli.ready_file {
        std::fs::write(r, b"ready\n").with_context(|| format!("ready file {}", r.display()))?;
    }

    loop {
        if session.guard.is_finished() {
            eprintln!("slowdisk: file system was unmounted externally");
            break;
        }
        let Some(sig) = wait_signal(&sigs) else {
            continue;
        };
        match umount(&mountpoint) {
            Ok(()) => {
                eprintln!("slowdisk: signal {sig}: unmounted {}", mountpoint.display());
                break;
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => eprintln!(
                "slowdisk: cannot unmount {}: busy (a loop device or open file still uses \
                 {}; detach it with `losetup -d`, then signal again). Still serving.",
                mountpoint.display(),
                img.display()
            ),
            Err(e) => bail!("unmounting {}: {e}", mountpoint.display()),
        }
    }
    // Unmounting aborted the FUSE connection: the event loop ends, calls
    // `destroy` (flushing the trace) and we join it.
    if let Err(e) = session.join() {
        eprintln!("slowdisk: event loop ended with: {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("20G"), Ok(20 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert!(parse_size("x").is_err());
    }

    #[test]
    fn explicit_parameters_override_preset() {
        let cli = Cli::parse_from(["slowdisk", "--backing", "b", "--rpm", "5400", "m"]);
        let p = params(&cli);
        assert_eq!(p.rpm, 5400.0);
        assert_eq!(p.seek_max_ms, 8.0);
        let cli = Cli::parse_from(["slowdisk", "--backing", "b", "--model", "ssd-sata", "m"]);
        assert_eq!(params(&cli).fixed_latency_ms, 0.1);
    }
}
