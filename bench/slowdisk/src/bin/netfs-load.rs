//! netfs-load: a small fio-like metadata load for `bench/netfs-check.sh`.
//!
//! `netfs-load prepare --dir D --threads T --files N [--layout shared|private]`
//!   creates the directories and T x N empty files (run it on the backing directory:
//!   local and fast, and the mount has seen none of them).
//! `netfs-load run --op stat|create|unlink --dir D --threads T --files N
//!   [--layout shared|private] [--duration SECS]`
//!   runs T threads, each over its own N names (`t<T>-<i>`), in one directory (`shared`:
//!   D itself) or one directory per thread (`private`: D/t<T>), through a directory fd
//!   (`fstatat`, `openat(O_CREAT|O_EXCL)` + `close`, `unlinkat`), until its names run out
//!   or the duration passes. Prints one JSON line: ops, seconds, ops/s, latency
//!   percentiles, errors and the helper's own CPU seconds.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

struct Args {
    cmd: String,
    op: String,
    dir: PathBuf,
    threads: usize,
    files: usize,
    shared: bool,
    duration: Duration,
}

fn usage() -> ! {
    eprintln!(
        "usage: netfs-load prepare|run [--op stat|create|unlink] --dir D --threads T \
         --files N [--layout shared|private] [--duration SECS]"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let mut it = std::env::args().skip(1);
    let cmd = it.next().unwrap_or_else(|| usage());
    let mut a = Args {
        cmd,
        op: "stat".into(),
        dir: PathBuf::new(),
        threads: 1,
        files: 1000,
        shared: false,
        duration: Duration::from_secs(2),
    };
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| usage());
        match k.as_str() {
            "--op" => a.op = v,
            "--dir" => a.dir = v.into(),
            "--threads" => a.threads = v.parse().unwrap_or_else(|_| usage()),
            "--files" => a.files = v.parse().unwrap_or_else(|_| usage()),
            "--layout" => {
                a.shared = match v.as_str() {
                    "shared" => true,
                    "private" => false,
                    _ => usage(),
                }
            }
            "--duration" => {
                a.duration = Duration::from_secs_f64(v.parse().unwrap_or_else(|_| usage()))
            }
            _ => usage(),
        }
    }
    if a.dir.as_os_str().is_empty() || a.threads == 0 || !["prepare", "run"].contains(&&*a.cmd) {
        usage();
    }
    a
}

fn dir_of(a: &Args, t: usize) -> PathBuf {
    if a.shared {
        a.dir.clone()
    } else {
        a.dir.join(format!("t{t}"))
    }
}

fn name(t: usize, i: usize) -> CString {
    CString::new(format!("t{t}-{i}")).unwrap()
}

fn open_dir(p: &Path) -> std::io::Result<OwnedFd> {
    let c = CString::new(p.as_os_str().as_encoded_bytes())?;
    // SAFETY: valid C string; the fd is ours.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One operation on `dfd/name`; Err(errno).
fn op(kind: &str, dfd: i32, name: &CString) -> Result<(), i32> {
    // SAFETY: plain syscalls on a valid dir fd and C string.
    let rc = unsafe {
        match kind {
            "stat" => {
                let mut st = std::mem::zeroed::<libc::stat>();
                libc::fstatat(dfd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW)
            }
            "create" => {
                let fd = libc::openat(
                    dfd,
                    name.as_ptr(),
                    libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o644,
                );
                if fd >= 0 {
                    libc::close(fd);
                }
                fd
            }
            "unlink" => libc::unlinkat(dfd, name.as_ptr(), 0),
            _ => usage(),
        }
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(())
    }
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage with a valid pointer.
    let ru = unsafe {
        let mut ru = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn prepare(a: &Args) -> std::io::Result<()> {
    std::fs::create_dir_all(&a.dir)?;
    for t in 0..a.threads {
        let d = dir_of(a, t);
        std::fs::create_dir_all(&d)?;
        let dfd = open_dir(&d)?;
        for i in 0..a.files {
            if let Err(e) = op("create", dfd.as_raw_fd(), &name(t, i)) {
                return Err(std::io::Error::from_raw_os_error(e));
            }
        }
    }
    Ok(())
}

fn run(a: &Args) -> std::io::Result<()> {
    // Open the directories first (their lookups are not part of the measurement).
    let dirs: Vec<OwnedFd> = (0..a.threads)
        .map(|t| open_dir(&dir_of(a, t)))
        .collect::<Result<_, _>>()?;
    let barrier = Arc::new(Barrier::new(a.threads + 1));
    let cpu0 = cpu_seconds();
    let mut start = Instant::now();
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = dirs
            .iter()
            .enumerate()
            .map(|(t, dfd)| {
                let barrier = barrier.clone();
                let (kind, files, dur) = (a.op.as_str(), a.files, a.duration);
                let dfd = dfd.as_raw_fd();
                s.spawn(move || {
                    let names: Vec<CString> = (0..files).map(|i| name(t, i)).collect();
                    let mut lat = Vec::with_capacity(files);
                    let mut errors = 0u64;
                    let mut first_err = 0;
                    barrier.wait();
                    let t0 = Instant::now();
                    for n in &names {
                        let o0 = Instant::now();
                        if let Err(e) = op(kind, dfd, n) {
                            errors += 1;
                            if first_err == 0 {
                                first_err = e;
                            }
                        }
                        let now = Instant::now();
                        lat.push((now - o0).as_nanos() as u64);
                        if now - t0 >= dur {
                            break;
                        }
                    }
                    (lat, errors, first_err, Instant::now())
                })
            })
            .collect();
        barrier.wait();
        start = Instant::now();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    let end = results.iter().map(|r| r.3).max().unwrap_or(start);
    let secs = (end - start).as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let mut lat: Vec<u64> = results.iter().flat_map(|r| r.0.iter().copied()).collect();
    lat.sort_unstable();
    let pct = |p: f64| {
        if lat.is_empty() {
            0.0
        } else {
            lat[((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1] as f64 / 1e3
        }
    };
    let errors: u64 = results.iter().map(|r| r.1).sum();
    let first_err = results.iter().map(|r| r.2).find(|&e| e != 0).unwrap_or(0);
    let n = lat.len();
    println!(
        "{{\"op\": \"{}\", \"layout\": \"{}\", \"threads\": {}, \"ops\": {n}, \"secs\": {secs:.4}, \
         \"ops_per_s\": {:.1}, \"p50_us\": {:.1}, \"p99_us\": {:.1}, \"errors\": {errors}, \
         \"first_errno\": {first_err}, \"cpu_s\": {cpu:.3}}}",
        a.op,
        if a.shared { "shared" } else { "private" },
        a.threads,
        n as f64 / secs.max(1e-9),
        pct(0.5),
        pct(0.99),
    );
    Ok(())
}

fn main() {
    let a = parse();
    let r = match a.cmd.as_str() {
        "prepare" => prepare(&a),
        _ => run(&a),
    };
    if let Err(e) = r {
        eprintln!("netfs-load: {e}");
        std::process::exit(1);
    }
}
