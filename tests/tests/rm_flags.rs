//! `reclaim rm` flags, messages and exit codes (GNU rm semantics).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::util::{self, os, parse_report, scratch, Entry, Scratch};

/// A small tree under `root/rel`: files, nested dirs, an empty dir, a symlink.
fn small_tree(s: &Scratch, rel: &str) {
    s.file(format!("{rel}/a.txt"), "a\n");
    s.file(format!("{rel}/b.bin"), vec![7u8; 10_000]);
    s.file(format!("{rel}/sub/c"), "c\n");
    s.file(format!("{rel}/sub/deeper/d"), "d\n");
    s.mkdir(format!("{rel}/empty"));
    s.symlink(format!("{rel}/sub/link"), "../a.txt");
}

#[test]
fn removes_a_file_without_flags() {
    let s = scratch!();
    s.file("f", "x");
    s.rm(&["f"]).assert().success().stdout("").stderr("");
    assert!(!s.exists("f"));
}

#[test]
fn directory_without_recursive_is_an_error() {
    let s = scratch!();
    small_tree(&s, "d");
    let before = s.snapshot("d");
    s.rm(&["d"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot remove 'd': Is a directory",
        ));
    util::assert_same("d", &before, &s.snapshot("d"));
}

#[test]
fn recursive_flag_spellings_remove_a_tree() {
    for flag in ["-r", "-R", "--recursive"] {
        let s = scratch!();
        small_tree(&s, "t");
        s.rm(&[flag, "t"]).assert().success().stdout("").stderr("");
        assert!(!s.exists("t"), "{flag} left the tree");
    }
}

#[test]
fn recursive_removes_a_plain_file_too() {
    let s = scratch!();
    s.file("f", "x");
    s.rm(&["-r", "f"]).assert().success();
    assert!(!s.exists("f"));
}

#[test]
fn trailing_slash_on_a_directory_is_accepted() {
    let s = scratch!();
    small_tree(&s, "t");
    s.rm(&["-r", "t/"]).assert().success();
    assert!(!s.exists("t"));
}

#[test]
fn dir_flag_removes_empty_directory() {
    let s = scratch!();
    s.mkdir("empty");
    s.file("f", "x");
    s.rm(&["-d", "empty", "f"]).assert().success().stderr("");
    assert!(!s.exists("empty"));
    assert!(!s.exists("f"), "-d removes files as well");
}

#[test]
fn dir_flag_refuses_non_empty_directory() {
    let s = scratch!();
    small_tree(&s, "full");
    let before = s.snapshot("full");
    s.rm(&["-d", "full"]).assert().code(1).stderr(
        predicate::str::contains("full").and(predicate::str::contains("Directory not empty")),
    );
    util::assert_same("full", &before, &s.snapshot("full"));
}

#[test]
fn force_ignores_missing_paths() {
    let s = scratch!();
    s.rm(&["-f", "missing"])
        .assert()
        .success()
        .stdout("")
        .stderr("");
    small_tree(&s, "t");
    s.rm(&["-rf", "missing", "t", "also/missing"])
        .assert()
        .success()
        .stderr("");
    assert!(!s.exists("t"));
}

#[test]
fn force_without_paths_succeeds() {
    let s = scratch!();
    s.rm(&["-f"]).assert().success().stdout("");
    s.rm(&["-rf"]).assert().success().stdout("");
}

#[test]
fn no_paths_is_a_usage_error() {
    let s = scratch!();
    s.file("f", "x");
    s.rm::<&str>(&[]).assert().code(2);
    s.rm(&["-r"]).assert().code(2);
    assert!(s.exists("f"));
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let s = scratch!();
    s.file("f", "x");
    s.rm(&["--no-such-flag", "f"]).assert().code(2);
    s.rm(&["-r", "-Z", "f"]).assert().code(2);
    assert!(s.exists("f"), "a usage error must remove nothing");
    util::reclaim().arg("no-such-subcommand").assert().code(2);
}

#[test]
fn missing_path_fails_but_others_are_removed() {
    let s = scratch!();
    small_tree(&s, "t");
    s.file("f", "x");
    s.rm(&["-r", "missing", "t", "f"]).assert().code(1).stderr(
        predicate::str::contains("cannot remove 'missing'")
            .and(predicate::str::contains("No such file or directory")),
    );
    assert!(!s.exists("t"));
    assert!(!s.exists("f"));
}

#[test]
fn double_dash_allows_names_starting_with_dash() {
    let s = scratch!();
    s.file("-f", "x");
    s.file("-rf", "x");
    small_tree(&s, "-dir");
    s.file("keep", "x");
    s.rm(&["-r", "--", "-f", "-rf", "-dir"]).assert().success();
    assert!(!s.exists("-f"));
    assert!(!s.exists("-rf"));
    assert!(!s.exists("-dir"));
    assert!(s.exists("keep"));
}

/// Expected `-v` lines for removing the tree at `root/rel` given as `arg`, keyed by line,
/// with the relative path of the entry as value.
fn expected_verbose(s: &Scratch, rel: &str, arg: &str) -> HashMap<String, PathBuf> {
    let mut out = HashMap::new();
    for (p, e) in s.snapshot(rel) {
        let shown = if p.as_os_str().is_empty() {
            arg.to_string()
        } else {
            format!("{arg}/{}", p.display())
        };
        let line = match e {
            Entry::Dir { .. } => format!("removed directory '{shown}'"),
            _ => format!("removed '{shown}'"),
        };
        out.insert(line, p);
    }
    out
}

#[test]
fn verbose_prints_one_line_per_removed_entry() {
    let s = scratch!();
    small_tree(&s, "t");
    s.fifo("t/sub/fifo");
    s.file("f", "x");
    let expected = expected_verbose(&s, "t", "t");
    let out = s.rm(&["-rv", "t", "f"]).output().unwrap();
    util::assert_success(&out);
    let stdout = util::stdout_of(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    let mut want: Vec<String> = expected.keys().cloned().collect();
    want.push("removed 'f'".to_string());
    let mut got: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "verbose output:\n{stdout}");
    // A directory is reported after everything inside it.
    let position: HashMap<&str, usize> = lines.iter().enumerate().map(|(i, l)| (*l, i)).collect();
    for (line, rel) in &expected {
        for (other, orel) in &expected {
            if orel != rel && orel.starts_with(rel) {
                assert!(
                    position[other.as_str()] < position[line.as_str()],
                    "{other:?} printed after {line:?}"
                );
            }
        }
    }
}

#[test]
fn verbose_names_paths_as_given() {
    let s = scratch!();
    s.file("d/sub/x", "x");
    let out = s.rm(&["-rv", "./d/sub"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = util::stdout_of(&out);
    assert_eq!(stdout, "removed './d/sub/x'\nremoved directory './d/sub'\n");
    assert!(s.exists("d"));
}

#[test]
fn dry_run_removes_nothing() {
    let s = scratch!();
    small_tree(&s, "t");
    s.file("f", "x");
    let before = s.snapshot(".");
    s.rm(&["-r", "--dry-run", "t", "f"]).assert().success();
    util::assert_same("scratch", &before, &s.snapshot("."));
}

#[test]
fn dry_run_json_reports_what_would_go() {
    let s = scratch!();
    small_tree(&s, "t");
    s.fifo("t/fifo");
    let (files, dirs) = util::count_entries(&s.path("t"));
    let (min_bytes, max_bytes) = util::allocated_bytes(&s.path("t"));
    let before = s.snapshot(".");
    let out = s.rm(&["-r", "--dry-run", "--json", "t"]).output().unwrap();
    util::assert_success(&out);
    util::assert_same("scratch", &before, &s.snapshot("."));
    let dry = parse_report(&out.stdout);
    assert!(dry.dry_run);
    assert_eq!((dry.files, dry.dirs), (files, dirs), "{dry:?}");
    assert!(
        (min_bytes..=max_bytes).contains(&dry.bytes_freed),
        "bytes {} not in st_blocks*512 range {min_bytes}..={max_bytes}",
        dry.bytes_freed
    );
    assert!(dry.errors.is_empty());

    // The real run removes what the dry run announced.
    let out = s.rm(&["-r", "--json", "t"]).output().unwrap();
    util::assert_success(&out);
    let real = parse_report(&out.stdout);
    assert!(!real.dry_run);
    // A real run's bytes come from the file system's free-space counter (other tests write
    // meanwhile), so only the counts must match exactly; see bytes_freed_is_the_space_given_back.
    assert_eq!((real.files, real.dirs), (dry.files, dry.dirs));
    assert!(!s.exists("t"));
}

#[test]
fn bytes_freed_is_the_space_given_back() {
    let s = scratch!();
    s.mkdir("t/sub");
    let big = vec![7u8; 64 << 20];
    std::fs::write(s.path("t/sub/big"), &big).unwrap();
    let out = s.rm(&["-r", "--json", "t"]).output().unwrap();
    util::assert_success(&out);
    let r = parse_report(&out.stdout);
    assert!(
        r.bytes_freed >= 32 << 20,
        "64 MiB removed but bytes_freed = {}",
        r.bytes_freed
    );
}

#[test]
fn json_is_one_object_with_documented_fields() {
    let s = scratch!();
    small_tree(&s, "t");
    let out = s.rm(&["-r", "--json", "t"]).output().unwrap();
    util::assert_success(&out);
    let text = util::stdout_of(&out);
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON value");
    let obj = v.as_object().expect("an object");
    for key in ["files", "dirs", "bytes_freed"] {
        assert!(obj[key].is_u64(), "{key} is not a u64: {text}");
    }
    for key in ["elapsed_s", "files_per_s"] {
        assert!(obj[key].is_number(), "{key} is not a number: {text}");
    }
    assert!(obj["errors"].is_array());
    assert!(obj["skipped_mounts"].is_array());
    assert!(obj["dry_run"].is_boolean());
    let r = parse_report(&out.stdout);
    assert_eq!((r.files, r.dirs), (5, 4), "{r:?}");
    assert!(r.elapsed_s >= 0.0 && r.files_per_s >= 0.0, "{r:?}");
    assert!(r.errors.is_empty() && r.skipped_mounts.is_empty() && !r.dry_run);
}

#[test]
fn json_counts_every_non_directory_as_a_file() {
    let s = scratch!();
    s.file("t/f", "x");
    s.symlink("t/link", "f");
    s.symlink("t/dangling", "nowhere");
    s.fifo("t/fifo");
    s.socket("t/sock");
    s.mkdir("t/d/e");
    let out = s.rm(&["-r", "--json", "t"]).output().unwrap();
    util::assert_success(&out);
    let r = parse_report(&out.stdout);
    assert_eq!((r.files, r.dirs), (5, 3), "{r:?}");
    assert!(!s.exists("t"));
}

#[test]
fn json_lists_failed_paths() {
    let s = scratch!();
    small_tree(&s, "t");
    let out = s.rm(&["-r", "--json", "missing", "t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r = parse_report(&out.stdout);
    assert_eq!(r.errors.len(), 1, "{r:?}");
    assert_eq!(r.errors[0].path, "missing");
    assert!(!r.errors[0].error.is_empty());
    assert_eq!((r.files, r.dirs), (5, 4), "{r:?}");
    assert!(!s.exists("t"));
}

#[test]
fn json_with_force_reports_no_error_for_missing_paths() {
    let s = scratch!();
    let out = s.rm(&["-rf", "--json", "missing"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let r = parse_report(&out.stdout);
    assert!(r.errors.is_empty(), "{r:?}");
    assert_eq!((r.files, r.dirs), (0, 0));
}

#[test]
fn thread_counts_give_the_same_result() {
    let mut seen = Vec::new();
    for threads in ["1", "2", "4", "16"] {
        let s = scratch!();
        for d in 0..8 {
            for f in 0..20 {
                s.file(format!("t/d{d}/sub{}/f{f}", f % 3), "x");
            }
        }
        let out = s
            .rm(&["-r", "--json", "--threads", threads, "t"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "threads {threads}: {}",
            util::stderr_of(&out)
        );
        let r = parse_report(&out.stdout);
        assert!(!s.exists("t"), "threads {threads} left the tree");
        seen.push((r.files, r.dirs));
    }
    assert!(seen.iter().all(|c| *c == (160, 1 + 8 + 24)), "{seen:?}");
}

#[test]
fn small_fd_budget_still_removes_everything() {
    for budget in ["2", "3"] {
        let s = scratch!();
        let mut rel = String::from("t");
        for level in 0..40 {
            rel.push_str(&format!("/d{level}"));
            s.file(format!("{rel}/f"), "x");
            s.file(format!("{rel}-side/g"), "y");
        }
        s.rm(&["-r", "--threads", "2", "--fd-budget", budget, "t"])
            .assert()
            .success();
        assert!(!s.exists("t"), "fd budget {budget} left the tree");
    }
}

#[test]
fn removes_special_files_without_opening_them() {
    let s = scratch!();
    s.fifo("fifo");
    s.socket("sock");
    s.symlink("dangling", "nowhere");
    s.symlink("loop", "loop");
    // A fifo opened for reading would block forever; the command timeout catches that.
    s.rm(&["fifo", "sock", "dangling", "loop"])
        .assert()
        .success();
    for n in ["fifo", "sock", "dangling", "loop"] {
        assert!(!s.exists(n), "{n} left");
    }
}

/// Names that are not UTF-8, hold newlines, spaces, globs, backslashes, leading dashes.
fn odd_names() -> Vec<Vec<u8>> {
    vec![
        b"\xff".to_vec(),
        b"caf\xe9".to_vec(),
        b"new\nline".to_vec(),
        b"\n".to_vec(),
        b" spaced name ".to_vec(),
        b"*?[glob]".to_vec(),
        b"back\\slash".to_vec(),
        b"-dash".to_vec(),
        b"'quote\"".to_vec(),
        b"\x01\x7f".to_vec(),
        "ünïcødé-名前".as_bytes().to_vec(),
        vec![b'n'; 255],
    ]
}

#[test]
fn removes_non_utf8_and_newline_names() {
    let s = scratch!();
    let names = odd_names();
    for (i, n) in names.iter().enumerate() {
        let name = Path::new(os(n));
        s.file(Path::new("t").join(name), format!("{i}"));
        s.file(Path::new("t/dirs").join(name).join(name), "x");
        s.symlink(Path::new("t/links").join(name), name);
    }
    s.rm(&["-r", "t"]).assert().success();
    assert!(!s.exists("t"));
}

#[test]
fn accepts_non_utf8_arguments() {
    let s = scratch!();
    let dir = os(b"d\xff\nx");
    let file = os(b"f\xfe");
    s.file(Path::new(dir).join("inner"), "x");
    s.file(file, "y");
    let out = s.rm(&[os(b"-r"), dir, file]).output().unwrap();
    util::assert_success(&out);
    assert!(!s.exists(dir));
    assert!(!s.exists(file));
}

#[test]
fn bench_quick_leaves_its_dir_as_it_was() {
    let s = scratch!();
    s.file("bench/keep", "keep me\n");
    s.file("bench/sub/also", "me too\n");
    let before = s.snapshot("bench");
    let out = s
        .cmd(&["bench", "--quick", "--dir", "bench", "--files", "2000"])
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    let stdout = util::stdout_of(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        util::stderr_of(&out)
    );
    assert!(stdout.contains("rm -rf"), "no rm -rf timing:\n{stdout}");
    assert!(stdout.contains("reclaim"), "no reclaim timing:\n{stdout}");
    util::assert_same("bench dir", &before, &s.snapshot("bench"));
}

#[test]
fn json_stdout_stays_one_object_with_verbose() {
    // `-v --json` may be refused as a usage error (removing nothing), or accepted with the
    // verbose lines kept off stdout: stdout must stay exactly one JSON object.
    let s = scratch!();
    small_tree(&s, "t");
    let out = s.rm(&["-rv", "--json", "t"]).output().unwrap();
    match out.status.code() {
        Some(2) => assert!(s.exists("t/sub/c"), "a usage error removed something"),
        Some(0) => {
            let r = parse_report(&out.stdout);
            assert_eq!((r.files, r.dirs), (5, 4), "{r:?}");
            assert!(!s.exists("t"));
        }
        other => panic!("exit {other:?}: {}", util::stderr_of(&out)),
    }
}

#[test]
fn empty_path_argument_is_a_missing_path() {
    // GNU rm: `rm ''` fails with ENOENT (exit 1), `rm -rf ''` (an unset variable in a script)
    // succeeds silently.
    let s = scratch!();
    s.file("f", "x");
    s.rm(&["-rf", ""]).assert().success().stderr("");
    s.rm(&["-f", "", "f"]).assert().success();
    assert!(!s.exists("f"));
    s.rm(&["-r", ""])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot remove '': No such file or directory",
        ));
}

/// `--batch-size` (once a hidden knob for measurements) is no option: refused as unknown, and
/// never offered by clap's "a similar argument exists" (issue 26).
#[test]
fn batch_size_is_no_option() {
    let s = scratch!();
    s.file("f", "x");
    for args in [
        &["--batch-size", "5", "f"][..],
        &["--batch-siz", "5", "f"][..],
    ] {
        let out = s.rm(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = util::stderr_of(&out);
        assert!(err.contains("unexpected argument"), "{err}");
        assert!(!err.contains("exists: '--batch-size'"), "{err}");
    }
    assert!(s.exists("f"));
}

/// The man pages tell what the issue found missing: the signal exit statuses, the `rm` link's
/// real statuses, every `[rm]` key under FILES, and what `reclaim man` and its DIR are.
#[test]
fn man_pages_say_exit_statuses_files_and_dir() {
    let s = scratch!();
    s.mkdir("man");
    util::assert_success(&s.cmd(&["man", "man"]).output().unwrap());
    let page = |n: &str| std::fs::read_to_string(s.path(format!("man/{n}"))).unwrap();
    let top = page("reclaim.1");
    assert!(top.contains("128+N stopped by signal N"), "{top}");
    for key in [
        "mode",
        "max_latency",
        "rate",
        "iops",
        "fast",
        "durable",
        "grace",
    ] {
        assert!(
            top.contains(&format!(" {key},")) || top.contains(&format!(" {key})")),
            "FILES lacks [rm] {key}"
        );
    }
    let rm = page("reclaim-rm.1");
    assert!(
        !rm.contains("0 or 1"),
        "reclaim-rm.1 still says the rm link exits 0 or 1"
    );
    assert!(rm.contains("128+N when stopped by signal N"), "{rm}");
    let man = page("reclaim-man.1");
    assert!(
        man.contains("reclaim.1 and reclaim\\-SUBCOMMAND.1"),
        "{man}"
    );
    assert!(
        man.contains("An existing directory to write the pages into"),
        "{man}"
    );
    let help = util::reclaim().arg("--help").output().unwrap();
    let help = util::stdout_of(&help)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("128+N stopped by signal N"), "{help}");
}
