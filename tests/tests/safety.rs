//! Safety promises: symlinks and hard links never lead outside the target, `.`/`..`/`/` are
//! refused, mount points are not crossed, failures are reported and do not stop the rest.
//! Each test snapshots an "outside" directory next to the target and checks it afterwards.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::util::{
    self, assert_same, parse_report, run_in_readonly_world, scratch, stderr_of, Entry,
    ImmutableGuard, Scratch, Volume,
};

/// A target tree with some content.
fn target_tree(s: &Scratch, rel: &str) {
    for i in 0..5 {
        s.file(format!("{rel}/f{i}"), format!("target {i}"));
        s.file(format!("{rel}/sub/g{i}"), "g");
        s.file(format!("{rel}/sub/deep/h{i}"), "h");
    }
}

#[test]
fn never_follows_top_level_symlink() {
    let s = scratch!();
    s.make_outside("outside");
    let outside_abs = s.path("outside");
    s.symlink("abs_link", &outside_abs);
    s.symlink("rel_link", "outside");
    s.symlink("file_link", "outside/file0");
    s.symlink("plain_link", "outside");
    s.symlink("slash_link", "outside");
    let before = s.snapshot("outside");
    s.rm(&["-r", "abs_link"]).assert().success();
    s.rm(&["-rf", "rel_link"]).assert().success();
    s.rm(&["file_link"]).assert().success();
    // A symlink to a directory without -r is removed like a file, not "Is a directory".
    s.rm(&["plain_link"]).assert().success();
    for l in ["abs_link", "rel_link", "file_link", "plain_link"] {
        assert!(!s.exists(l), "{l} was not removed");
    }
    assert_same("outside", &before, &s.snapshot("outside"));
    // With a trailing slash GNU rm would empty the directory the link points to; reclaim
    // never follows a symlink, so it fails on that argument and touches nothing.
    s.rm(&["-r", "slash_link/"]).assert().code(1);
    s.rm(&["-rf", "slash_link/"]).assert().code(1);
    assert!(s.exists("slash_link"));
    assert_same("outside", &before, &s.snapshot("outside"));
}

#[test]
fn never_follows_symlinks_inside_the_tree() {
    let s = scratch!();
    s.make_outside("outside");
    let outside_abs = s.path("outside");
    target_tree(&s, "target");
    s.symlink("target/abs_dir", &outside_abs);
    s.symlink("target/abs_file", outside_abs.join("file1"));
    s.symlink("target/abs_sub", outside_abs.join("sub"));
    s.symlink("target/sub/rel_dir", "../../outside");
    s.symlink("target/sub/deep/rel_sub", "../../../outside/sub/");
    s.symlink("target/dot", ".");
    s.symlink("target/dotdot", "..");
    s.symlink("target/sub/scratch_root", s.root());
    s.symlink("target/dangling", "does/not/exist");
    s.symlink("target/self_loop", "self_loop");
    s.symlink("target/loop_a", "loop_b");
    s.symlink("target/loop_b", "loop_a");
    let before = s.snapshot("outside");
    let out = s.rm(&["-r", "--json", "target"]).output().unwrap();
    crate::util::assert_success(&out);
    assert!(!s.exists("target"));
    assert_same("outside", &before, &s.snapshot("outside"));
    s.assert_marker();
    let r = parse_report(&out.stdout);
    assert_eq!((r.files, r.dirs), (15 + 12, 3), "{r:?}");
}

#[test]
fn hard_link_to_outside_file_keeps_its_content() {
    let s = scratch!();
    s.make_outside("outside");
    target_tree(&s, "target");
    s.hardlink("target/hl", "outside/file3");
    s.hardlink("target/sub/hl2", "outside/sub/deep/precious");
    let nlink = |rel: &str| std::fs::symlink_metadata(s.path(rel)).unwrap().nlink();
    assert_eq!(nlink("outside/file3"), 2);
    let before = s.snapshot("outside");
    s.rm(&["-r", "target"]).assert().success();
    assert!(!s.exists("target"));
    assert_same("outside", &before, &s.snapshot("outside"));
    assert_eq!(nlink("outside/file3"), 1);
    assert_eq!(nlink("outside/sub/deep/precious"), 1);
}

/// Runs `rm ARGS` in `root/cwd` and checks it refused `.`/`..` and removed nothing at all.
/// Without -r, GNU rm says "Is a directory" / "Directory not empty" instead of the refusal
/// message; either is accepted there, as long as the argument is named.
fn assert_dot_refused(s: &Scratch, cwd: &str, args: &[&str], shown: &str) {
    let before = s.snapshot(".");
    let out = s.rm_in(cwd, args).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "rm {args:?} in {cwd}: stderr {stderr}"
    );
    let msg = format!("refusing to remove '.' or '..' directory: skipping '{shown}'");
    let recursive = args.iter().any(|a| a.starts_with("-r"));
    if recursive {
        assert!(
            stderr.contains(&msg),
            "rm {args:?} in {cwd}: expected {msg:?} in stderr:\n{stderr}"
        );
    } else {
        assert!(
            stderr.contains(&format!("'{shown}'")),
            "rm {args:?} in {cwd}: stderr:\n{stderr}"
        );
    }
    assert_same(
        &format!("scratch after rm {args:?} in {cwd}"),
        &before,
        &s.snapshot("."),
    );
}

#[test]
fn refuses_dot_and_dotdot() {
    let s = scratch!();
    s.make_outside("outside");
    target_tree(&s, "target");
    s.mkdir("target/empty");
    for flags in [&["-r"][..], &["-rf"], &["-d"], &[], &["-r", "--dry-run"]] {
        for (cwd, arg) in [
            ("target", "."),
            ("target", "empty/."),
            ("target/empty", "."),
            ("target/sub", ".."),
            ("target", "sub/."),
            (".", "target/.."),
            ("target", "sub/deep/.."),
        ] {
            let mut args: Vec<&str> = flags.to_vec();
            args.push(arg);
            assert_dot_refused(&s, cwd, &args, arg);
        }
    }
}

#[test]
fn refuses_dot_and_dotdot_with_trailing_slash() {
    let s = scratch!();
    target_tree(&s, "target");
    for (cwd, arg) in [
        ("target", "./"),
        ("target/sub", "../"),
        ("target", "sub/./"),
        (".", "target/../"),
    ] {
        assert_dot_refused(&s, cwd, &["-r", arg], arg);
    }
}

#[test]
fn refuses_dot_but_removes_other_arguments() {
    let s = scratch!();
    target_tree(&s, "target");
    s.file("target/plain", "x");
    let out = s
        .rm_in("target", &["-r", ".", "sub", "plain"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("refusing to remove '.' or '..' directory: skipping '.'"));
    assert!(!s.exists("target/sub"));
    assert!(!s.exists("target/plain"));
    assert!(s.exists("target/f0"));
}

/// Checks the output of a refused call naming `arg`: exit 1, the argument named on stderr, and
/// no sign that anything was attempted (in the read-only world any removal fails with EROFS).
fn assert_root_refused(out: &std::process::Output, arg: &str) {
    let stderr = stderr_of(out);
    assert_eq!(out.status.code(), Some(1), "{arg}: stderr:\n{stderr}");
    assert!(
        stderr.contains(arg),
        "{arg}: stderr does not name it:\n{stderr}"
    );
    assert!(
        !stderr.contains("Read-only file system"),
        "{arg}: tried to remove something under /:\n{stderr}"
    );
    assert!(
        !stderr.contains("mount point"),
        "{arg}: walked into / instead of refusing:\n{stderr}"
    );
}

#[test]
fn refuses_root_dry_run() {
    // Only ever with --dry-run, and in a namespace where every mount but the scratch dir is
    // read-only: a broken refusal can remove nothing.
    let s = scratch!();
    for arg in ["/", "//", "///", "/tmp/..", "/."] {
        for flags in [&["-r", "--dry-run"][..], &["-rf", "--dry-run", "--json"]] {
            let mut args: Vec<&str> = vec!["rm"];
            args.extend_from_slice(flags);
            args.push(arg);
            let out = util::or_skip!(run_in_readonly_world(&s, ".", &args));
            assert_root_refused(&out, arg);
            if flags.contains(&"--json") {
                let r = parse_report(&out.stdout);
                assert_eq!((r.files, r.dirs), (0, 0), "{arg}: {r:?}");
                assert!(r.errors.iter().any(|e| e.path == arg), "{arg}: {r:?}");
            }
        }
    }
}

#[test]
fn refuses_root_by_inode() {
    // A symlink to / inside the scratch dir, given with and without a trailing slash. Run for
    // real, but in a namespace where everything except the scratch dir is read-only.
    let s = scratch!();
    s.symlink("tmp/link", "/");
    s.symlink("tmp/link2", "../tmp/link");
    s.make_outside("outside");
    for arg in ["tmp/link/", "tmp/link2/", "tmp/link/.", "tmp/link/tmp/.."] {
        for flags in [
            &["-r"][..],
            &["-rf", "--cross-mounts"],
            &["-r", "--dry-run"],
        ] {
            let before = s.snapshot(".");
            let mut args: Vec<&str> = vec!["rm"];
            args.extend_from_slice(flags);
            args.push(arg);
            let out = util::or_skip!(run_in_readonly_world(&s, ".", &args));
            assert_root_refused(&out, arg);
            assert_same(
                &format!("scratch after rm {flags:?} {arg}"),
                &before,
                &s.snapshot("."),
            );
        }
    }
    // Without the slash it is only a link, removed as one (GNU rm does the same): here the
    // read-only world refuses that unlink, which shows it was the link, not `/`, that was
    // worked on.
    for flags in [&["-r"][..], &["-rf", "--cross-mounts"]] {
        let mut args: Vec<&str> = vec!["rm"];
        args.extend_from_slice(flags);
        args.push("tmp/link");
        let out = util::or_skip!(run_in_readonly_world(&s, ".", &args));
        assert_eq!(
            stderr_of(&out),
            "reclaim: cannot remove 'tmp/link': Read-only file system\n",
            "{flags:?}"
        );
    }
}

/// Whether stderr reports a skipped mount point ("skipped ... mount point").
fn reports_skipped_mount(stderr: &str) -> bool {
    stderr
        .lines()
        .any(|l| l.contains("skipped") && l.contains("mount point"))
}

#[test]
fn skips_mount_point_inside_tree() {
    util::require_root!();
    let s = scratch!();
    s.make_outside("outside");
    target_tree(&s, "target");
    let _mount = util::or_skip!(Volume::tmpfs(&s, "target/sub/mnt"));
    s.file("target/sub/mnt/on_tmpfs", "keep");
    s.file("target/sub/mnt/d/deeper", "keep");
    let outside = s.snapshot("outside");
    let mnt = s.snapshot("target/sub/mnt");
    let out = s.rm(&["-r", "--json", "target"]).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(reports_skipped_mount(&stderr), "stderr:\n{stderr}");
    assert!(stderr.contains("target/sub/mnt"), "stderr:\n{stderr}");
    assert_same("tmpfs contents", &mnt, &s.snapshot("target/sub/mnt"));
    assert_same("outside", &outside, &s.snapshot("outside"));
    // Everything but the path to the mount point is gone.
    let left: Vec<PathBuf> = s
        .snapshot("target")
        .into_keys()
        .filter(|p| !p.starts_with("sub/mnt"))
        .collect();
    assert_eq!(left, vec![PathBuf::from(""), PathBuf::from("sub")]);
    let r = parse_report(&out.stdout);
    assert!(
        r.skipped_mounts
            .iter()
            .any(|m| m.ends_with("target/sub/mnt")),
        "{r:?}"
    );
    assert_eq!((r.files, r.dirs), (15, 1), "{r:?}");
}

#[test]
fn skips_bind_mount_of_the_same_file_system() {
    // A bind mount of a directory of the same file system has the same st_dev: detecting it
    // needs the mount id, not just the device.
    util::require_root!();
    let s = scratch!();
    s.make_outside("outside");
    target_tree(&s, "target");
    let _mount = util::or_skip!(Volume::bind(&s, "outside", "target/sub/deep/bound", false));
    let outside = s.snapshot("outside");
    let out = s.rm(&["-r", "target"]).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(reports_skipped_mount(&stderr), "stderr:\n{stderr}");
    assert_same(
        "outside (bind-mounted into the target)",
        &outside,
        &s.snapshot("outside"),
    );
    assert!(!s.exists("target/f0"));
    assert!(!s.exists("target/sub/g0"));
    assert!(!s.exists("target/sub/deep/h0"));
}

#[test]
fn cross_mounts_enters_mount_points() {
    util::require_root!();
    let s = scratch!();
    s.make_outside("outside");
    target_tree(&s, "target");
    let _mount = util::or_skip!(Volume::tmpfs(&s, "target/sub/mnt"));
    s.file("target/sub/mnt/on_tmpfs", "gone");
    s.file("target/sub/mnt/d/deeper", "gone");
    let outside = s.snapshot("outside");
    let out = s
        .rm(&["-r", "--cross-mounts", "--json", "target"])
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(stderr.contains("target/sub/mnt"), "stderr:\n{stderr}");
    assert!(!reports_skipped_mount(&stderr), "stderr:\n{stderr}");
    // The tmpfs is emptied; its mount point (EBUSY) and the path to it stay.
    let left: Vec<PathBuf> = s.snapshot("target").into_keys().collect();
    assert_eq!(
        left,
        vec![
            PathBuf::from(""),
            PathBuf::from("sub"),
            PathBuf::from("sub/mnt")
        ]
    );
    assert_same("outside", &outside, &s.snapshot("outside"));
    let r = parse_report(&out.stdout);
    assert!(r.skipped_mounts.is_empty(), "{r:?}");
    assert!(
        r.errors.iter().any(|e| e.path.ends_with("target/sub/mnt")),
        "{r:?}"
    );
    assert_eq!((r.files, r.dirs), (15 + 2, 2), "{r:?}");
}

#[test]
fn reports_immutable_file_and_removes_the_rest() {
    util::require_root!();
    let s = scratch!();
    s.make_outside("outside");
    target_tree(&s, "target");
    s.file("target/sub/file", "stuck");
    let _guard = util::or_skip!(ImmutableGuard::new(&s, "target/sub/file"));
    let outside = s.snapshot("outside");
    let out = s.rm(&["-r", "--json", "target"]).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(stderr.contains("target/sub/file"), "stderr:\n{stderr}");
    assert!(
        stderr.contains("Operation not permitted"),
        "stderr:\n{stderr}"
    );
    let left: Vec<PathBuf> = s.snapshot("target").into_keys().collect();
    assert_eq!(
        left,
        vec![
            PathBuf::from(""),
            PathBuf::from("sub"),
            PathBuf::from("sub/file")
        ]
    );
    assert_same("outside", &outside, &s.snapshot("outside"));
    let r = parse_report(&out.stdout);
    assert!(
        r.errors.iter().any(|e| e.path == "target/sub/file"),
        "{r:?}"
    );
    assert_eq!(r.files, 15, "{r:?}");
}

#[test]
fn reports_immutable_directory_and_removes_the_rest() {
    util::require_root!();
    let s = scratch!();
    target_tree(&s, "target");
    s.file("target/sub/locked/a", "a");
    s.file("target/sub/locked/b", "b");
    let _guard = util::or_skip!(ImmutableGuard::new(&s, "target/sub/locked"));
    let out = s.rm(&["-r", "target"]).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(stderr.contains("target/sub/locked/a"), "stderr:\n{stderr}");
    assert!(stderr.contains("target/sub/locked/b"), "stderr:\n{stderr}");
    let left: Vec<PathBuf> = s.snapshot("target").into_keys().collect();
    assert_eq!(
        left,
        ["", "sub", "sub/locked", "sub/locked/a", "sub/locked/b"].map(PathBuf::from)
    );
}

#[test]
fn reports_read_only_mount_errors_with_cross_mounts() {
    util::require_root!();
    let s = scratch!();
    target_tree(&s, "target");
    s.file("ro_src/x", "x");
    let _mount = util::or_skip!(Volume::bind(&s, "ro_src", "target/ro", true));
    let before = s.snapshot("ro_src");
    let out = s.rm(&["-r", "--cross-mounts", "target"]).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(
        stderr.contains("target/ro/x") && stderr.contains("Read-only file system"),
        "stderr:\n{stderr}"
    );
    assert_same("read-only bind source", &before, &s.snapshot("ro_src"));
    assert!(!s.exists("target/f0") && !s.exists("target/sub"));
}

#[test]
fn failures_are_said_once_each_off_a_terminal() {
    let s = scratch!();
    target_tree(&s, "target");
    let out = s
        .rm(&["-r", "missing1", "target", "missing2"])
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(!s.exists("target"));
    // One line per failure, in the order of the arguments, and no recap (scripts and GNU's
    // tests see every extra line; the recap is for a terminal, where lines scroll away).
    assert_eq!(
        stderr,
        "reclaim: cannot remove 'missing1': No such file or directory\n\
         reclaim: cannot remove 'missing2': No such file or directory\n"
    );
}

#[test]
fn outside_is_untouched_by_every_kind_of_entry() {
    // Everything a tree can hold, next to an outside dir that shares inodes and names with it.
    let s = scratch!();
    s.make_outside("outside");
    s.make_outside("target");
    s.hardlink("target/hard_out", "outside/sub/other");
    s.hardlink("outside/hard_in", "target/file2");
    s.symlink("target/out", "../outside");
    s.socket("target/sock");
    let before = s.snapshot("outside");
    s.rm(&["-r", "target"]).assert().success();
    assert!(!s.exists("target"));
    let after = s.snapshot("outside");
    assert_same("outside", &before, &after);
    assert!(matches!(
        after[&PathBuf::from("hard_in")],
        Entry::File { .. }
    ));
}
