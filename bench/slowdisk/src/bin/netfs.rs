//! `netfs`: serve a backing directory at one or more FUSE mount points as if over a
//! network: every operation that would be an RPC on NFS waits `--rtt`, at most
//! `--slots` of them are in flight per mount and optionally `--server-ops` across all
//! mounts. Several mounts of one backing directory are several clients of one server.
//!
//! This file owns the CLI, mounting, the readiness signal (stderr line + `--ready-file`),
//! the stats file (SIGUSR1 and exit) and the clean unmount on SIGINT/SIGTERM. The file
//! system is `slowdisk::netfs::fs`; the slot accounting `slowdisk::netfs::{pool,gate}`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use slowdisk::netfs::fs::{Listing, MountOpts, NetFs, Shared};
use slowdisk::netfs::gate::Gate;
use slowdisk::netfs::parse_duration;
use slowdisk::netfs::pool::Pool;
use slowdisk::netfs::stats::Stats;

#[derive(Parser, Debug)]
#[command(
    about = "FUSE passthrough emulating a network file system: a round-trip time per \
                   RPC, a slot table per mount, an optional server cap"
)]
struct Cli {
    /// Directory whose tree is served (the server's export).
    #[arg(long)]
    backing: PathBuf,
    /// Mount point; repeat for several clients of the same server.
    #[arg(long = "mount", required = true)]
    mounts: Vec<PathBuf>,
    /// Round-trip time each RPC waits: e.g. 0.5ms, 200us, 2ms, 0.
    #[arg(long, default_value = "0.5ms", value_parser = parse_duration)]
    rtt: Duration,
    /// Operations in flight per mount (the client's RPC slot table).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    slots: u16,
    /// Operations in flight across all mounts (the server); unlimited if not given.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    server_ops: Option<u32>,
    /// Attribute and entry cache time given with every reply (NFS acregmin is 3 s).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    attr_ttl: Duration,
    /// Answer directory listings with attributes (READDIRPLUS): the kernel then caches
    /// every listed entry, so a stat or unlink after a listing needs no lookup.
    #[arg(long)]
    readdirplus: bool,
    /// FUSE subtype: the mount shows as `fuse.SUBTYPE` in /proc/mounts; empty: as plain
    /// `fuse`, the type most FUSE network file systems show (no name to recognise).
    #[arg(long, default_value = "netfs")]
    subtype: String,
    /// Directory cookies when entries are removed during a listing: `stable` (offsets
    /// survive removals), `index` (a cookie is a position in the directory as it is now, so
    /// a reader that removes what it read skips entries, as on servers with index cookies),
    /// `reorder` (positions in an order that changes with every removal: entries skipped
    /// and repeated).
    #[arg(long, default_value = "stable")]
    listing: Listing,
    /// Never list entries whose names start with PREFIX (they are still there: lookups,
    /// unlinks and rmdir's emptiness check see them), as SMB's access-based enumeration hides
    /// what a user may not read.
    #[arg(long, value_name = "PREFIX")]
    hide: Option<String>,
    /// Create this file once every mount answers.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Write per-operation counters as JSON here on SIGUSR1 and at exit.
    #[arg(long)]
    stats: Option<PathBuf>,
}

/// Block SIGINT/SIGTERM/SIGUSR1 in this thread before any other thread exists, so
/// every thread inherits the mask and `sigtimedwait` here receives them.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a local, then pthread_sigmask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1] {
            libc::sigaddset(&mut set, s);
        }
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

struct Mounted {
    path: PathBuf,
    pool: Arc<Pool>,
    session: Option<fuser::BackgroundSession>,
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn write_stats(
    path: &Path,
    cli: &Cli,
    stats: &Stats,
    server: &Gate,
    mounts: &[Mounted],
    dumps: u64,
) -> Result<()> {
    let mut s = format!(
        "{{\n  \"dumps\": {dumps}, \"rtt_ms\": {}, \"slots\": {}, \"server_ops\": {}, \
         \"attr_ttl_s\": {}, \"readdirplus\": {}, \"listing\": \"{:?}\",\n  \
         \"server_max_in_flight\": {}, \"server_busy_s\": {:.6},\n  \"mounts\": [",
        cli.rtt.as_secs_f64() * 1e3,
        cli.slots,
        cli.server_ops.map_or("null".into(), |n| n.to_string()),
        cli.attr_ttl.as_secs_f64(),
        cli.readdirplus,
        cli.listing,
        server.max_in_use(),
        server.busy().as_secs_f64(),
    );
    for (i, m) in mounts.iter().enumerate() {
        s.push_str(&format!(
            "{}{{\"path\": {}, \"rpcs\": {}, \"max_in_flight\": {}}}",
            if i > 0 { ", " } else { "" },
            json_str(&m.path.to_string_lossy()),
            m.pool.submitted(),
            m.pool.max_in_flight()
        ));
    }
    s.push_str("],\n  ");
    s.push_str(&stats.json_fields());
    s.push_str("\n}\n");
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, s).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// Unmount every mount still mounted; a busy one is retried a few times, loudly.
/// Returns whether all are unmounted.
fn unmount_all(mounts: &mut [Mounted], sig: i32) -> bool {
    const TRIES: u32 = 5;
    for m in mounts.iter_mut().filter(|m| m.session.is_some()) {
        for attempt in 1..=TRIES {
            match umount(&m.path) {
                Ok(()) => {
                    eprintln!("netfs: signal {sig}: unmounted {}", m.path.display());
                    break;
                }
                // Not mounted any more (unmounted from outside).
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    eprintln!(
                        "netfs: *** cannot unmount {}: BUSY (a process has a file, directory or \
                         cwd open there; attempt {attempt}/{TRIES}) ***",
                        m.path.display()
                    );
                    if attempt < TRIES {
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
                Err(e) => {
                    eprintln!("netfs: *** unmounting {}: {e} ***", m.path.display());
                    break;
                }
            }
        }
        if is_mounted(&m.path) {
            continue;
        }
        // Unmounting ended the FUSE connection: the session thread returns.
        if let Some(s) = m.session.take() {
            if let Err(e) = s.join() {
                eprintln!("netfs: event loop of {} ended with: {e}", m.path.display());
            }
        }
    }
    let busy: Vec<_> = mounts
        .iter()
        .filter(|m| m.session.is_some())
        .map(|m| m.path.display().to_string())
        .collect();
    if !busy.is_empty() {
        eprintln!(
            "netfs: *** STILL MOUNTED AND SERVING: {} — free it and signal again \
             (or `umount -l`) ***",
            busy.join(", ")
        );
    }
    busy.is_empty()
}

/// Whether `path` is a mount point of ours, per /proc/self/mountinfo.
fn is_mounted(path: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = path.to_string_lossy();
    info.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() > 4 && unescape(f[4]) == want && (l.contains(" - fuse.") || l.contains(" - fuse "))
    })
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut o = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            o.push(u8::from_str_radix(&s[i + 1..i + 4], 8).unwrap_or(b'?'));
            i += 4;
        } else {
            o.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&o).into_owned()
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("netfs must run as root (it mounts, serves every uid and sets owners)");
    }
    let backing = cli
        .backing
        .canonicalize()
        .with_context(|| format!("backing directory {}", cli.backing.display()))?;
    if !backing.is_dir() {
        bail!("{} is not a directory", backing.display());
    }
    let mut paths = Vec::new();
    for m in &cli.mounts {
        let p = m
            .canonicalize()
            .with_context(|| format!("mount point {}", m.display()))?;
        if p.starts_with(&backing) || backing.starts_with(&p) {
            bail!(
                "mount point {} and backing directory {} overlap (the server would serve \
                 its own clients)",
                p.display(),
                backing.display()
            );
        }
        if paths.contains(&p) {
            bail!("mount point {} given twice", p.display());
        }
        paths.push(p);
    }

    let sigs = block_signals();
    // Modes arrive already masked by the caller's umask; ours must not mask again.
    // SAFETY: umask has no preconditions.
    unsafe { libc::umask(0) };
    let nofile = slowdisk::netfs::sys::raise_nofile();

    let stats = Arc::new(Stats::new());
    let mut shared =
        Shared::new(&backing, stats.clone()).context("opening the backing directory")?;
    shared.listing = cli.listing;
    shared.hide = cli.hide.as_ref().map(|h| h.as_bytes().to_vec());
    let shared = Arc::new(shared);
    let server = Arc::new(Gate::new(cli.server_ops.map(|n| n as usize)));
    let fsname = {
        let b = backing.to_string_lossy();
        if b.contains(|c: char| c == ',' || c.is_whitespace()) {
            "netfs".to_string()
        } else {
            format!("netfs:{b}")
        }
    };
    let mut mounts = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let pool = Arc::new(Pool::new(
            &format!("netfs{i}"),
            cli.slots as usize,
            cli.rtt,
            server.clone(),
            stats.clone(),
        )?);
        let fs = NetFs::new(
            shared.clone(),
            pool.clone(),
            MountOpts {
                ttl: cli.attr_ttl,
                readdirplus: cli.readdirplus,
                max_background: cli.slots,
            },
        );
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName(fsname.clone()),
            fuser::MountOption::RW,
            fuser::MountOption::DefaultPermissions,
        ];
        // fuser mounts with type "fuse" and keeps `Subtype` for fusermount; the kernel
        // takes `subtype=` as a mount option too, and then shows `fuse.SUBTYPE`.
        if !cli.subtype.is_empty() {
            config
                .mount_options
                .push(fuser::MountOption::CUSTOM(format!(
                    "subtype={}",
                    cli.subtype
                )));
        }
        // Every user may use it (like an NFS mount); the kernel checks permissions.
        config.acl = fuser::SessionACL::All;
        // One thread reads requests; it never waits (the pool's workers do).
        config.n_threads = Some(1);
        let session = match fuser::spawn_mount(fs, path, &config) {
            Ok(s) => s,
            Err(e) => {
                unmount_all(&mut mounts, 0);
                return Err(e).with_context(|| format!("mounting FUSE on {}", path.display()));
            }
        };
        mounts.push(Mounted {
            path: path.clone(),
            pool,
            session: Some(session),
        });
    }

    // The first stat goes through FUSE INIT + GETATTR: once it answers, we serve.
    for m in &mounts {
        std::fs::metadata(&m.path).with_context(|| format!("stat {}", m.path.display()))?;
    }
    eprintln!(
        "netfs: ready: {} -> {} rtt={:?} slots={} server_ops={} attr_ttl={:?} readdirplus={} \
         listing={:?} type={} nofile={nofile}",
        backing.display(),
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
        cli.rtt,
        cli.slots,
        cli.server_ops.map_or("unlimited".into(), |n| n.to_string()),
        cli.attr_ttl,
        cli.readdirplus,
        cli.listing,
        if cli.subtype.is_empty() {
            "fuse".to_string()
        } else {
            format!("fuse.{}", cli.subtype)
        },
    );
    if let Some(r) = &cli.ready_file {
        std::fs::write(r, b"ready\n").with_context(|| format!("ready file {}", r.display()))?;
    }

    let mut dumps = 0u64;
    let mut dump = |mounts: &[Mounted]| {
        if let Some(p) = &cli.stats {
            dumps += 1;
            if let Err(e) = write_stats(p, &cli, &stats, &server, mounts, dumps) {
                eprintln!("netfs: stats: {e:#}");
            }
        }
    };
    loop {
        for m in mounts.iter_mut() {
            if m.session.as_ref().is_some_and(|s| s.guard.is_finished()) {
                eprintln!("netfs: {} was unmounted externally", m.path.display());
                if let Some(s) = m.session.take() {
                    let _ = s.join();
                }
            }
        }
        if mounts.iter().all(|m| m.session.is_none()) {
            break;
        }
        let Some(sig) = wait_signal(&sigs) else {
            continue;
        };
        if sig == libc::SIGUSR1 {
            dump(&mounts);
            continue;
        }
        if unmount_all(&mut mounts, sig) {
            break;
        }
    }
    dump(&mounts);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_defaults_and_repeats() {
        let c = Cli::parse_from([
            "netfs",
            "--backing",
            "b",
            "--mount",
            "m1",
            "--mount",
            "m2",
            "--rtt",
            "2ms",
        ]);
        assert_eq!(c.mounts.len(), 2);
        assert_eq!(c.rtt, Duration::from_millis(2));
        assert_eq!(c.slots, 64);
        assert_eq!(c.server_ops, None);
        assert_eq!(c.attr_ttl, Duration::from_secs(1));
        assert!(Cli::try_parse_from(["netfs", "--backing", "b"]).is_err());
        assert!(
            Cli::try_parse_from(["netfs", "--backing", "b", "--mount", "m", "--slots", "0"])
                .is_err()
        );
    }

    #[test]
    fn mountinfo_unescapes() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(json_str("a\"b\\"), "\"a\\\"b\\\\\"");
    }
}
