//! Gentle removal of large files (`reclaim rm FILE` without `--fast`): a regular file that
//! allocates at least 64 MiB is moved into the user's trash on its file system (a claimed entry,
//! so an interruption leaves it there for a reaper; `.reclaim-shrink.<inode>.<random>` in its
//! directory where no trash can be used), shrunk from the end in paced steps and unlinked —
//! unless someone else could see it shrink (other hard links, another opener, a lease), in
//! which case it is unlinked whole and nobody else's data changes.
//!
//! These tests run on small loop-mounted ext4 and ext3 images (root only; skipped otherwise),
//! so FIEMAP, leases and `fdatasync` behave as on a real disk: root's tmpfs has no FIEMAP.
//! ext4 files are made with `fallocate` (unwritten extents: allocated, but nothing written);
//! ext3 files (block-mapped: one indirect block per 4 MiB, never "cheap") are written.

use std::fs::{self, File};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{self, assert_same, parse_report, scratch, Scratch, Snapshot, Volume};

const MIB: u64 = 1 << 20;
const HIDDEN: &str = ".reclaim-shrink.";

// ---------------------------------------------------------------------------------------------
// Volumes and big files.

/// A fresh ext4 volume mounted on `root/vol`. Err: why not (for a skip).
fn ext4_vol(s: &Scratch) -> Result<Volume, String> {
    Volume::ext4(s, "vol", 8 << 30, 4096)
}

/// A fresh ext3 volume (block-mapped files) mounted on `root/vol`.
fn ext3_vol(s: &Scratch) -> Result<Volume, String> {
    Volume::ext3(s, "vol", 512 * MIB, 256)
}

/// What a big test file was when made.
#[derive(Clone, Copy, Debug)]
struct Big {
    ino: u64,
    size: u64,
    allocated: u64,
    seed: u64,
    /// Every byte written with the pattern (else only the first and last 4 KiB).
    full: bool,
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The pattern bytes of file `seed` at `[offset, offset + len)` (both multiples of 8).
fn pattern(seed: u64, offset: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let first = offset / 8;
    for w in first..first + (len as u64 / 8) {
        v.extend_from_slice(&splitmix((seed << 48) ^ w).to_le_bytes());
    }
    v
}

fn facts(p: &Path) -> (u64, u64, u64) {
    let md = fs::symlink_metadata(p).unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()));
    (md.ino(), md.len(), md.blocks() * 512)
}

/// A file of `len` bytes, every byte written with pattern `seed`, synced.
fn written(s: &Scratch, rel: &str, len: u64, seed: u64) -> Big {
    let p = s.path(rel);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
        .unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
    let mut off = 0;
    while off < len {
        let n = MIB.min(len - off);
        f.write_all(&pattern(seed, off, n as usize)).unwrap();
        off += n;
    }
    f.sync_all().unwrap();
    let (ino, size, allocated) = facts(&p);
    Big {
        ino,
        size,
        allocated,
        seed,
        full: true,
    }
}

/// A file of `len` bytes allocated with `fallocate` (unwritten extents), with pattern `seed`
/// written over its first and last 4 KiB, synced.
fn fallocated(s: &Scratch, rel: &str, len: u64, seed: u64) -> Big {
    let p = s.path(rel);
    let f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
        .unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
    rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, len)
        .unwrap_or_else(|e| panic!("fallocate {}: {e}", p.display()));
    f.write_all_at(&pattern(seed, 0, 4096), 0).unwrap();
    f.write_all_at(&pattern(seed, len - 4096, 4096), len - 4096)
        .unwrap();
    f.sync_all().unwrap();
    let (ino, size, allocated) = facts(&p);
    Big {
        ino,
        size,
        allocated,
        seed,
        full: false,
    }
}

/// Panics unless `f` holds exactly the first `len` bytes of `big` (its pattern; zeros in the
/// unwritten middle of a fallocated file are not read, only its written head and tail).
#[track_caller]
fn assert_prefix_of(f: &File, big: &Big, len: u64, what: &str) {
    assert_eq!(f.metadata().unwrap().len(), len, "{what}: length");
    let check = |off: u64, n: u64| {
        let mut buf = vec![0u8; n as usize];
        f.read_exact_at(&mut buf, off)
            .unwrap_or_else(|e| panic!("{what}: read {n} at {off}: {e}"));
        assert!(
            buf == pattern(big.seed, off, n as usize),
            "{what}: bytes at {off}..{} changed",
            off + n
        );
    };
    if big.full {
        let mut off = 0;
        while off < len {
            let n = MIB.min(len - off);
            check(off, n);
            off += n;
        }
    } else {
        check(0, 4096.min(len));
        if len == big.size {
            check(len - 4096, 4096);
        }
    }
}

/// Panics unless `rel` is still `big`, whole: same inode, size, allocation and bytes.
#[track_caller]
fn assert_whole(s: &Scratch, rel: &str, big: &Big) {
    let p = s.path(rel);
    let (ino, size, allocated) = facts(&p);
    assert_eq!(
        (ino, size, allocated),
        (big.ino, big.size, big.allocated),
        "{rel}: (inode, size, allocated) changed"
    );
    assert_prefix_of(&File::open(&p).unwrap(), big, big.size, rel);
}

// ---------------------------------------------------------------------------------------------
// Reports and directories.

/// The `gentle` entries of a `--json` report (empty if the key is absent), after checking that
/// the report is one object with the documented fields.
fn gentle_of(stdout: &[u8]) -> Vec<Value> {
    let _ = parse_report(stdout);
    let v: Value = serde_json::from_slice(stdout).unwrap();
    match v.get("gentle") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => panic!("\"gentle\" is not an array: {other}"),
    }
}

/// The one gentle entry of a report, with its common fields checked.
#[track_caller]
fn one_gentle(stdout: &[u8], path: &str, big: &Big) -> Value {
    let g = gentle_of(stdout);
    assert_eq!(g.len(), 1, "one gentle entry expected: {g:?}");
    let e = g[0].clone();
    assert_eq!(e["path"], path, "{e}");
    assert_eq!(e["allocated"].as_u64(), Some(big.allocated), "{e}");
    assert!(e["steps"].is_u64(), "{e}");
    let el = e["elapsed_s"].as_f64().unwrap_or(-1.0);
    assert!((0.0..120.0).contains(&el), "elapsed_s: {e}");
    e
}

fn steps(e: &Value) -> u64 {
    e["steps"].as_u64().unwrap()
}

/// Where shrinks wait in the volume `vol`: names starting with `.reclaim-shrink.` in `vol`
/// itself, and the `reaping` files of its trash's entries.
fn shrinking(vol: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(vol)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(HIDDEN))
        .map(|n| vol.join(n))
        .collect();
    let trash = util::trash_dir(vol);
    for id in util::trash_entries(&trash) {
        let p = trash.join(id).join("reaping");
        if fs::symlink_metadata(&p).is_ok() {
            v.push(p);
        }
    }
    v.sort();
    v
}

/// A snapshot of `vol` without its trash, after checking the trash holds no entry (a finished
/// removal leaves none; the trash directory itself may stay).
#[track_caller]
fn vol_snapshot(s: &Scratch) -> Snapshot {
    let vol = s.path("vol");
    let left = util::trash_entries(&util::trash_dir(&vol));
    assert!(left.is_empty(), "entries left in the trash: {left:?}");
    util::snapshot_without_trash(&vol)
}

fn without(mut snap: Snapshot, rel: &str) -> Snapshot {
    assert!(
        snap.remove(Path::new(rel)).is_some(),
        "{rel} not in snapshot"
    );
    snap
}

/// `reclaim rm ARGS` in the scratch root, output captured.
fn rm(s: &Scratch, args: &[&str]) -> std::process::Output {
    s.rm(args).output().unwrap()
}

/// `reclaim rm ARGS` started in the background (paths checked as for `Scratch::rm`).
fn spawn_rm(s: &Scratch, args: &[&str]) -> Child {
    let _ = s.rm(args);
    StdCommand::new(util::reclaim_bin())
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .current_dir(s.root())
        .arg("rm")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Polls `f` every 2 ms until it returns Some, the child exits, or 10 s pass.
fn poll<T>(child: &mut Child, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("reclaim exited ({st}) before {what}");
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "no {what} in 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The file being shrunk in `vol` once reclaim has taken its first step on it (size below
/// `size`).
fn first_step_taken(vol: &Path, size: u64) -> Option<(PathBuf, u64)> {
    let p = shrinking(vol).into_iter().next()?;
    let len = fs::symlink_metadata(&p).ok()?.len();
    (len < size).then_some((p, len))
}

// ---------------------------------------------------------------------------------------------
// The promises.

#[test]
fn shrinks_large_file_in_steps_and_leaves_nothing() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    s.file("vol/neighbour", "stays\n");
    s.symlink("vol/link-elsewhere", "neighbour");
    let before = vol_snapshot(&s);
    // 1 GiB from fallocate spans ~9 block groups on a fresh image: ~9 cost units, so the
    // first step (at most 4 units) cannot free it all.
    let big = fallocated(&s, "vol/big", 1 << 30, 1);
    let out = rm(&s, &["--json", "--max-latency", "5ms", "vol/big"]);
    util::assert_success(&out);
    let r = parse_report(&out.stdout);
    assert_eq!((r.files, r.dirs), (1, 0));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(
        r.bytes_freed >= big.allocated,
        "bytes_freed {}",
        r.bytes_freed
    );
    let e = one_gentle(&out.stdout, "vol/big", &big);
    assert!(e.get("unlinked_whole").is_none(), "{e}");
    assert!(e.get("stopped").is_none(), "{e}");
    assert!(steps(&e) >= 2, "1 GiB over ~9 regions in one step: {e}");
    assert!(e["elapsed_s"].as_f64().unwrap() <= r.elapsed_s, "{e}");
    assert!(!s.exists("vol/big"));
    assert_eq!(shrinking(&s.path("vol")), Vec::<PathBuf>::new());
    // Nothing else changed, and the probe left no file behind.
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn shrinks_block_mapped_file_in_steps_on_ext3() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    s.file("vol/neighbour", "stays\n");
    let before = vol_snapshot(&s);
    // 32 MiB block-mapped: 8 indirect blocks + a region, ~9 units; first step 4 units.
    let big = written(&s, "vol/big", 96 * MIB, 2);
    let out = rm(&s, &["--json", "vol/big"]);
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/big", &big);
    assert!(e.get("unlinked_whole").is_none(), "{e}");
    assert!(e.get("stopped").is_none(), "{e}");
    assert!(steps(&e) >= 2, "{e}");
    assert!(!s.exists("vol/big"));
    assert_eq!(shrinking(&s.path("vol")), Vec::<PathBuf>::new());
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn prints_a_gentle_summary_line_without_json() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    let before = vol_snapshot(&s);
    fallocated(&s, "vol/big", 1 << 30, 3);
    // Off a terminal the summary comes with -v only (cron mail stays empty).
    let out = rm(&s, &["-v", "vol/big"]);
    util::assert_success(&out);
    assert_eq!(util::stdout_of(&out), "removed 'vol/big'\n");
    let err = util::stderr_of(&out);
    let line = err
        .lines()
        .find(|l| l.contains("gently: 'vol/big'"))
        .unwrap_or_else(|| panic!("no gently line in stderr:\n{err}"));
    assert!(line.contains(" steps"), "{line}");
    assert!(line.contains("other I/O p50/p99"), "{line}");
    assert!(line.contains("(budget 20 ms)"), "default budget: {line}");
    assert!(!s.exists("vol/big"));
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn cheap_file_is_unlinked_without_steps() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    let before = vol_snapshot(&s);
    // 96 MiB in one or two extents, one or two 128 MiB regions on a fresh image: <= 3 units.
    let big = fallocated(&s, "vol/big", 96 * MIB, 4);
    let out = rm(&s, &["--json", "vol/big"]);
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/big", &big);
    assert_eq!(steps(&e), 0, "{e}");
    assert!(e.get("unlinked_whole").is_none(), "{e}");
    assert!(e.get("online_discard").is_none(), "{e}");
    assert!(!s.exists("vol/big"));
    assert_same("vol", &before, &vol_snapshot(&s));
    // And nothing is said about it on stderr without --json.
    fallocated(&s, "vol/big2", 96 * MIB, 5);
    let out = rm(&s, &["vol/big2"]);
    util::assert_success(&out);
    assert_eq!(util::stderr_of(&out), "");
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn online_discard_makes_a_contiguous_file_worth_pacing() {
    // Mounted with `discard`, freeing costs the device by bytes: the same kind of contiguous
    // file that is cheap above (a few extents) is shrunk in byte-bounded steps here, and the
    // report says why.
    let s = scratch!();
    let _vol = util::or_skip!(Volume::ext4_discard(&s, "vol", 8 << 30, 4096));
    let before = vol_snapshot(&s);
    let big = fallocated(&s, "vol/big", 256 * MIB, 6);
    let out = rm(&s, &["--json", "vol/big"]);
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/big", &big);
    assert!(steps(&e) >= 2, "{e}");
    assert_eq!(e["online_discard"], Value::Bool(true), "{e}");
    assert!(!s.exists("vol/big"));
    assert_same("vol", &before, &vol_snapshot(&s));
    // Said in the summary line too.
    fallocated(&s, "vol/big2", 256 * MIB, 7);
    let out = rm(&s, &["-v", "vol/big2"]);
    util::assert_success(&out);
    let err = util::stderr_of(&out);
    assert!(err.contains("online discard"), "{err}");
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn btrfs_discard_sync_is_paced_and_async_is_left_to_btrfs() {
    // discard=sync discards in the transaction's commit: priced by bytes and committed per
    // step. discard=async is btrfs's own rate-limited worker: not reclaim's to pace.
    for (options, paced) in [("discard=sync", true), ("discard=async", false)] {
        let s = scratch!();
        let _vol = util::or_skip!(Volume::btrfs(&s, "vol", 2 << 30, options));
        let before = vol_snapshot(&s);
        let big = written(&s, "vol/big", 256 * MIB, 8);
        let out = rm(&s, &["--json", "vol/big"]);
        util::assert_success(&out);
        let e = one_gentle(&out.stdout, "vol/big", &big);
        assert_eq!(e.get("online_discard").is_some(), paced, "{options}: {e}");
        if paced {
            assert!(steps(&e) >= 2, "{options}: {e}");
        }
        assert!(!s.exists("vol/big"));
        assert_same("vol", &before, &vol_snapshot(&s));
    }
}

#[test]
fn fast_unlinks_at_once() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    let before = vol_snapshot(&s);
    let big = fallocated(&s, "vol/big", 1 << 30, 6);
    let out = rm(&s, &["--json", "--fast", "vol/big"]);
    util::assert_success(&out);
    let r = parse_report(&out.stdout);
    assert_eq!(r.files, 1);
    assert!(r.bytes_freed >= big.allocated);
    for e in gentle_of(&out.stdout) {
        assert_eq!(steps(&e), 0, "--fast took steps: {e}");
    }
    assert!(!s.exists("vol/big"));
    assert_eq!(shrinking(&s.path("vol")), Vec::<PathBuf>::new());
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn each_large_file_named_gets_its_own_entry() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    s.file("vol/small", "small\n");
    let before = without(vol_snapshot(&s), "small");
    let dear = fallocated(&s, "vol/dear", 1 << 30, 15);
    let cheap = fallocated(&s, "vol/cheap", 96 * MIB, 16);
    let out = rm(&s, &["--json", "vol/dear", "vol/small", "vol/cheap"]);
    util::assert_success(&out);
    assert_eq!(parse_report(&out.stdout).files, 3);
    let g = gentle_of(&out.stdout);
    assert_eq!(g.len(), 2, "small files are not gentle entries: {g:?}");
    assert_eq!(
        (&g[0]["path"], &g[1]["path"]),
        (&"vol/dear".into(), &"vol/cheap".into())
    );
    assert_eq!(g[0]["allocated"].as_u64(), Some(dear.allocated));
    assert_eq!(g[1]["allocated"].as_u64(), Some(cheap.allocated));
    assert!(steps(&g[0]) >= 2 && steps(&g[1]) == 0, "{g:?}");
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn dry_run_touches_no_large_file() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    let big = fallocated(&s, "vol/big", 1 << 30, 17);
    let before = vol_snapshot(&s);
    let out = rm(&s, &["--json", "--dry-run", "vol/big"]);
    util::assert_success(&out);
    assert_eq!(gentle_of(&out.stdout).len(), 0);
    assert_whole(&s, "vol/big", &big);
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn never_shrinks_a_file_with_other_links() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    // Block-mapped and 32 MiB: expensive, so it would be shrunk if the link were missed.
    let big = written(&s, "vol/big", 96 * MIB, 7);
    s.hardlink("vol/keep", "vol/big");
    let before = without(vol_snapshot(&s), "big");
    let out = rm(&s, &["--json", "vol/big"]);
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/big", &big);
    assert_eq!(steps(&e), 0, "{e}");
    let why = e["unlinked_whole"].as_str().unwrap_or_default();
    assert!(why.contains("2 hard links"), "{e}");
    assert!(!s.exists("vol/big"));
    // The other link is whole: same inode, size, allocation, bytes; now the only link.
    assert_whole(&s, "vol/keep", &big);
    assert_eq!(fs::metadata(s.path("vol/keep")).unwrap().nlink(), 1);
    assert_eq!(shrinking(&s.path("vol")), Vec::<PathBuf>::new());
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn never_shrinks_a_file_another_process_holds_open() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    let before = vol_snapshot(&s);
    let big = written(&s, "vol/big", 96 * MIB, 8);
    let held = File::open(s.path("vol/big")).unwrap();
    let out = rm(&s, &["--json", "vol/big"]);
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/big", &big);
    assert_eq!(steps(&e), 0, "{e}");
    assert_eq!(e["unlinked_whole"], "another process has it open", "{e}");
    assert!(!s.exists("vol/big"));
    // The other opener still reads every byte.
    let md = held.metadata().unwrap();
    assert_eq!((md.ino(), md.nlink()), (big.ino, 0));
    assert_eq!(md.blocks() * 512, big.allocated);
    assert_prefix_of(&held, &big, big.size, "held fd");
    drop(held);
    assert_eq!(shrinking(&s.path("vol")), Vec::<PathBuf>::new());
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn never_opens_a_file_another_process_holds_a_lease_on() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    let before = vol_snapshot(&s);
    let big = fallocated(&s, "vol/big", 1 << 30, 9);
    let held = File::open(s.path("vol/big")).unwrap();
    // If reclaim opened the file anyway the kernel would signal us (SIGIO) to break the lease:
    // ignore that rather than die, and check the lease below instead.
    // SAFETY: plain libc calls on a fd we own; SIG_IGN has no preconditions.
    let old = unsafe { libc::signal(libc::SIGIO, libc::SIG_IGN) };
    let rc = unsafe { libc::fcntl(held.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) };
    assert_eq!(rc, 0, "F_SETLEASE: {}", std::io::Error::last_os_error());
    let out = rm(&s, &["--json", "vol/big"]);
    // SAFETY: as above.
    let lease = unsafe { libc::fcntl(held.as_raw_fd(), libc::F_GETLEASE) };
    unsafe {
        libc::fcntl(held.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK);
        libc::signal(libc::SIGIO, old);
    }
    util::assert_success(&out);
    // Opening it for writing (even O_NONBLOCK) would have started breaking our lease.
    assert_eq!(
        lease,
        libc::F_RDLCK,
        "our lease was broken: reclaim opened the file"
    );
    let e = one_gentle(&out.stdout, "vol/big", &big);
    assert_eq!(steps(&e), 0, "{e}");
    let why = e["unlinked_whole"].as_str().unwrap_or_default();
    assert_eq!(
        why,
        format!("process {} holds a lease on it", std::process::id()),
        "{e}"
    );
    assert!(!s.exists("vol/big"));
    assert_eq!(held.metadata().unwrap().blocks() * 512, big.allocated);
    assert_prefix_of(&held, &big, big.size, "leased fd");
    drop(held);
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn symlink_to_big_file_removes_only_the_link() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    let big = fallocated(&s, "vol/big", 1 << 30, 10);
    s.symlink("vol/link", "big");
    s.symlink("vol/abs-link", s.path("vol/big"));
    let before = without(without(vol_snapshot(&s), "link"), "abs-link");
    for link in ["vol/link", "vol/abs-link"] {
        let out = rm(&s, &["--json", link]);
        util::assert_success(&out);
        assert_eq!(gentle_of(&out.stdout).len(), 0, "a symlink is not shrunk");
        assert!(!s.exists(link));
        assert_whole(&s, "vol/big", &big);
        assert_eq!(shrinking(&s.path("vol")), Vec::<PathBuf>::new());
    }
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn trace_has_one_line_per_window() {
    let s = scratch!();
    let _vol = util::or_skip!(ext4_vol(&s));
    let before = vol_snapshot(&s);
    let big = fallocated(&s, "vol/big", 1 << 30, 11);
    let out = rm(&s, &["--json", "--pace-trace", "trace.jsonl", "vol/big"]);
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/big", &big);
    assert!(e.get("stopped").is_none(), "{e}");
    let n = steps(&e);
    assert!(n >= 2, "{e}");
    let text = fs::read_to_string(s.path("trace.jsonl")).expect("trace file written");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|err| panic!("{err}: {l}")))
        .collect();
    // Every step but the last is followed by a window the pacer judges.
    assert_eq!(lines.len() as u64, n - 1, "steps {n}, trace:\n{text}");
    let mut last_t = 0.0;
    let mut bytes = 0;
    for l in &lines {
        let t = l["t"].as_f64().unwrap_or_else(|| panic!("t: {l}"));
        assert!(t >= last_t, "time goes back: {text}");
        last_t = t;
        bytes += l["bytes"].as_u64().unwrap_or_else(|| panic!("bytes: {l}"));
        assert!(l["step"].as_u64().is_some_and(|v| v >= 1), "{l}");
        assert!(l["pause_ms"].as_f64().is_some_and(|v| v >= 0.0), "{l}");
        assert!(l["n"].is_u64(), "{l}");
        let verdict = l["verdict"].as_str().unwrap_or_default();
        assert!(["Good", "Miss", "Unknown"].contains(&verdict), "{l}");
    }
    assert!(bytes > 0 && bytes < big.allocated, "traced bytes {bytes}");
    assert!(!s.exists("vol/big"));
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn bad_pacing_values_are_usage_errors() {
    let s = scratch!();
    s.file("f", "x");
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--max-latency", "fast"], &["'fast'"]),
        (&["--max-latency", "3parsecs"], &["'3parsecs'"]),
        (&["--rate", "0"], &["'0'"]),
        (&["--rate", "lots"], &["'lots'"]),
        (&["--fast", "--rate", "64M"], &["--fast", "--rate"]),
        (
            &["--fast", "--max-latency", "5ms"],
            &["--fast", "--max-latency"],
        ),
    ];
    for (args, named) in cases {
        let mut all = args.to_vec();
        all.push("f");
        let out = rm(&s, &all);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            util::stderr_of(&out)
        );
        assert_eq!(util::stdout_of(&out), "", "{args:?}");
        let err = util::stderr_of(&out);
        let first = err.lines().next().unwrap_or_default();
        assert!(first.starts_with("error: "), "{args:?}: {err}");
        for n in named {
            assert!(
                first.contains(n),
                "{args:?}: first line does not name {n}: {err}"
            );
        }
        assert!(s.exists("f"), "{args:?} removed the file");
    }
    // Good values pass.
    let out = rm(&s, &["--max-latency", "1s", "--rate", "64M", "f"]);
    util::assert_success(&out);
    assert!(!s.exists("f"));
}

#[test]
fn hidden_leftover_is_finished_by_name() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    s.file("vol/neighbour", "stays\n");
    let before = vol_snapshot(&s);
    // What a killed run leaves: the file under its hidden name, partly shrunk.
    let big = written(&s, "vol/big", 96 * MIB, 12);
    let hidden = format!("{HIDDEN}{:x}", big.ino);
    fs::rename(s.path("vol/big"), s.path(format!("vol/{hidden}"))).unwrap();
    let f = fs::OpenOptions::new()
        .write(true)
        .open(s.path(format!("vol/{hidden}")))
        .unwrap();
    f.set_len(80 * MIB).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let left = Big {
        allocated: facts(&s.path(format!("vol/{hidden}"))).2,
        ..big
    };
    let rel = format!("vol/{hidden}");
    let out = rm(&s, &["--json", &rel]);
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, &rel, &left);
    assert!(e.get("unlinked_whole").is_none(), "{e}");
    assert!(steps(&e) >= 1, "{e}");
    assert!(!s.exists(&rel));
    assert_eq!(shrinking(&s.path("vol")), Vec::<PathBuf>::new());
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn a_gentle_removal_never_touches_other_hidden_names() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    s.file("vol/neighbour", "stays\n");
    // Something under a hidden name reclaim did not make this run (another user's, or an
    // older version's leftover), and a new big file in the same directory.
    let old = written(&s, "vol/old", 80 * MIB, 21);
    let hidden = format!("{HIDDEN}{:x}", old.ino);
    fs::rename(s.path("vol/old"), s.path(format!("vol/{hidden}"))).unwrap();
    let before = vol_snapshot(&s);
    written(&s, "vol/big", 80 * MIB, 22);
    let out = rm(&s, &["--json", "-v", "vol/big"]);
    util::assert_success(&out);
    let entries = gentle_of(&out.stdout);
    assert_eq!(entries.len(), 1, "only what was named: {entries:?}");
    assert_eq!(entries[0]["path"], "vol/big", "{entries:?}");
    assert!(!s.exists("vol/big"));
    assert_whole(&s, &format!("vol/{hidden}"), &old);
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn kill_during_shrink_leaves_file_whole_or_in_the_trash() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    s.file("vol/neighbour", "stays\n");
    let before = vol_snapshot(&s);
    let dir = s.path("vol");
    let mut rng = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut random = |below: u64| {
        rng = splitmix(rng);
        rng % below
    };
    let mut hidden_seen = 0;
    for trial in 0..5u64 {
        let big = written(&s, "vol/big", 96 * MIB, 100 + trial);
        // Slow on purpose (16 MiB/s: ~6 s), and the same pacing when it is finished later.
        let mut child = spawn_rm(&s, &["--rate", "16M", "vol/big"]);
        // Trials 0 and 1 are killed early (maybe before the move); the others some time
        // after the file was moved or started to shrink.
        let delay = if trial < 2 {
            Duration::from_millis(random(30))
        } else {
            poll(&mut child, "move or shrink", || {
                let moved = !shrinking(&dir).is_empty();
                let shrunk =
                    fs::symlink_metadata(dir.join("big")).is_ok_and(|m| m.len() < big.size);
                (moved || shrunk).then_some(())
            });
            Duration::from_millis(random(2500))
        };
        std::thread::sleep(delay);
        let early_exit = child.try_wait().unwrap();
        if early_exit.is_none() {
            child.kill().unwrap();
        }
        let status = child.wait().unwrap();
        let waiting = shrinking(&dir);
        eprintln!(
            "trial {trial}: killed after {delay:?} ({status}, exited before: {early_exit:?}); \
             original {}, shrinking {waiting:?}",
            if s.exists("vol/big") { "there" } else { "gone" }
        );
        if s.exists("vol/big") {
            assert_eq!(waiting, Vec::<PathBuf>::new(), "trial {trial}: both exist");
            assert_whole(&s, "vol/big", &big);
            util::assert_success(&rm(&s, &["--fast", "vol/big"]));
        } else if early_exit.is_some() {
            assert_eq!(
                waiting,
                Vec::<PathBuf>::new(),
                "trial {trial}: finished but left"
            );
        } else {
            hidden_seen += 1;
            assert_eq!(
                waiting.len(),
                1,
                "trial {trial}: expected one file in the trash"
            );
            let p = &waiting[0];
            assert!(
                p.ends_with("reaping") && p.starts_with(util::trash_dir(&dir)),
                "trial {trial}: a claimed trash entry, not {}",
                p.display()
            );
            let (ino, size, allocated) = facts(p);
            assert_eq!(ino, big.ino, "trial {trial}");
            assert!(size <= big.size, "trial {trial}: grew to {size}");
            // Shrinking only ever cuts the end: what is left is the original's prefix.
            assert_prefix_of(&File::open(p).unwrap(), &big, size, "the rest");
            // `status` lists it, and the same command again finishes it.
            let trash = util::trash_dir(&dir);
            let st = s
                .cmd(&["status", "--json", "--trash", trash.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(
                util::stdout_of(&st).contains("vol/big"),
                "status does not list it: {}",
                util::stdout_of(&st)
            );
            let out = rm(&s, &["--json", "vol/big"]);
            util::assert_success(&out);
            let g = gentle_of(&out.stdout);
            assert_eq!(g.len(), 1, "{g:?}");
            assert_eq!(g[0]["resumed"], true, "{g:?}");
            assert!(
                allocated == 0 || g[0]["allocated"].as_u64() >= Some(1),
                "{g:?}"
            );
            assert!(
                util::stderr_of(&out).contains("interrupted removal"),
                "{}",
                util::stderr_of(&out)
            );
        }
        // An entry made just before the kill, with nothing moved into it yet, is debris a
        // reaper removes.
        let trash = util::trash_dir(&dir);
        if trash.exists() {
            let reap = ["reap", "--once", "--trash", trash.to_str().unwrap()];
            util::assert_success(&s.cmd(&reap).output().unwrap());
        }
        assert_same("vol", &before, &vol_snapshot(&s));
    }
    assert!(
        hidden_seen >= 1,
        "no trial was killed while the file was in the trash"
    );
}

/// Between two steps another process opens the hidden file: its open waits for reclaim's
/// lease, and reclaim must stop shrinking (unlink the rest whole) rather than take another
/// step while the lease is being broken. The opener then sees what was left, unchanged.
#[test]
fn stops_shrinking_when_another_process_opens_the_hidden_file() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    s.file("vol/neighbour", "stays\n");
    let before = vol_snapshot(&s);
    let dir = s.path("vol");
    let big = written(&s, "vol/big", 96 * MIB, 13);
    let mut child = spawn_rm(&s, &["--json", "--rate", "1M", "vol/big"]);
    // Steps of at most 1 MiB, each followed by a ~1 s pause (rate cap): open the hidden file
    // in the first pause.
    let (hidden, len_before_open) = poll(&mut child, "first step", || {
        first_step_taken(&dir, big.size)
    });
    // Well into the pause (not in the instant between the step and its lease check).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        fs::metadata(&hidden).unwrap().len(),
        len_before_open,
        "second step already"
    );
    let t0 = Instant::now();
    let opened = File::open(&hidden).expect("open the hidden file");
    let blocked = t0.elapsed();
    let out = child.wait_with_output().unwrap();
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/big", &big);
    let len = opened.metadata().unwrap().len();
    assert!(
        e["stopped"].is_string(),
        "not stopped; the opener found {len} of {len_before_open} bytes after waiting {blocked:?}: {e}"
    );
    assert_eq!(len, len_before_open, "shrunk after the lease break began");
    assert_prefix_of(&opened, &big, len, "opener's fd");
    assert!(
        blocked < Duration::from_secs(10),
        "open blocked {blocked:?}"
    );
    drop(opened);
    assert_eq!(shrinking(&dir), Vec::<PathBuf>::new());
    assert_same("vol", &before, &vol_snapshot(&s));
}

/// A hard link made to the hidden file while it is being shrunk (say by `cp -al` of the
/// directory, or someone rescuing it) must not keep losing its data: the link count is
/// checked once, before the first step, and never again.
#[test]
fn never_shrinks_a_file_after_it_gains_another_link() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    let dir = s.path("vol");
    let big = written(&s, "vol/big", 96 * MIB, 14);
    let mut child = spawn_rm(&s, &["--json", "--rate", "4M", "vol/big"]);
    let (hidden, len) = poll(&mut child, "first step", || {
        first_step_taken(&dir, big.size)
    });
    fs::hard_link(&hidden, s.path("vol/rescued")).unwrap();
    let out = child.wait_with_output().unwrap();
    util::assert_success(&out);
    let f = File::open(s.path("vol/rescued")).unwrap();
    assert_eq!(
        f.metadata().unwrap().len(),
        len,
        "the new link was shrunk: {}",
        util::stdout_of(&out)
    );
    assert_prefix_of(&f, &big, len, "vol/rescued");
    assert_eq!(shrinking(&dir), Vec::<PathBuf>::new());
}

// ---------------------------------------------------------------------------------------------
// Large files inside trees: a backup directory with a few big dumps is freed gently too.

#[test]
fn large_file_inside_a_tree_is_shrunk_in_steps() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    s.file("vol/neighbour", "stays\n");
    let before = vol_snapshot(&s);
    s.mkdir("vol/backup");
    let big = written(&s, "vol/backup/dump.sql", 96 * MIB, 31);
    s.file("vol/backup/sub/small", "small\n");
    s.file("vol/backup/manifest", "m\n");
    let out = rm(&s, &["-r", "--json", "vol/backup"]);
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/backup/dump.sql", &big);
    assert!(steps(&e) >= 2, "shrunk in steps: {e}");
    let r = parse_report(&out.stdout);
    assert_eq!((r.files, r.dirs), (3, 2));
    assert_same("vol", &before, &vol_snapshot(&s));
    // --fast: unlinked with the rest, no gentle entry.
    s.mkdir("vol/backup");
    written(&s, "vol/backup/dump.sql", 96 * MIB, 32);
    let out = rm(&s, &["-r", "--json", "--fast", "vol/backup"]);
    util::assert_success(&out);
    assert_eq!(gentle_of(&out.stdout), Vec::<Value>::new());
    assert_same("vol", &before, &vol_snapshot(&s));
}

#[test]
fn reaper_shrinks_a_large_file_inside_a_hidden_tree() {
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    s.file("vol/neighbour", "stays\n");
    let before = vol_snapshot(&s);
    s.mkdir("vol/backup");
    written(&s, "vol/backup/dump.sql", 96 * MIB, 33);
    let out = s
        .rm(&["-r", "--background", "vol/backup"])
        .env("RECLAIM_NO_SPAWN", "1")
        .env("XDG_STATE_HOME", s.path("state"))
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(!s.exists("vol/backup"));
    let out = s
        .cmd(&["reap", "--json", "--trash", "vol/.reclaim-0"])
        .env("XDG_STATE_HOME", s.path("state"))
        .output()
        .unwrap();
    util::assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = v["gentle"].as_array().cloned().unwrap_or_default();
    assert_eq!(g.len(), 1, "{v}");
    assert!(
        g[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("vol/backup/dump.sql"),
        "named by its original path: {v}"
    );
    assert!(steps(&g[0]) >= 2, "{v}");
    assert_eq!(v["remaining"], 0, "{v}");
    assert_same("vol", &before, &vol_snapshot(&s));
}

/// Sets a file's access and modification times to `days` days ago.
fn aged(p: &Path, days: u64) {
    let t = std::time::SystemTime::now() - Duration::from_secs(days * 86_400);
    File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_times(fs::FileTimes::new().set_accessed(t).set_modified(t))
        .unwrap();
}

#[test]
fn a_selection_shrinks_its_large_files_in_steps_and_states_the_rest_once() {
    // A purge by age in a backup directory: the old dump is freed gently as `rm -r` would
    // free it, the old small files go at once, each stated once (the selection's own stat
    // tells it is small: no second one for the gentle path), the young ones and the
    // directories searched stay.
    let s = scratch!();
    let _vol = util::or_skip!(ext3_vol(&s));
    if StdCommand::new("strace").arg("-V").output().is_err() {
        util::skip!("no strace");
    }
    s.file("vol/neighbour", "stays\n");
    s.mkdir("vol/backup");
    let big = written(&s, "vol/backup/dump.sql", 96 * MIB, 41);
    s.file("vol/backup/old-small", "old\n");
    s.file("vol/backup/sub/old-deeper", "old\n");
    s.file("vol/backup/young", "young\n");
    for p in ["dump.sql", "old-small", "sub/old-deeper"] {
        aged(&s.path(format!("vol/backup/{p}")), 10);
    }
    let trace = s.path("strace.out");
    let args = ["-r", "--json", "--older-than", "2d", "vol/backup"];
    let _ = s.rm(&args); // checks the paths
    let out = StdCommand::new("strace")
        .args(["-f", "-qq", "-e", "trace=statx,newfstatat,lstat,stat", "-o"])
        .arg(&trace)
        .arg(util::reclaim_bin())
        .arg("rm")
        .args(args)
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .current_dir(s.root())
        .output()
        .unwrap();
    util::assert_success(&out);
    let e = one_gentle(&out.stdout, "vol/backup/dump.sql", &big);
    assert!(steps(&e) >= 2, "shrunk in steps: {e}");
    let r = parse_report(&out.stdout);
    assert_eq!((r.files, r.dirs), (3, 0), "{r:?}");
    assert!(!s.exists("vol/backup/old-small") && !s.exists("vol/backup/sub/old-deeper"));
    assert!(s.exists("vol/backup/young") && s.exists("vol/backup/sub"));
    assert!(s.exists("vol/neighbour"));
    let text = fs::read_to_string(&trace).unwrap();
    for name in ["\"old-small\"", "\"old-deeper\"", "\"young\""] {
        let stats = text.lines().filter(|l| l.contains(name)).count();
        assert_eq!(stats, 1, "{name} stated {stats} times:\n{text}");
    }
}
