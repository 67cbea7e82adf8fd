//! Fixed costs (issue 43; DESIGN §15): a small removal runs on the calling thread alone, as GNU
//! `rm` does, with no pool, no profile, no probe and no controller; a removal that proves big
//! on the way grows into the measured pool and carries on from where it is, with every safety
//! check of the walk (nothing outside the target, mounts skipped, symlinks unlinked) and exact
//! counts. What starts is seen from outside, by strace: the threads made (`clone`, `clone3`)
//! and the latency probe's file and writes (`O_TMPFILE`, `pwrite64`); and in `--json`'s
//! `concurrency`.

use std::process::Command as StdCommand;

use serde_json::Value;

use crate::util::{self, assert_same, scratch, Scratch, Volume};

/// What strace saw of one command: the threads and processes it made, and the latency
/// probe's traces (its anonymous file, its writes).
struct Traced {
    out: std::process::Output,
    clones: usize,
    probe: Vec<String>,
    /// The files it opened (`openat`).
    opened: Vec<String>,
    /// Its directory reads (`getdents64`).
    listings: usize,
}

/// Runs `reclaim ARGS` (or, with `as_rm`, reclaim through a link named `rm`) in the scratch
/// root under `strace -f`; `None` (the test then says it is skipped) without strace.
fn traced(s: &Scratch, as_rm: bool, args: &[&str]) -> Option<Traced> {
    if StdCommand::new("strace").arg("-V").output().is_err() {
        return None;
    }
    let bin = if as_rm {
        let link = s.path("bin/rm");
        if !link.exists() {
            s.mkdir("bin");
            std::os::unix::fs::symlink(std::fs::canonicalize(util::reclaim_bin()).unwrap(), &link)
                .unwrap();
        }
        link.into_os_string()
    } else {
        util::reclaim_bin()
    };
    for a in args.iter().filter(|a| !a.starts_with('-') && **a != "rm") {
        s.assert_inside(&s.path(a));
    }
    let (out, text) = strace(
        s,
        "clone,clone3,fork,vfork,openat,pwrite64,getdents64",
        &bin,
        args,
    );
    let clones = text
        .lines()
        .filter(|l| {
            ["clone(", "clone3(", "fork(", "vfork("]
                .iter()
                .any(|c| l.contains(c))
        })
        .count();
    let probe = text
        .lines()
        .filter(|l| l.contains("O_TMPFILE") || l.contains("pwrite64("))
        .map(str::to_owned)
        .collect();
    let opened = text
        .lines()
        .filter(|l| l.contains("openat("))
        .map(str::to_owned)
        .collect();
    let listings = text.lines().filter(|l| l.contains("getdents64(")).count();
    Some(Traced {
        out,
        clones,
        probe,
        opened,
        listings,
    })
}

/// Runs `bin ARGS` in the scratch root under `strace -f -e trace=CALLS`: its output and the
/// trace.
fn strace(
    s: &Scratch,
    calls: &str,
    bin: &std::ffi::OsStr,
    args: &[&str],
) -> (std::process::Output, String) {
    let trace = s.path("strace.out");
    let out = StdCommand::new("strace")
        .args(["-f", "-qq", "-e", &format!("trace={calls}"), "-o"])
        .arg(&trace)
        .arg(bin)
        .args(args)
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .env("LC_ALL", "C")
        .current_dir(s.root())
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&trace).unwrap();
    std::fs::remove_file(&trace).unwrap();
    (out, text)
}

/// `reclaim rm -r ARGS DIR` (a directory the test made) under `strace -f -e trace=CALLS`: its
/// output and the trace; `None` (the test then says it is skipped) without strace.
fn traced_rm(
    s: &Scratch,
    dir: &str,
    calls: &str,
    args: &[&str],
) -> Option<(std::process::Output, String)> {
    StdCommand::new("strace").arg("-V").output().ok()?;
    s.assert_inside(&s.path(dir));
    let all: Vec<&str> = ["rm", "-r"]
        .into_iter()
        .chain(args.iter().copied())
        .chain([dir])
        .collect();
    Some(strace(s, calls, util::reclaim_bin().as_ref(), &all))
}

/// A directory `rel` of `n` empty files listed in an order unrelated to their inodes, as
/// ext4's hash order is, on any file system: made in a directory beside it, in order, then
/// moved in shuffled.
fn shuffled(s: &Scratch, rel: &str, n: usize) {
    let made = format!("{rel}.made");
    flat(s, &made, n);
    s.mkdir(rel);
    // 7,919 is prime, so i * 7,919 mod n visits every i once unless n is a multiple of it.
    assert!(!n.is_multiple_of(7_919));
    for i in 0..n {
        let j = i * 7_919 % n;
        std::fs::rename(
            s.path(format!("{made}/f{j}")),
            s.path(format!("{rel}/f{j}")),
        )
        .unwrap();
    }
    std::fs::remove_dir(s.path(&made)).unwrap();
}

/// Of an `strace -e trace=getdents64,unlinkat` of one removal: the lines of the reads that
/// returned entries (not the one that finds the end), the line of the first unlink, and the
/// names unlinked.
fn reads_and_unlinks(text: &str) -> (Vec<usize>, usize, Vec<&str>) {
    let lines: Vec<&str> = text.lines().collect();
    let reads = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("getdents64(") && !l.trim_end().ends_with("= 0"))
        .map(|(i, _)| i)
        .collect();
    let unlink = |l: &&str| l.contains("unlinkat(") && !l.contains("AT_REMOVEDIR");
    let first = lines.iter().position(unlink).expect("unlinks");
    let names = lines
        .iter()
        .filter(|l| unlink(l))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    (reads, first, names)
}

/// A directory `rel` of `n` empty files.
fn flat(s: &Scratch, rel: &str, n: usize) {
    s.mkdir(rel);
    for i in 0..n {
        std::fs::File::create(s.path(format!("{rel}/f{i}"))).unwrap();
    }
}

fn json(out: &std::process::Output) -> Value {
    util::assert_success(out);
    util::json_object(&out.stdout)
}

#[test]
fn a_small_removal_starts_no_thread_and_writes_no_probe() {
    let s = scratch!();
    // `rm -r` of 20 files, as reclaim and as `rm`; one file; one file as `rm`.
    flat(&s, "t", 20);
    let Some(t) = traced(&s, false, &["rm", "-r", "--json", "t"]) else {
        util::skip!("no strace");
    };
    let v = json(&t.out);
    assert!(!s.exists("t"));
    assert_eq!(
        (v["files"].as_u64(), v["dirs"].as_u64()),
        (Some(20), Some(1)),
        "{v}"
    );
    assert_eq!(
        t.clones, 0,
        "reclaim rm -r of 20 files started threads: {v}"
    );
    assert!(t.probe.is_empty(), "it probed: {:?}", t.probe);
    // Said: one worker, nothing measured; no profile was taken, no governor ran.
    assert_eq!(v["concurrency"]["rule"], "inline", "{v}");
    assert_eq!(v["concurrency"]["chosen"], 1, "{v}");
    assert!(v.get("profile").is_none() && v.get("pace").is_none(), "{v}");

    flat(&s, "t", 20);
    let t = traced(&s, true, &["-r", "t"]).unwrap();
    util::assert_success(&t.out);
    assert!(!s.exists("t") && t.out.stderr.is_empty(), "{:?}", t.out);
    assert_eq!(t.clones, 0, "rm -r of 20 files (GNU mode) started threads");
    assert!(t.probe.is_empty(), "{:?}", t.probe);

    for as_rm in [false, true] {
        s.file("f", "x");
        let args: &[&str] = if as_rm { &["f"] } else { &["rm", "f"] };
        let t = traced(&s, as_rm, args).unwrap();
        util::assert_success(&t.out);
        assert!(!s.exists("f"));
        assert_eq!(
            (t.clones, t.probe.len()),
            (0, 0),
            "one file, as rm: {as_rm}"
        );
        // Off a terminal, without -v or --json, the bytes it freed are said nowhere: the file
        // is not opened to measure them (its lease, its extents).
        let file = t.opened.iter().filter(|l| l.contains("\"f\"")).count();
        assert_eq!(file, 0, "the file was opened: {:?}", t.opened);
    }
    // With --json they are said, measured as before.
    s.file("f", vec![7u8; 64 << 10]);
    let t = traced(&s, false, &["rm", "--json", "f"]).unwrap();
    let v = json(&t.out);
    assert!(v["bytes_freed"].as_u64() >= Some(64 << 10), "{v}");
}

#[test]
fn a_removal_that_proves_big_grows_into_the_pool_and_misses_nothing() {
    // 30 directories of 500 files: more names than a small removal reads, wherever the walk
    // is when it finds out (the first directories are removed on the calling thread, the rest
    // by the pool). Beside them, what the walk must never follow or take, met before and after.
    util::require_root!();
    let s = scratch!();
    s.make_outside("outside");
    s.mkdir("t");
    s.symlink("t/0-link", s.path("outside"));
    for d in 0..30 {
        flat(&s, &format!("t/d{d:02}"), 500);
    }
    s.symlink("t/z-link", s.path("outside"));
    let _mnt = util::or_skip!(Volume::tmpfs(&s, "t/d15/mnt"));
    s.file("t/d15/mnt/kept", "on another file system");
    let outside = s.snapshot("outside");
    let mounted = s.snapshot("t/d15/mnt");
    let Some(t) = traced(&s, false, &["rm", "-r", "--json", "t"]) else {
        util::skip!("no strace");
    };
    assert_eq!(
        t.out.status.code(),
        Some(1),
        "the mount point is said: {:?}",
        t.out
    );
    let v = util::json_object(&t.out.stdout);
    // Every file once, every directory but the one holding the mount and the tree's top.
    assert_eq!(v["files"], 30 * 500 + 2, "{v}");
    assert_eq!(v["dirs"], 29, "{v}");
    assert_eq!(v["concurrency"]["rule"], "measured", "it grew: {v}");
    assert!(v["profile"]["class"].is_string(), "{v}");
    assert!(t.clones > 0, "the pool started");
    // Local and not governed (no --max-latency): nothing to probe for, even where the disk
    // says it is rotational (it starts at one worker and measures).
    assert!(t.probe.is_empty(), "it probed: {:?}", t.probe);
    assert_same("outside", &outside, &s.snapshot("outside"));
    assert_same("the mounted tmpfs", &mounted, &s.snapshot("t/d15/mnt"));
    let left: Vec<_> = s.snapshot("t").into_keys().collect();
    assert_eq!(
        left,
        ["", "d15", "d15/mnt", "d15/mnt/kept"].map(std::path::PathBuf::from),
        "{v}"
    );
}

#[test]
fn gnu_mode_grows_too_and_stays_silent() {
    let s = scratch!();
    for d in 0..25 {
        flat(&s, &format!("t/d{d:02}"), 500);
    }
    let Some(t) = traced(&s, true, &["-rf", "t"]) else {
        util::skip!("no strace");
    };
    util::assert_success(&t.out);
    assert!(
        t.out.stdout.is_empty() && t.out.stderr.is_empty(),
        "{:?}",
        t.out
    );
    assert!(!s.exists("t"));
    assert!(t.clones > 0, "the pool started");
    // GNU mode is never governed: no probe, big or small.
    assert!(t.probe.is_empty(), "{:?}", t.probe);
}

#[test]
fn rm_f_of_a_missing_path_looks_at_its_own_file_system_only() {
    // `rm -f gone` (make clean, scripts): reclaim looks for an interrupted removal of it in
    // the trash, but only on the file system its directory is on, never at every mount's top
    // (or in a thread for each network one, waiting for a dead server).
    let s = scratch!();
    if StdCommand::new("strace").arg("-V").output().is_err() {
        util::skip!("no strace");
    }
    // Its own file system, so what other trashes the machine holds changes nothing.
    util::require_root!();
    let _v = util::or_skip!(util::Volume::tmpfs(&s, "vol"));
    s.mkdir("vol/d");
    let trace = s.path("strace.out");
    let out = StdCommand::new("strace")
        .args(["-f", "-qq", "-e", "trace=getdents64,clone,clone3", "-o"])
        .arg(&trace)
        .arg(util::reclaim_bin())
        .args(["rm", "-f", "vol/d/gone"])
        .env("RECLAIM_CONFIG", "")
        .current_dir(s.root())
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    let text = std::fs::read_to_string(&trace).unwrap();
    let listings = text.lines().filter(|l| l.contains("getdents64(")).count();
    let clones = text.lines().filter(|l| l.contains("clone")).count();
    // One mount's top, read to its end.
    assert!(listings <= 4, "{listings} directory reads:\n{text}");
    assert_eq!(clones, 0, "{text}");
}

#[test]
fn a_directory_that_proves_big_while_it_is_read_is_read_once() {
    // 25,000 names in one directory: the calling thread finds the removal big part way
    // through its listing; the pool reads the rest from where it stopped (no name twice, none
    // left out), as reclaim and as rm.
    let s = scratch!();
    for as_rm in [false, true] {
        flat(&s, "t", 25_000);
        let args: &[&str] = if as_rm {
            &["-r", "t"]
        } else {
            &["rm", "-r", "--json", "t"]
        };
        let Some(t) = traced(&s, as_rm, args) else {
            util::skip!("no strace");
        };
        util::assert_success(&t.out);
        assert!(!s.exists("t"), "as rm: {as_rm}");
        assert!(t.clones > 0, "it grew (as rm: {as_rm})");
        // One pass: a page first (timed: `FirstReads`), then 256 KiB a read, about 8,000 such
        // names each, and the read that finds the end (a second pass would double that).
        assert!(
            t.listings <= 9,
            "{} directory reads (as rm: {as_rm})",
            t.listings
        );
        if !as_rm {
            let v = util::json_object(&t.out.stdout);
            assert_eq!(
                (v["files"].as_u64(), v["dirs"].as_u64()),
                (Some(25_000), Some(1)),
                "{v}"
            );
            assert_eq!(v["concurrency"]["rule"], "measured", "{v}");
        }
    }
}

#[test]
fn a_directory_s_timed_first_read_asks_one_page() {
    // On the calling thread a directory's first read is timed (a disk that only says it
    // spins is told by it): it asks one page, so that it times the disk's answer and not the
    // directory's size (a big directory's first read of 256 KiB waits for up to 64 blocks,
    // bench/RESULTS.md, 2026-11-29); the reads after it ask 256 KiB.
    let s = scratch!();
    flat(&s, "t", 5_000);
    let Some((out, text)) = traced_rm(&s, "t", "openat,getdents64", &["--json"]) else {
        util::skip!("no strace");
    };
    let v = json(&out);
    assert_eq!(v["files"].as_u64(), Some(5_000), "{v}");
    assert!(!s.exists("t"));
    let lines: Vec<&str> = text.lines().collect();
    // The directory's first open, and the reads of that descriptor until it is closed or
    // opened again (strace prints `openat(3, "t", ...O_DIRECTORY) = FD`).
    let at = lines
        .iter()
        .position(|l| l.contains("openat(") && l.contains("\"t\"") && l.contains("O_DIRECTORY"))
        .unwrap_or_else(|| panic!("no open of t:\n{text}"));
    let fd = lines[at]
        .rsplit("= ")
        .next()
        .and_then(|f| f.trim().parse::<u32>().ok())
        .unwrap_or_else(|| panic!("{}", lines[at]));
    let asked: Vec<u64> = lines[at + 1..]
        .iter()
        .take_while(|l| !(l.contains("openat(") && l.trim_end().ends_with(&format!("= {fd}"))))
        .filter(|l| l.contains(&format!("getdents64({fd},")))
        .filter_map(|l| {
            let args = l.split(") ").next()?;
            args.rsplit(", ").next()?.trim().parse().ok()
        })
        .collect();
    assert_eq!(asked.first(), Some(&4096), "first reads of t:\n{text}");
    assert!(
        asked.len() > 1 && asked[1..].iter().all(|&n| n == 256 << 10),
        "reads of t after the first: {asked:?}\n{text}"
    );
}

#[test]
fn a_large_directory_is_listed_and_removed_a_part_at_a_time() {
    // 120,000 names in one directory, listed in an order unrelated to their inodes: reclaim
    // lists at most 100,000 before it removes them (GNU fts's rule), then reads on; every name
    // goes once, none is left, and nothing is read twice. One worker, so that the order is the
    // listing's own (a part, its unlinks, the rest): with more, another worker reads the rest
    // while the first unlinks.
    let s = scratch!();
    shuffled(&s, "t", 120_000);
    let calls = "getdents64,unlinkat";
    let Some((out, text)) = traced_rm(&s, "t", calls, &["--json", "--threads", "1"]) else {
        util::skip!("no strace");
    };
    let v = json(&out);
    assert_eq!(
        (v["files"].as_u64(), v["dirs"].as_u64()),
        (Some(120_000), Some(1)),
        "{v}"
    );
    assert!(!s.exists("t"));
    let (reads, first_unlink, mut names) = reads_and_unlinks(&text);
    assert!(
        reads.last().is_some_and(|&last| first_unlink < last),
        "names were unlinked before the last part was read"
    );
    assert_eq!(names.len(), 120_000, "one unlink a name");
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 120_000, "no name twice");
    // One pass over the directory: 256 KiB a read, about 8,000 such names each.
    assert!(reads.len() <= 20, "{} directory reads", reads.len());
}

#[test]
fn a_directory_listed_in_inode_order_is_listed_whole_before_its_unlinks() {
    // xfs lists names made in order as their inodes were made: a part's end would only split
    // one pass over the inode metadata (`LISTING_MOST_ORDERED`), so 120,000 such names are
    // listed whole, then unlinked, each once.
    let s = scratch!();
    let vol = util::or_skip!(Volume::xfs(&s, "x", 512 << 20));
    flat(&s, "x/t", 120_000);
    let calls = "getdents64,unlinkat";
    let Some((out, text)) = traced_rm(&s, "x/t", calls, &["--json", "--threads", "1"]) else {
        util::skip!("no strace");
    };
    let v = json(&out);
    assert_eq!(v["files"].as_u64(), Some(120_000), "{v}");
    assert!(!s.exists("x/t"));
    let (reads, first_unlink, mut names) = reads_and_unlinks(&text);
    assert!(
        reads.last().is_some_and(|&last| last < first_unlink),
        "names were unlinked before the directory was read to its end"
    );
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 120_000, "every name once");
    drop(vol);
}

#[test]
fn closed_standard_fds_are_opened_on_dev_null() {
    // reclaim starts without std's runtime start (src/sys/startup.rs): a stdout or stderr the
    // caller closed is opened on /dev/null before anything else, so a file reclaim opens
    // (the --list FILE here) never takes fd 1 or 2 and receives its messages.
    let s = scratch!();
    flat(&s, "t", 3);
    let list = s.path("list.txt");
    // fds 1 and 2 closed by the shell that starts it.
    let cmd = format!(
        "exec {} rm -r -v --list list.txt t missing 1>&- 2>&-",
        util::reclaim_bin().to_string_lossy()
    );
    let status = StdCommand::new("sh")
        .args(["-c", &cmd])
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .current_dir(s.root())
        .status()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "missing is reported by the exit status"
    );
    assert!(!s.exists("t/f0") && !s.exists("t/f1") && !s.exists("t/f2"));
    let listed = std::fs::read_to_string(&list).unwrap();
    let mut lines: Vec<&str> = listed.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["t/f0", "t/f1", "t/f2"],
        "the removed paths, no message: {listed:?}"
    );
}

#[test]
fn reclaim_itself_needs_no_library_but_libc() {
    // The unwinder is linked in (build.rs) and the math functions are reclaim's own
    // (sys::float): the executable needs libc alone (with `--features mpi`, Open MPI's library
    // too, which needs libm itself). Asked of glibc's loader, which says who needs what.
    let s = scratch!();
    s.file("f", "x");
    let log = s.path("ld");
    let out = s
        .rm(&["f"])
        .env("LD_DEBUG", "files")
        .env("LD_DEBUG_OUTPUT", &log)
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(!s.exists("f"));
    let mut text = String::new();
    for e in std::fs::read_dir(s.root()).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("ld.") {
            text.push_str(&std::fs::read_to_string(e.path()).unwrap());
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    // "file=libc.so.6 [0];  needed by /path/to/reclaim [0]"
    let bin = util::reclaim_bin();
    let bin = bin.to_string_lossy();
    let needed: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let (file, by) = l.split_once("file=")?.1.split_once("needed by ")?;
            (by.split(' ').next()? == bin).then(|| file.split(' ').next().unwrap_or(file))
        })
        .collect();
    if needed.is_empty() {
        util::skip!("the dynamic loader does not say what it loads (LD_DEBUG is glibc's)");
    }
    let mpi = cfg!(feature = "mpi");
    let other: Vec<_> = needed
        .iter()
        .filter(|f| !(f.starts_with("libc.so.") || mpi && f.starts_with("libmpi.so.")))
        .collect();
    assert!(other.is_empty(), "reclaim needs {other:?} besides libc");
}
