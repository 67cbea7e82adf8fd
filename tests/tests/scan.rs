//! `reclaim scan`: its counts agree with `find` and its bytes with `du` on random trees, the
//! histogram and the top lists (by bytes, files, small files) are right, `--exclude` leaves out
//! what `find -prune` would, mount points are skipped (and entered on request), symlinks are
//! never followed, unreadable directories are reported without stopping the walk, deep trees
//! need few fds, the estimate cleans up after itself, never writes inside the scanned tree and
//! knows a read-only file system, and `--json` has its documented shape. A scan must change
//! nothing: every test that scans checks the tree is as it was.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output};

use serde_json::Value;

use crate::util::{
    self, assert_same, json_object, reclaim_bin, scratch, stderr_of, Rng, Scratch, Volume,
};

/// `reclaim scan --json ARGS...` in the scratch root; returns the output and the object.
fn scan_json(s: &Scratch, args: &[&str]) -> (Output, Value) {
    let mut all = vec!["scan", "--json"];
    all.extend_from_slice(args);
    let out = s.cmd(&all).output().unwrap();
    let v = json_object(&out.stdout);
    (out, v)
}

/// Scans with `--json --no-estimate`, expects exit 0 and an unchanged tree.
fn scan_ok(s: &Scratch, rel: &str, extra: &[&str]) -> Value {
    let before = s.snapshot(rel);
    let mut args = vec!["--no-estimate"];
    args.extend_from_slice(extra);
    args.push(rel);
    let (out, v) = scan_json(s, &args);
    util::assert_success(&out);
    assert_same(rel, &before, &s.snapshot(rel));
    v
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} is not a count: {v}"))
}

/// Runs a command in the scratch root and returns its stdout.
fn run_in(s: &Scratch, prog: &str, args: &[&str]) -> String {
    let out = StdCommand::new(prog)
        .args(args)
        .current_dir(s.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{prog} {args:?}: {}", stderr_of(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Entries `find -xdev` lists under `rel` with these type tests (one byte printed per entry,
/// so names with newlines count right).
fn find_count(s: &Scratch, rel: &str, tests: &[&str]) -> u64 {
    let mut args = vec![rel, "-xdev"];
    args.extend_from_slice(tests);
    args.extend_from_slice(&["-printf", "."]);
    run_in(s, "find", &args).len() as u64
}

/// `du -s -x` of `rel` in bytes: allocated (`--block-size=1`) or apparent (`-b`).
fn du(s: &Scratch, rel: &str, apparent: bool) -> u64 {
    let flag = if apparent { "-b" } else { "--block-size=1" };
    let text = run_in(s, "du", &["-s", "-x", flag, rel]);
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// A random tree of about `entries` entries under `root/rel`: nested and empty directories,
/// files of sizes from 0 to 300 KB (some sparse), hard links within the tree, symlinks of
/// every kind (to files, directories, outside, dangling, long targets), and fifos.
fn random_tree(s: &Scratch, rel: &str, seed: u64, entries: usize) {
    let mut rng = Rng(seed);
    let root = s.mkdir(rel);
    let outside = s.path("outside");
    let mut dirs = vec![root.clone()];
    let mut files = Vec::new();
    let zeros = vec![0x5a_u8; 300_000];
    for i in 0..entries {
        let parent = dirs[rng.below(dirs.len() as u64) as usize].clone();
        let name = format!("e{i}");
        let p = parent.join(&name);
        match rng.below(100) {
            0..=14 => {
                fs::create_dir(&p).unwrap();
                dirs.push(p);
            }
            15..=74 => {
                let size = match rng.below(10) {
                    0..=2 => 0,
                    3..=6 => rng.below(4096),
                    7..=8 => 4096 + rng.below(60_000),
                    _ => 65_536 + rng.below(230_000),
                } as usize;
                if rng.chance(15) && size > 0 {
                    fs::File::create(&p).unwrap().set_len(size as u64).unwrap();
                } else {
                    fs::write(&p, &zeros[..size]).unwrap();
                }
                files.push(p);
            }
            75..=84 if !files.is_empty() => {
                let target = &files[rng.below(files.len() as u64) as usize];
                fs::hard_link(target, &p).unwrap();
            }
            75..=96 => {
                let target: std::path::PathBuf = match rng.below(6) {
                    0 => "no/such/entry".into(),
                    1 => outside.clone(),
                    2 => "..".into(),
                    3 => files.first().cloned().unwrap_or_else(|| "x".into()),
                    4 => "a-very-long-symlink-target-that-does-not-fit-in-the-inode-itself-so-it-takes-a-block"
                        .repeat(2)
                        .into(),
                    _ => root.clone(),
                };
                std::os::unix::fs::symlink(target, &p).unwrap();
            }
            _ => {
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &p,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o644),
                    0,
                )
                .unwrap();
            }
        }
    }
}

/// Every entry under `root` (itself included) with its inode, mode, size, links, mtime and
/// ctime: creating or removing anything inside a directory changes its mtime and ctime, so
/// two equal maps mean nothing was written there, not even for a moment.
fn metadata_snapshot(root: &Path) -> BTreeMap<PathBuf, [i64; 8]> {
    fn go(root: &Path, p: &Path, out: &mut BTreeMap<PathBuf, [i64; 8]>) {
        let m = fs::symlink_metadata(p).unwrap();
        out.insert(
            p.strip_prefix(root).unwrap().to_path_buf(),
            [
                m.ino() as i64,
                i64::from(m.mode()),
                m.size() as i64,
                m.nlink() as i64,
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ],
        );
        if m.is_dir() {
            for e in fs::read_dir(p).unwrap() {
                go(root, &e.unwrap().path(), out);
            }
        }
    }
    let mut out = BTreeMap::new();
    go(root, root, &mut out);
    out
}

/// Distinct inodes of regular files under `rel`, and their names.
fn file_inodes(s: &Scratch, rel: &str) -> (u64, u64) {
    let text = run_in(s, "find", &[rel, "-xdev", "-type", "f", "-printf", "%i\n"]);
    let all: Vec<&str> = text.lines().collect();
    let mut uniq = all.clone();
    uniq.sort_unstable();
    uniq.dedup();
    (uniq.len() as u64, all.len() as u64)
}

#[test]
fn counts_match_find_and_du_on_random_trees() {
    let s = scratch!();
    s.make_outside("outside");
    for (seed, threads) in [(1u64, "1"), (2, "4"), (3, "16")] {
        let rel = format!("t{seed}");
        random_tree(&s, &rel, seed, 2500);
        let v = scan_ok(&s, &rel, &["--threads", threads]);
        let ctx = format!("seed {seed}, {threads} threads: {v}");
        assert_eq!(
            u(&v, "files"),
            find_count(&s, &rel, &["-type", "f"]),
            "{ctx}"
        );
        assert_eq!(
            u(&v, "dirs"),
            find_count(&s, &rel, &["-type", "d"]),
            "{ctx}"
        );
        assert_eq!(
            u(&v, "symlinks"),
            find_count(&s, &rel, &["-type", "l"]),
            "{ctx}"
        );
        let other = find_count(
            &s,
            &rel,
            &["!", "-type", "f", "!", "-type", "d", "!", "-type", "l"],
        );
        assert_eq!(u(&v, "other"), other, "{ctx}");
        assert_eq!(u(&v, "allocated_bytes"), du(&s, &rel, false), "{ctx}");
        assert_eq!(u(&v, "apparent_bytes"), du(&s, &rel, true), "{ctx}");
        let (inodes, names) = file_inodes(&s, &rel);
        assert_eq!(u(&v, "hard_links"), names - inodes, "{ctx}");
        let hist: u64 = v["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| u(b, "files"))
            .sum();
        assert_eq!(hist, inodes, "histogram counts each file once: {ctx}");
        assert_eq!(hist, u(&v, "files") - u(&v, "hard_links"), "{ctx}");
        let small = run_in(
            &s,
            "find",
            &[
                &rel, "-xdev", "-type", "f", "-size", "-65536c", "-printf", ".",
            ],
        )
        .len() as u64;
        assert_eq!(u(&v, "small_files"), small, "{ctx}");
    }
}

#[test]
fn histogram_buckets_are_powers_of_two() {
    let s = scratch!();
    let sizes = [
        0u64,
        0,
        1,
        2,
        3,
        4,
        7,
        8,
        4095,
        4096,
        65_535,
        65_536,
        1 << 30,
    ];
    for (i, size) in sizes.iter().enumerate() {
        let p = s.file(format!("t/f{i}"), b"");
        fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_len(*size)
            .unwrap();
    }
    let v = scan_ok(&s, "t", &[]);
    let got: Vec<(u64, u64, u64)> = v["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (u(b, "min"), u(b, "max"), u(b, "files")))
        .collect();
    assert_eq!(
        got,
        [
            (0, 0, 2),
            (1, 1, 1),
            (2, 3, 2),
            (4, 7, 2),
            (8, 15, 1),
            (2048, 4095, 1),
            (4096, 8191, 1),
            (32_768, 65_535, 1),
            (65_536, 131_071, 1),
            (1 << 30, (1 << 31) - 1, 1),
        ]
    );
    let b = &v["histogram"][9];
    assert_eq!(u(b, "apparent_bytes"), 1 << 30);
    // A sparse 1 GiB file allocates (almost) nothing.
    assert!(u(b, "allocated_bytes") < 1 << 20, "{b}");
}

#[test]
fn top_lists_rank_directories_by_files_and_small_files() {
    let s = scratch!();
    let sized = |rel: String, size: u64| {
        let p = s.file(rel, b"");
        fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_len(size)
            .unwrap();
    };
    for i in 0..50 {
        sized(format!("t/a/s{i}"), 100);
    }
    for i in 0..30 {
        sized(format!("t/b/s{i}"), 65_535);
    }
    for i in 0..40 {
        sized(format!("t/b/l{i}"), 65_536);
    }
    for i in 0..10 {
        sized(format!("t/deep/er/c/s{i}"), 0);
    }
    for i in 0..5 {
        sized(format!("t/d/l{i}"), 1 << 20);
    }
    // Symlinks and subdirectories are not files.
    s.symlink("t/d/link", "l0");
    s.mkdir("t/d/sub");
    let v = scan_ok(&s, "t", &["--top", "3"]);
    let list = |k: &str| -> Vec<(String, u64, u64)> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().unwrap().to_string(),
                    u(e, "files"),
                    u(e, "small_files"),
                )
            })
            .collect()
    };
    let t = |p: &str, f: u64, sm: u64| (p.to_string(), f, sm);
    assert_eq!(
        list("top_by_files"),
        [t("t/b", 70, 30), t("t/a", 50, 50), t("t/deep/er/c", 10, 10)]
    );
    assert_eq!(
        list("top_by_small_files"),
        [t("t/a", 50, 50), t("t/b", 70, 30), t("t/deep/er/c", 10, 10)]
    );
    assert_eq!(u(&v, "small_files"), 90);
    // A lower threshold: only files under 1 KiB are small.
    let v = scan_ok(&s, "t", &["--top", "2", "--small", "1K"]);
    let firsts: Vec<(&str, u64)> = v["top_by_small_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), u(e, "small_files")))
        .collect();
    assert_eq!(firsts, [("t/a", 50), ("t/deep/er/c", 10)]);
    assert_eq!(u(&v, "small_threshold"), 1024);
    // The human report names the same directories.
    let out = s
        .cmd(&["scan", "--no-estimate", "--top", "3", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let text = util::stdout_of(&out);
    assert!(text.contains("     70     30  't/b'\n"), "{text}");
    assert!(
        text.contains("directories with the most small files"),
        "{text}"
    );
}

#[test]
fn top_by_allocated_bytes_ranks_whole_subtrees_as_du() {
    let s = scratch!();
    let data = |kib: usize| vec![0x5a_u8; kib << 10];
    s.file("t/video/film", data(2048));
    for i in 0..4 {
        s.file(format!("t/photos/2024/p{i}"), data(256));
    }
    for i in 0..2 {
        s.file(format!("t/photos/2023/p{i}"), data(256));
    }
    for i in 0..100 {
        s.file(format!("t/src/f{i}"), "x");
    }
    s.mkdir("t/empty");
    let v = scan_ok(&s, "t", &["--top", "5"]);
    let list = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        list("top_by_allocated_bytes"),
        ["t", "t/video", "t/photos", "t/photos/2024", "t/photos/2023"]
    );
    // Each is what `du -s -x` says of it, and counts the files below it as `find` does.
    for e in v["top_by_allocated_bytes"].as_array().unwrap() {
        let p = e["path"].as_str().unwrap();
        assert_eq!(u(e, "tree_allocated_bytes"), du(&s, p, false), "{p}: {e}");
        assert_eq!(
            u(e, "tree_files"),
            find_count(&s, p, &["-type", "f"]),
            "{p}"
        );
    }
    assert_eq!(
        u(&v["top_by_allocated_bytes"][0], "tree_allocated_bytes"),
        u(&v, "allocated_bytes")
    );
    assert_eq!(
        list("top_by_files"),
        ["t/src", "t/photos/2024", "t/photos/2023", "t/video"]
    );
    assert_eq!(list("top_by_small_files"), ["t/src"]);
    // --top limits every list.
    let v = scan_ok(&s, "t", &["--top", "2"]);
    for k in [
        "top_by_allocated_bytes",
        "top_by_files",
        "top_by_small_files",
    ] {
        assert!(v[k].as_array().unwrap().len() <= 2, "{k}: {v}");
    }
    assert_eq!(v["top_by_allocated_bytes"][1]["path"], "t/video");
    // The human report shows the by-bytes list first.
    let out = s
        .cmd(&["scan", "--no-estimate", "--top", "2", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let text = util::stdout_of(&out);
    let bytes_at = text
        .find("directories with the most allocated bytes")
        .expect(&text);
    let files_at = text.find("directories with the most files").expect(&text);
    assert!(bytes_at < files_at, "{text}");
    assert!(text.contains("      1  't/video'\n"), "{text}");
}

/// `find REL -xdev` with `PRUNE` (an expression) pruned, printing one byte per entry that
/// passes `tests`; with `tests` empty, one per pruned entry.
fn find_pruned(s: &Scratch, rel: &str, prune: &[&str], tests: &[&str]) -> u64 {
    let mut args = vec![rel, "-xdev", "("];
    args.extend_from_slice(prune);
    args.push(")");
    if tests.is_empty() {
        args.extend_from_slice(&["-prune", "-printf", "."]);
    } else {
        args.extend_from_slice(&["-prune", "-o"]);
        args.extend_from_slice(tests);
        args.extend_from_slice(&["-printf", "."]);
    }
    run_in(s, "find", &args).len() as u64
}

#[test]
fn exclude_leaves_out_what_find_prunes_by_name_and_by_path() {
    let s = scratch!();
    s.make_outside("outside");
    random_tree(&s, "t", 11, 600);
    s.file("t/a.o", "o");
    s.file("t/cache/x", "x");
    s.file("t/sub/cache/y", "y");
    s.file("t/sub/notdir/cache", "a file named cache, not excluded");
    s.file("t/logs/old/a", "a");
    s.file("t/logs/old/b", "b");
    s.file("t/logs/new/old", "a file named old, not excluded");
    s.file("t/build/obj/deep/z.o", "z");
    s.file("t/build/keep", "k");
    // Name globs (any depth), path globs (relative to PATH), a directory-only glob.
    let ours = [
        "--exclude",
        "*.o",
        "--exclude",
        "cache/",
        "--exclude",
        "e1?",
        "--exclude",
        "logs/old",
        "--exclude",
        "build/obj",
    ];
    let theirs = [
        "-name",
        "*.o",
        "-o",
        "-type",
        "d",
        "-name",
        "cache",
        "-o",
        "-name",
        "e1?",
        "-o",
        "-path",
        "t/logs/old",
        "-o",
        "-path",
        "t/build/obj",
    ];
    let v = scan_ok(&s, "t", &ours);
    for (k, tests) in [
        ("files", &["-type", "f"][..]),
        ("dirs", &["-type", "d"][..]),
        ("symlinks", &["-type", "l"][..]),
        (
            "other",
            &["!", "-type", "f", "!", "-type", "d", "!", "-type", "l"][..],
        ),
        ("excluded", &[][..]),
    ] {
        assert_eq!(u(&v, k), find_pruned(&s, "t", &theirs, tests), "{k}: {v}");
    }
    assert!(u(&v, "excluded") >= 8, "{v}");
    assert_eq!(u(&v["roots"][0], "excluded"), u(&v, "excluded"));
    assert_eq!(v["exclude"][0], "*.o");
    // No excluded directory appears in a top list, nor anything below one.
    for k in [
        "top_by_allocated_bytes",
        "top_by_files",
        "top_by_small_files",
    ] {
        for e in v[k].as_array().unwrap() {
            let p = e["path"].as_str().unwrap();
            assert!(
                !p.contains("cache") && !p.contains("logs/old") && !p.contains("build/obj"),
                "{k}: {p}"
            );
        }
    }
    // Sizes leave them out too: the same as a scan of a copy without them.
    let copy = s.path("copy");
    let out = StdCommand::new("cp")
        .args(["-a", "t"])
        .arg(&copy)
        .current_dir(s.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    run_in(
        &s,
        "find",
        &[
            "copy",
            "-depth",
            "(",
            "-name",
            "*.o",
            "-o",
            "-type",
            "d",
            "-name",
            "cache",
            "-o",
            "-name",
            "e1?",
            "-o",
            "-path",
            "copy/logs/old",
            "-o",
            "-path",
            "copy/build/obj",
            ")",
            "-exec",
            "rm",
            "-rf",
            "{}",
            "+",
        ],
    );
    let w = scan_ok(&s, "copy", &[]);
    for k in [
        "files",
        "dirs",
        "symlinks",
        "other",
        "small_files",
        "hard_links",
    ] {
        assert_eq!(u(&v, k), u(&w, k), "{k}");
    }
    // (A copy may allocate differently: sizes only.)
    let sizes = |v: &Value| -> Vec<(u64, u64, u64)> {
        v["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (u(b, "min"), u(b, "files"), u(b, "apparent_bytes")))
            .collect()
    };
    assert_eq!(sizes(&v), sizes(&w));
    // The human report says how many were left out.
    let out = s
        .cmd(&["scan", "--no-estimate", "--exclude", "*.o", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let text = util::stdout_of(&out);
    let n = find_pruned(&s, "t", &["-name", "*.o"], &[]);
    assert!(
        text.contains(&format!(
            "excluded (--exclude '*.o'): {n} {}, neither counted nor descended into",
            if n == 1 { "entry" } else { "entries" }
        )),
        "{text}"
    );
    // A glob that cannot match anything is a usage error.
    s.cmd(&["scan", "--exclude", "", "t"]).assert().code(2);
    s.cmd(&["scan", "--exclude", "a[", "t"]).assert().code(2);
}

#[test]
fn hard_links_are_counted_once() {
    let s = scratch!();
    s.file("t/a/data", vec![7u8; 100_000]);
    s.hardlink("t/b/link1", "t/a/data");
    s.hardlink("t/b/link2", "t/a/data");
    s.file("t/c/other", vec![1u8; 10_000]);
    let v = scan_ok(&s, "t", &[]);
    assert_eq!(u(&v, "files"), 4);
    assert_eq!(u(&v, "hard_links"), 2);
    assert_eq!(u(&v, "allocated_bytes"), du(&s, "t", false));
    assert_eq!(u(&v, "apparent_bytes"), du(&s, "t", true));
    let hist: u64 = v["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| u(b, "files"))
        .sum();
    assert_eq!(hist, 2);
}

#[test]
fn mount_points_are_skipped_and_reported_unless_crossing() {
    util::require_root!();
    let s = scratch!();
    s.file("t/a/f", "x");
    let _m = util::or_skip!(Volume::tmpfs(&s, "t/mnt"));
    for i in 0..7 {
        s.file(format!("t/mnt/f{i}"), "in the tmpfs");
    }
    s.file("t/mnt/sub/g", "x");
    let v = scan_ok(&s, "t", &[]);
    assert_eq!((u(&v, "files"), u(&v, "dirs")), (1, 2), "{v}");
    assert_eq!(v["skipped_mounts"], serde_json::json!(["t/mnt"]));
    assert_eq!(u(&v, "allocated_bytes"), du(&s, "t", false));
    let out = s.cmd(&["scan", "--no-estimate", "t"]).output().unwrap();
    util::assert_success(&out);
    assert!(util::stdout_of(&out).contains("not entered: 1 mount point of another file system"));

    let v = scan_ok(&s, "t", &["--cross-mounts"]);
    assert_eq!((u(&v, "files"), u(&v, "dirs")), (9, 4), "{v}");
    assert_eq!(v["skipped_mounts"], serde_json::json!([]));
}

#[test]
fn symlinks_are_never_followed() {
    let s = scratch!();
    s.make_outside("outside");
    for i in 0..200 {
        s.file(format!("outside/many/f{i}"), "outside");
    }
    s.file("t/real", "inside");
    s.symlink("t/abs", s.path("outside"));
    s.symlink("t/rel", "../outside");
    s.symlink("t/sub/deeper", "../../outside/many");
    s.symlink("t/file", s.path("outside/file0"));
    s.symlink("t/dot", ".");
    s.symlink("t/up", "..");
    s.symlink("t/loop", "loop");
    s.symlink("t/root", "/");
    let v = scan_ok(&s, "t", &[]);
    assert_eq!(
        (u(&v, "files"), u(&v, "dirs"), u(&v, "symlinks")),
        (1, 2, 8),
        "{v}"
    );

    // A symlink named as the PATH is not followed; with a trailing slash it is.
    s.symlink("link_to_t", "t");
    let out = s
        .cmd(&["scan", "--json", "--no-estimate", "link_to_t"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("'link_to_t'"),
        "{}",
        stderr_of(&out)
    );
    assert!(
        stderr_of(&out).contains("symbolic link"),
        "{}",
        stderr_of(&out)
    );
    // Nothing else was named: nothing scanned, no report.
    assert_eq!(util::stdout_of(&out), "");
    let v = scan_ok(&s, "link_to_t/", &[]);
    assert_eq!(u(&v, "symlinks"), 8);

    // The strongest check: as an unprivileged user, with the outside directory unreadable,
    // any attempt to follow a link into it would fail with EACCES and show up as an error.
    if !util::is_root() {
        util::skip!("in part: the check as an unprivileged user needs root");
    }
    fs::set_permissions(s.root(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(s.path("outside"), fs::Permissions::from_mode(0o000)).unwrap();
    let out = as_nobody(&s, &["scan", "--json", "--no-estimate", "t"]);
    fs::set_permissions(s.path("outside"), fs::Permissions::from_mode(0o755)).unwrap();
    let out = util::or_skip!(out);
    util::assert_success(&out);
    assert_eq!(u(&json_object(&out.stdout), "symlinks"), 8);
}

/// `reclaim ARGS` as uid/gid 65534 in the scratch root; Err (why, for a skip) when not
/// possible.
fn as_nobody(s: &Scratch, args: &[&str]) -> Result<Output, String> {
    // Check the paths as the harness does.
    let _ = s.cmd(args);
    let out = StdCommand::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(reclaim_bin())
        .args(args)
        .current_dir(s.root())
        // Root's home is not readable for that user: no configuration file from there.
        .env("HOME", s.root())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .output();
    match out {
        Ok(o) if o.status.code() != Some(127) => Ok(o),
        _ => Err("in part: setpriv is not available for the unprivileged part".to_string()),
    }
}

#[test]
fn unreadable_directory_is_reported_and_the_rest_counted() {
    util::require_root!();
    let s = scratch!();
    for i in 0..20 {
        s.file(format!("t/ok/f{i}"), "readable");
        s.file(format!("t/locked/f{i}"), "hidden");
    }
    s.file("t/locked/sub/g", "hidden");
    s.file("t/ok/deeper/h", "readable");
    fs::set_permissions(s.root(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(s.path("t/locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let out = as_nobody(&s, &["scan", "--json", "--no-estimate", "t"]);
    fs::set_permissions(s.path("t/locked"), fs::Permissions::from_mode(0o755)).unwrap();
    let out = util::or_skip!(out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let stderr = stderr_of(&out);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        ["reclaim: cannot open directory 't/locked': Permission denied"],
        "{stderr}"
    );
    let v = json_object(&out.stdout);
    assert_eq!(u(&v, "files"), 21, "{v}");
    // The unreadable directory itself is counted (as find and du do), not what is inside.
    assert_eq!(u(&v, "dirs"), 4, "{v}");
    assert_eq!(v["errors"][0]["path"], "t/locked");
    assert_eq!(v["errors"][0]["error"], "Permission denied");
    assert_eq!(v["errors"][0]["op"], "cannot open directory");
}

#[test]
fn deep_trees_work_with_few_fds() {
    const DEPTH: usize = 3000;
    let s = scratch!();
    s.mkdir("deep");
    // Built through fds: the paths are far longer than PATH_MAX. Every level holds a file,
    // and every 10th level a side directory with a file, so that the walk has work pending
    // at many levels at once and must close and reopen ancestors.
    let mut fd = reclaim::open_dir_path(&s.path("deep")).unwrap();
    let mode = rustix::fs::Mode::from_raw_mode(0o755);
    let mut sides = 0;
    for level in 0..DEPTH {
        let f = rustix::fs::openat(
            &fd,
            c"f",
            rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY,
            mode,
        )
        .unwrap();
        drop(f);
        if level % 10 == 0 {
            rustix::fs::mkdirat(&fd, c"side", mode).unwrap();
            let side = reclaim::open_dir_at(&fd, c"side").unwrap();
            drop(
                rustix::fs::openat(
                    &side,
                    c"g",
                    rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY,
                    mode,
                )
                .unwrap(),
            );
            sides += 1;
        }
        rustix::fs::mkdirat(&fd, c"d", mode).unwrap();
        fd = reclaim::open_dir_at(&fd, c"d").unwrap();
    }
    drop(fd);
    let files = (DEPTH + sides) as u64;
    let dirs = (1 + DEPTH + sides) as u64;
    for threads in ["1", "4"] {
        // (No snapshot: its recursive walk and path-based reads cannot go this deep.)
        let (out, v) = scan_json(&s, &["--no-estimate", "--threads", threads, "deep"]);
        util::assert_success(&out);
        assert_eq!((u(&v, "files"), u(&v, "dirs")), (files, dirs), "{v}");
        // Under a low open-file limit the budget shrinks to a couple of fds.
        let _ = s.cmd(&["scan", "deep"]);
        let out = StdCommand::new("sh")
            .current_dir(s.root())
            .arg("-c")
            .arg("ulimit -n 40 && exec \"$0\" scan --json --no-estimate --threads \"$1\" deep")
            .arg(reclaim_bin())
            .arg(threads)
            .output()
            .unwrap();
        util::assert_success(&out);
        let v = json_object(&out.stdout);
        assert_eq!((u(&v, "files"), u(&v, "dirs")), (files, dirs), "{v}");
        assert!(v["top_by_files"][0]["path"]
            .as_str()
            .unwrap()
            .starts_with("deep"));
    }
}

#[test]
fn json_has_the_documented_shape() {
    let s = scratch!();
    s.file("t/a", "hello");
    s.file(
        Path::new("t").join(OsStr::from_bytes(b"bad-\xff-name")),
        "x",
    );
    s.symlink("t/l", "a");
    let v = scan_ok(&s, "t", &[]);
    for k in [
        "files",
        "dirs",
        "symlinks",
        "other",
        "hard_links",
        "small_files",
        "allocated_bytes",
        "apparent_bytes",
        "small_threshold",
        "threads",
    ] {
        u(&v, k);
    }
    assert!(v["elapsed_s"].as_f64().is_some());
    assert_eq!(v["paths"], serde_json::json!(["t"]));
    for k in [
        "histogram",
        "top_by_files",
        "top_by_small_files",
        "roots",
        "skipped_mounts",
        "errors",
    ] {
        assert!(v[k].is_array(), "{k}: {v}");
    }
    for k in ["min", "max", "files", "apparent_bytes", "allocated_bytes"] {
        u(&v["histogram"][0], k);
    }
    assert_eq!(v["roots"][0]["path"], "t");
    assert_eq!(u(&v["roots"][0], "files"), 2);
    assert!(v["estimate"].is_null(), "--no-estimate: {v}");
    // Paths are lossy UTF-8, the rest exact.
    // Nothing to scan: the error alone, no report.
    let out = s
        .cmd(&["scan", "--json", "--no-estimate", "t/bad-\u{fffd}-name"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "no such path");
    assert_eq!(util::stdout_of(&out), "");
    assert!(
        stderr_of(&out).starts_with("reclaim: cannot scan 't/bad-"),
        "{}",
        stderr_of(&out)
    );
    let bad = s.path(Path::new("t").join(OsStr::from_bytes(b"bad-\xff-name")));
    let out = s
        .cmd(&[
            OsStr::new("scan"),
            OsStr::new("--json"),
            OsStr::new("--no-estimate"),
            bad.as_os_str(),
        ])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json_object(&out.stdout);
    assert_eq!(u(&v, "files"), 1);
    assert!(v["paths"][0]
        .as_str()
        .unwrap()
        .ends_with("bad-\u{fffd}-name"));
}

#[test]
fn several_paths_and_errors_exit_1_but_count_the_rest() {
    let s = scratch!();
    s.file("a/f1", "1");
    s.file("b/f2", "22");
    s.file("b/f3", "333");
    s.file("single", "4444");
    let (out, v) = scan_json(&s, &["--no-estimate", "a", "missing", "b", "single"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_of(&out).trim(),
        "reclaim: cannot scan 'missing': No such file or directory"
    );
    assert_eq!(u(&v, "files"), 4);
    let roots: Vec<(&str, u64)> = v["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["path"].as_str().unwrap(), u(r, "files")))
        .collect();
    assert_eq!(roots, [("a", 1), ("b", 2), ("single", 1)]);
}

/// Nothing to scan: the one line that says why, exit 1, and no report (no totals of nothing,
/// no estimate of "0.00 s"), in text and in JSON.
#[test]
fn a_missing_path_alone_is_one_line_and_no_report() {
    let s = scratch!();
    for json in [false, true] {
        let mut args = vec!["scan"];
        if json {
            args.push("--json");
        }
        args.push("nosuch");
        let out = s.cmd(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert_eq!(
            stderr_of(&out),
            "reclaim: cannot scan 'nosuch': No such file or directory\n"
        );
        assert_eq!(util::stdout_of(&out), "", "json: {json}");
    }
    s.file("f", "x");
    let out = s.cmd(&["scan", "nosuch", "missing/"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        stderr_of(&out),
        "reclaim: cannot scan 'nosuch': No such file or directory\n\
         reclaim: cannot scan 'missing/': No such file or directory\n"
    );
    assert_eq!(util::stdout_of(&out), "");
}

#[test]
fn usage_errors_exit_2() {
    util::reclaim().args(["scan"]).assert().code(2);
    util::reclaim()
        .args(["scan", "--threads", "0", "x"])
        .assert()
        .code(2);
    util::reclaim()
        .args(["scan", "--small", "lots", "x"])
        .assert()
        .code(2);
}

#[test]
fn estimate_calibrates_privately_and_leaves_nothing_behind() {
    let s = scratch!();
    random_tree(&s, "t", 7, 300);
    let tmp = s.mkdir("tmp");
    let before = s.snapshot("t");
    let out = s
        .cmd(&["scan", "--json", "t"])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json_object(&out.stdout);
    let e = &v["estimate"];
    let secs = e["seconds"]
        .as_f64()
        .unwrap_or_else(|| panic!("no estimate: {v}"));
    assert!(secs > 0.0 && secs < 60.0, "{e}");
    // The cache directory (XDG_CACHE_HOME: the scratch's `.cache`) is on this file system:
    // it is made and used first.
    let c = &e["calibrations"][0];
    let cache = s.path(".cache/reclaim");
    assert_eq!(c["path"], cache.to_str().unwrap(), "{c}");
    assert_eq!(c["place"], "cache", "{c}");
    assert!(u(c, "files") >= 100, "{c}");
    assert!(c["unlinks_per_s"].as_f64().unwrap() > 0.0, "{c}");
    for dir in [&cache, &tmp] {
        assert_eq!(
            fs::read_dir(dir).unwrap().count(),
            0,
            "calibration left something in {dir:?}"
        );
    }
    assert_same("t", &before, &s.snapshot("t"));
    let out = s.cmd(&["scan", "t"]).env("TMPDIR", &tmp).output().unwrap();
    util::assert_success(&out);
    assert!(util::stdout_of(&out).contains("`reclaim rm -r` would take about"));
}

/// `reclaim scan --json ARGS` with `TMPDIR=tmp`; expects exit 0.
fn scan_with_tmpdir(s: &Scratch, tmp: &Path, args: &[&str]) -> (String, Value) {
    scan_with(s, tmp, &s.path(".cache"), args)
}

/// `scan_with_tmpdir` with `XDG_CACHE_HOME` set to `cache`.
fn scan_with(s: &Scratch, tmp: &Path, cache: &Path, args: &[&str]) -> (String, Value) {
    // Places other than the cache directory are used with --estimate only.
    let mut all = vec!["scan", "--estimate", "--json"];
    all.extend_from_slice(args);
    let out = s
        .cmd(&all)
        .env("TMPDIR", tmp)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json_object(&out.stdout);
    let mut human = vec!["scan", "--estimate"];
    human.extend_from_slice(args);
    let out = s
        .cmd(&human)
        .env("TMPDIR", tmp)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap();
    util::assert_success(&out);
    (util::stdout_of(&out), v)
}

#[test]
fn calibration_never_writes_inside_the_scanned_tree() {
    util::require_root!();
    let s = scratch!();
    // The scanned file system (its top not writable by others), and TMPDIR on another one.
    let _vol = util::or_skip!(Volume::tmpfs_with(&s, "vol", "size=16m,mode=755"));
    let _tmp = util::or_skip!(Volume::tmpfs(&s, "tmp"));
    for i in 0..30 {
        s.file(format!("vol/t/d{}/f{i}", i % 3), "x");
    }
    let vol = s.path("vol");
    let tmp = s.path("tmp");
    let unchanged = |what: &str, before: &BTreeMap<PathBuf, [i64; 8]>, root: &Path| {
        assert_eq!(
            before,
            &metadata_snapshot(root),
            "{what} changed (a name was made or removed in it)"
        );
    };

    // TMPDIR elsewhere: the calibration runs at the top of the scanned file system, outside
    // the tree, which stays byte for byte (and inode, mode, mtime, ctime) as it was.
    let tree = metadata_snapshot(&s.path("vol/t"));
    let contents = s.snapshot("vol/t");
    let (text, v) = scan_with_tmpdir(&s, &tmp, &["vol/t"]);
    let e = &v["estimate"];
    assert!(e["seconds"].as_f64().is_some(), "{v}");
    assert_eq!(e["calibrations"][0]["path"], vol.to_str().unwrap(), "{e}");
    assert_eq!(e["calibrations"][0]["place"], "mount-top", "{e}");
    assert!(text.contains("(the mount top)"), "{text}");
    unchanged("vol/t", &tree, &s.path("vol/t"));
    assert_same("vol/t", &contents, &s.snapshot("vol/t"));
    let names = |p: &Path| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&vol), ["t"], "calibration left something at the top");
    assert!(names(&tmp).is_empty());

    // The cache directory, when it is on the scanned file system, is used before the top: made
    // (mode 0700) and left empty. A trash at the top is never used (a scan is no removal).
    let trash = util::trash_dir(&vol);
    fs::create_dir(&trash).unwrap();
    fs::set_permissions(&trash, fs::Permissions::from_mode(0o700)).unwrap();
    let cache = s.path("vol/cache");
    let (text, v) = scan_with(&s, &tmp, &cache, &["vol/t"]);
    let c = &v["estimate"]["calibrations"][0];
    assert_eq!(c["path"], cache.join("reclaim").to_str().unwrap(), "{v}");
    assert_eq!(c["place"], "cache", "{v}");
    assert!(text.contains("(the cache directory)"), "{text}");
    let made = fs::symlink_metadata(cache.join("reclaim")).unwrap();
    assert!(made.is_dir() && made.mode() & 0o7777 == 0o700, "{made:?}");
    assert!(
        names(&cache.join("reclaim")).is_empty(),
        "calibration left something"
    );
    assert!(names(&trash).is_empty(), "calibration wrote in the trash");
    unchanged("vol/t", &tree, &s.path("vol/t"));
    fs::remove_dir_all(&cache).unwrap();
    fs::remove_dir(&trash).unwrap();

    // A cache directory inside the scanned tree is never made there.
    let (_, v) = scan_with(&s, &tmp, &s.path("vol/t/d0/cache"), &["vol/t"]);
    assert_eq!(
        v["estimate"]["calibrations"][0]["place"], "mount-top",
        "{v}"
    );
    unchanged("vol/t", &tree, &s.path("vol/t"));

    // The whole file system scanned: nowhere outside the tree to write, so no estimate, and
    // the report says why; nothing in it changed.
    let whole = metadata_snapshot(&vol);
    let (text, v) = scan_with_tmpdir(&s, &tmp, &["vol"]);
    let e = &v["estimate"];
    assert!(e["seconds"].is_null(), "{v}");
    assert!(e["calibrations"].as_array().unwrap().is_empty(), "{e}");
    assert_eq!(e["not_estimated"][0]["path"], "vol", "{e}");
    assert_eq!(
        e["not_estimated"][0]["reason"], "no-place-outside-tree",
        "{e}"
    );
    let why = e["unavailable"].as_str().unwrap();
    assert!(why.contains("is inside the scanned tree"), "{why}");
    assert!(
        text.contains(
            "removal estimate: none (no place outside the scanned tree on the file system of \
             'vol'"
        ),
        "{text}"
    );
    unchanged("vol", &whole, &vol);

    // ... nor the cache directory inside it (not even made).
    let (_, v) = scan_with(&s, &tmp, &s.path("vol/cache"), &["vol"]);
    assert!(v["estimate"]["seconds"].is_null(), "{v}");
    unchanged("vol", &whole, &vol);

    // Two PATHs: a place inside either is never used.
    let (_, v) = scan_with(&s, &tmp, &s.path("vol/t/cache"), &["vol/t", "vol"]);
    assert!(v["estimate"]["seconds"].is_null(), "{v}");
    unchanged("vol", &whole, &vol);

    // TMPDIR inside the scanned tree is passed over for a place outside it.
    let inner = s.mkdir("vol/t/d0/tmp");
    let tree = metadata_snapshot(&s.path("vol/t"));
    let (_, v) = scan_with_tmpdir(&s, &inner, &["vol/t"]);
    assert_eq!(
        v["estimate"]["calibrations"][0]["path"],
        vol.to_str().unwrap(),
        "{v}"
    );
    unchanged("vol/t", &tree, &s.path("vol/t"));

    // A user who may not write the top calibrates in a directory of theirs above the PATH.
    fs::set_permissions(s.root(), fs::Permissions::from_mode(0o755)).unwrap();
    let home = s.mkdir("vol/home");
    for i in 0..10 {
        s.file(format!("vol/home/t/f{i}"), "x");
    }
    let chown = StdCommand::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&home)
        .output()
        .unwrap();
    assert!(chown.status.success(), "{}", stderr_of(&chown));
    let tree = metadata_snapshot(&s.path("vol/home/t"));
    let out = StdCommand::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(reclaim_bin())
        .args(["scan", "--estimate", "--json", "vol/home/t"])
        .current_dir(s.root())
        .env("HOME", s.root())
        .env("TMPDIR", &tmp)
        .env("RECLAIM_CONFIG", "")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .output();
    let out = util::or_skip!(out
        .as_ref()
        .map_err(|e| format!("in part: no check as another user: setpriv: {e}")));
    util::assert_success(out);
    let v = json_object(&out.stdout);
    let c = &v["estimate"]["calibrations"][0];
    assert_eq!(c["path"], home.to_str().unwrap(), "{v}");
    assert_eq!(c["place"], "above", "{v}");
    assert_eq!(names(&home), ["t"]);
    unchanged("vol/home/t", &tree, &s.path("vol/home/t"));
}

/// `reclaim scan --json ARGS` as `uid` in the scratch root with exactly the environment
/// `env` (plus `PATH`): no HOME or XDG variable of the test's own leaks in.
fn scan_as(s: &Scratch, uid: u32, env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut c = StdCommand::new("setpriv");
    c.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .args(["--clear-groups", "--"])
        .arg(reclaim_bin())
        .args(["scan", "--estimate", "--json"])
        .args(args)
        .current_dir(s.root())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RECLAIM_CONFIG", "");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// The calibration's cache directory, `~/.cache/reclaim`, as a user whom another user (or a
/// symlink) got there first: refused with one line, nothing written through it, and the
/// calibration runs elsewhere on that file system; made fresh (mode 0700) when it is not there.
#[test]
fn calibration_refuses_a_cache_dir_it_does_not_own() {
    util::require_root!();
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs_with(&s, "vol", "size=16m,mode=755"));
    let _tmp = util::or_skip!(Volume::tmpfs(&s, "tmp"));
    fs::set_permissions(s.root(), fs::Permissions::from_mode(0o755)).unwrap();
    let (user, other) = (65534, 65533);
    let home = s.mkdir("vol/home");
    for i in 0..10 {
        s.file(format!("vol/home/t/f{i}"), "x");
    }
    s.mkdir("vol/home/.cache");
    s.mkdir("vol/home/elsewhere");
    let chown = StdCommand::new("chown")
        .args(["-R", &format!("{user}:{user}")])
        .arg(&home)
        .output()
        .unwrap();
    assert!(chown.status.success(), "{}", stderr_of(&chown));
    fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).unwrap();
    let tmp = s.path("tmp");
    let tree = metadata_snapshot(&s.path("vol/home/t"));
    let cache = home.join(".cache/reclaim");
    let env: [(&str, &Path); 2] = [("HOME", &home), ("TMPDIR", &tmp)];
    let refused_once = |o: &Output, want: &str| {
        let err = stderr_of(o);
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("not using")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains(want), "{err}");
        assert!(lines[0].contains(cache.to_str().unwrap()), "{err}");
    };
    let calibrated_above = |o: &Output| {
        let v = json_object(&o.stdout);
        let c = &v["estimate"]["calibrations"][0];
        assert_eq!(c["place"], "above", "{v}");
        assert_eq!(c["path"], home.to_str().unwrap(), "{v}");
        v
    };

    // Another user made it first (and left it open to all): refused, untouched.
    fs::create_dir(&cache).unwrap();
    std::os::unix::fs::chown(&cache, Some(other), Some(other)).unwrap();
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o777)).unwrap();
    let out = scan_as(&s, user, &env, &["vol/home/t"]);
    if out.status.code() == Some(127) {
        util::skip!("setpriv is not available");
    }
    util::assert_success(&out);
    refused_once(&out, &format!("is owned by uid {other}, not by uid {user}"));
    let v = calibrated_above(&out);
    assert!(
        v["estimate"]["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("not using the cache directory")),
        "{v}"
    );
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 0, "wrote in it");
    let m = fs::symlink_metadata(&cache).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o7777), (other, 0o777), "changed it");
    fs::remove_dir(&cache).unwrap();

    // A symlink in its place, to a directory the user could write: never followed.
    std::os::unix::fs::symlink("../elsewhere", &cache).unwrap();
    std::os::unix::fs::lchown(&cache, Some(user), Some(user)).unwrap();
    let out = scan_as(&s, user, &env, &["vol/home/t"]);
    util::assert_success(&out);
    refused_once(&out, "is a symbolic link");
    calibrated_above(&out);
    assert_eq!(fs::read_dir(home.join("elsewhere")).unwrap().count(), 0);
    assert!(fs::symlink_metadata(&cache).unwrap().is_symlink());
    fs::remove_file(&cache).unwrap();

    // Not there: made, the user's, mode 0700, used, left empty; no line.
    let out = scan_as(&s, user, &env, &["vol/home/t"]);
    util::assert_success(&out);
    assert!(
        !stderr_of(&out).contains("not using"),
        "{}",
        stderr_of(&out)
    );
    let v = json_object(&out.stdout);
    let c = &v["estimate"]["calibrations"][0];
    assert_eq!(c["place"], "cache", "{v}");
    assert_eq!(c["path"], cache.to_str().unwrap(), "{v}");
    let m = fs::symlink_metadata(&cache).unwrap();
    assert!(m.is_dir(), "{m:?}");
    assert_eq!((m.uid(), m.mode() & 0o7777), (user, 0o700));
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 0);
    unchanged_tree(&tree, &s.path("vol/home/t"));
}

/// No usable HOME: unset, or open to everyone, or an XDG_CACHE_HOME of someone else's; the
/// scan calibrates elsewhere with at most one line, and makes nothing in such a place.
#[test]
fn calibration_without_a_usable_home_falls_back() {
    util::require_root!();
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs_with(&s, "vol", "size=16m,mode=755"));
    let _tmp = util::or_skip!(Volume::tmpfs(&s, "tmp"));
    fs::set_permissions(s.root(), fs::Permissions::from_mode(0o755)).unwrap();
    let user = 65534;
    let home = s.mkdir("vol/home");
    for i in 0..10 {
        s.file(format!("vol/home/t/f{i}"), "x");
    }
    let open = s.mkdir("vol/open");
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let theirs = s.mkdir("vol/theirs");
    std::os::unix::fs::chown(&theirs, Some(65533), Some(65533)).unwrap();
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o777)).unwrap();
    let chown = StdCommand::new("chown")
        .args(["-R", &format!("{user}:{user}")])
        .arg(&home)
        .output()
        .unwrap();
    assert!(chown.status.success(), "{}", stderr_of(&chown));
    let tmp = s.path("tmp");
    let tree = metadata_snapshot(&s.path("vol/home/t"));
    for (env, line) in [
        (vec![("TMPDIR", tmp.as_path())], None),
        (
            vec![("TMPDIR", tmp.as_path()), ("HOME", open.as_path())],
            Some("not using HOME"),
        ),
        (
            vec![
                ("TMPDIR", tmp.as_path()),
                ("HOME", home.as_path()),
                ("XDG_CACHE_HOME", theirs.as_path()),
            ],
            Some("not using XDG_CACHE_HOME"),
        ),
    ] {
        let out = scan_as(&s, user, &env, &["vol/home/t"]);
        if out.status.code() == Some(127) {
            util::skip!("setpriv is not available");
        }
        util::assert_success(&out);
        let err = stderr_of(&out);
        let said: Vec<&str> = err.lines().filter(|l| l.contains("not using")).collect();
        match line {
            None => assert!(said.is_empty(), "{env:?}: {err}"),
            Some(want) => {
                assert_eq!(said.len(), 1, "{env:?}: {err}");
                assert!(said[0].contains(want), "{env:?}: {err}");
            }
        }
        let v = json_object(&out.stdout);
        let c = &v["estimate"]["calibrations"][0];
        assert_eq!(c["place"], "above", "{env:?}: {v}");
        assert_eq!(fs::read_dir(&open).unwrap().count(), 0, "{env:?}");
        assert_eq!(fs::read_dir(&theirs).unwrap().count(), 0, "{env:?}");
        unchanged_tree(&tree, &s.path("vol/home/t"));
    }
}

fn unchanged_tree(before: &BTreeMap<PathBuf, [i64; 8]>, root: &Path) {
    assert_eq!(
        before,
        &metadata_snapshot(root),
        "the scanned tree changed (a name was made or removed in it)"
    );
}

#[test]
fn estimate_is_none_on_a_read_only_file_system() {
    util::require_root!();
    let s = scratch!();
    for i in 0..30 {
        s.file(format!("t/d{}/f{i}", i % 3), "x");
    }
    let _ro = util::or_skip!(Volume::bind(&s, "t", "ro", true));
    let (out, v) = scan_json(&s, &["ro"]);
    util::assert_success(&out);
    assert!(v["estimate"]["seconds"].is_null(), "{v}");
    assert_eq!(v["estimate"]["not_estimated"][0]["reason"], "read-only");
    let why = v["estimate"]["unavailable"].as_str().unwrap();
    assert!(why.contains("read-only"), "{why}");
    let out = s.cmd(&["scan", "ro"]).output().unwrap();
    assert!(
        util::stdout_of(&out)
            .contains("removal estimate: none ('ro' is on a read-only file system"),
        "{}",
        util::stdout_of(&out)
    );
}

/// Sums over an ncdu export (`ncdu -o`'s JSON): (regular files, other non-directories,
/// directories, apparent bytes, allocated bytes), each hard-linked inode's bytes once (ncdu
/// keeps `ino` only where `hlnkc` is set).
fn ncdu_totals(v: &Value) -> (u64, u64, u64, u64, u64) {
    fn go(v: &Value, seen: &mut std::collections::HashSet<u64>, t: &mut [u64; 5]) {
        let bytes = |e: &Value, t: &mut [u64; 5], seen: &mut std::collections::HashSet<u64>| {
            let first = !e["hlnkc"].as_bool().unwrap_or(false)
                || seen.insert(e["ino"].as_u64().expect("a hard link has an ino"));
            if first {
                t[3] += e["asize"].as_u64().unwrap_or(0);
                t[4] += e["dsize"].as_u64().unwrap_or(0);
            }
        };
        match v {
            Value::Array(dir) => {
                t[2] += 1;
                bytes(&dir[0], t, seen);
                for e in &dir[1..] {
                    match e {
                        Value::Array(_) => go(e, seen, t),
                        _ if e.get("excluded").is_some() => {}
                        _ => {
                            if e["notreg"].as_bool().unwrap_or(false) {
                                t[1] += 1;
                            } else {
                                t[0] += 1;
                            }
                            bytes(e, t, seen);
                        }
                    }
                }
            }
            _ => panic!("a directory is an array: {v}"),
        }
    }
    let mut t = [0u64; 5];
    go(&v[3], &mut std::collections::HashSet::new(), &mut t);
    (t[0], t[1], t[2], t[3], t[4])
}

/// Parses an export, its non-UTF-8 bytes made U+FFFD (structure and numbers are ASCII).
fn parse_export(path: &Path) -> Value {
    let bytes = fs::read(path).unwrap();
    let v: Value = serde_json::from_str(&String::from_utf8_lossy(&bytes))
        .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    assert_eq!(v[0], 1, "major version 1");
    assert_eq!(v[2]["progname"], "reclaim");
    v
}

#[test]
fn export_loads_in_ncdu_with_the_totals_of_scan_json() {
    if StdCommand::new("ncdu").arg("-v").output().is_err() {
        util::skip!("ncdu is not installed (.ci/run installs it)");
    }
    let s = scratch!();
    s.make_outside("outside");
    random_tree(&s, "t", 7, 600);
    // Names ncdu must read back: a newline, a quote and a backslash, a control byte, bytes
    // that are not UTF-8.
    let odd: [&[u8]; 4] = [
        b"new\nline",
        b"q\"b\\s",
        b"tab\tbell\x07",
        b"\xff\xfe latin1 \xe9",
    ];
    for (i, name) in odd.iter().enumerate() {
        let p = s.path("t").join(OsStr::from_bytes(name));
        fs::write(&p, vec![b'x'; 100 * (i + 1)]).unwrap();
        fs::create_dir_all(s.path("t/odd-dirs").join(OsStr::from_bytes(name))).unwrap();
    }
    let export = s.path("outside/tree.json");
    // A symlink planted at FILE is replaced, never followed.
    let victim = s.path("outside/victim");
    fs::write(&victim, b"keep").unwrap();
    std::os::unix::fs::symlink(&victim, &export).unwrap();
    let before = s.snapshot("t");
    let (out, v) = scan_json(
        &s,
        &["--no-estimate", "--export", export.to_str().unwrap(), "t"],
    );
    util::assert_success(&out);
    assert_same("t", &before, &s.snapshot("t"));
    assert_eq!(
        fs::read(&victim).unwrap(),
        b"keep",
        "the symlink was followed"
    );
    assert!(!fs::symlink_metadata(&export).unwrap().is_symlink());
    let mine = parse_export(&export);
    assert_eq!(mine[3][0]["name"], "t");

    // ncdu reads it back and writes it out again: the same totals as scan --json and find.
    let again = s.path("outside/again.json");
    let ncdu = StdCommand::new("ncdu")
        .arg("-f")
        .arg(&export)
        .arg("-o")
        .arg(&again)
        .output()
        .unwrap();
    assert!(ncdu.status.success(), "ncdu -f: {}", stderr_of(&ncdu));
    let want = (
        u(&v, "files"),
        u(&v, "symlinks") + u(&v, "other"),
        u(&v, "dirs"),
        u(&v, "apparent_bytes"),
        u(&v, "allocated_bytes"),
    );
    assert_eq!(ncdu_totals(&mine), want, "the export: {v}");
    assert_eq!(
        ncdu_totals(&parse_export_any(&again)),
        want,
        "ncdu's reading: {v}"
    );
    assert_eq!(want.0, find_count(&s, "t", &["-type", "f"]));
    assert_eq!(want.2, find_count(&s, "t", &["-type", "d"]));
    assert_eq!(want.3, du(&s, "t", true));
    // Every odd name came back byte for byte (ncdu writes them as it read them).
    let raw = fs::read(&again).unwrap();
    for name in odd {
        let mut quoted = Vec::new();
        for &b in name {
            match b {
                b'"' => quoted.extend_from_slice(b"\\\""),
                b'\\' => quoted.extend_from_slice(b"\\\\"),
                b'\n' => quoted.extend_from_slice(b"\\n"),
                b'\t' => quoted.extend_from_slice(b"\\t"),
                0x07 => quoted.extend_from_slice(b"\\u0007"),
                _ => quoted.push(b),
            }
        }
        let count = raw.windows(quoted.len()).filter(|w| *w == quoted).count();
        assert_eq!(
            count,
            2,
            "{:?} in ncdu's output",
            String::from_utf8_lossy(name)
        );
    }

    // FILE inside the scanned tree: refused before the scan, nothing written.
    let inside = s.path("t/odd-dirs/export.json");
    let out = s
        .cmd(&["scan", "--export", inside.to_str().unwrap(), "t"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("inside the scanned tree") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!inside.exists());
    assert_same("t", &before, &s.snapshot("t"));
}

/// `parse_export` without the progname check (ncdu's own output).
fn parse_export_any(path: &Path) -> Value {
    let bytes = fs::read(path).unwrap();
    serde_json::from_str(&String::from_utf8_lossy(&bytes)).unwrap()
}

/// Without `--estimate` a scan writes nothing outside reclaim's cache directory: on a file
/// system the cache is not on, the estimate is not calibrated (said, with how to ask), and the
/// mount's top keeps its names and times; with `--estimate` it calibrates there.
#[test]
fn the_estimate_writes_outside_the_cache_only_when_asked() {
    util::require_root!();
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    for i in 0..30 {
        s.file(format!("vol/t/d{}/f{i}", i % 3), "x");
    }
    let top = metadata_snapshot(&s.path("vol"));
    let out = s
        .cmd(&["scan", "--json", "vol/t"])
        .env("TMPDIR", s.path("vol"))
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json_object(&out.stdout);
    let e = &v["estimate"];
    assert!(e["seconds"].is_null(), "{v}");
    assert_eq!(e["not_estimated"][0]["reason"], "not-asked", "{v}");
    assert!(
        e["unavailable"].as_str().unwrap().contains("--estimate"),
        "{v}"
    );
    assert_eq!(
        top,
        metadata_snapshot(&s.path("vol")),
        "the mount top changed"
    );
    let out = s
        .cmd(&["scan", "--estimate", "--json", "vol/t"])
        .env("TMPDIR", s.path("vol"))
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json_object(&out.stdout);
    assert!(v["estimate"]["seconds"].as_f64().is_some(), "{v}");
    assert_eq!(
        fs::read_dir(s.path("vol")).unwrap().count(),
        1,
        "left behind"
    );
}

/// `scan --top N` lists the largest files too (a 3 MiB file shows by name, not only in the
/// histogram), and every list cut at N says how many more it was chosen from.
#[test]
fn scan_lists_the_largest_files_and_says_how_many_more() {
    let s = scratch!();
    s.file("t/backup.tar", vec![1u8; 3 << 20]);
    for d in 0..5 {
        for f in 0..4 {
            s.file(format!("t/d{d}/f{f}"), vec![2u8; 8192 * (f + 1)]);
        }
    }
    let out = s
        .cmd(&["scan", "--no-estimate", "--top", "2", "--json", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json_object(&out.stdout);
    let largest = v["largest_files"].as_array().unwrap();
    assert_eq!(largest.len(), 2, "{v}");
    assert_eq!(largest[0]["path"], "t/backup.tar", "{v}");
    assert!(
        largest[0]["allocated_bytes"].as_u64().unwrap() >= 3 << 20,
        "{v}"
    );
    assert_eq!(v["listed_of"]["largest_files"], 21, "{v}");
    assert_eq!(v["listed_of"]["top_by_files"], 6, "{v}");
    let out = s
        .cmd(&["scan", "--no-estimate", "--top", "2", "t"])
        .output()
        .unwrap();
    let text = util::stdout_of(&out);
    assert!(
        text.contains("largest files") && text.contains("t/backup.tar"),
        "{text}"
    );
    assert!(
        text.contains("... and 19 more files (--top N lists more)"),
        "{text}"
    );
    assert!(text.contains("... and 4 more directories"), "{text}");
}
