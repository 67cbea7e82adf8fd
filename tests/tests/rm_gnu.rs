//! GNU rm's behaviour in `reclaim rm` (issue 13): the cases reclaim got wrong, GNU's prompting
//! options with reclaim's prefix, no recap off a terminal; and in `rm` mode, the golden
//! `--help` and a closed stdout. (The byte-for-byte comparison with GNU rm is gnu_rm.rs.)

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use assert_cmd::Command;
use predicates::prelude::*;

use crate::util::{self, scratch, Scratch};

/// A second uid for the permission cases (root bypasses them).
const USER: u32 = 61_013;

/// `reclaim rm ARGS` in `s`'s root as `USER` (paths are relative to the root).
fn rm_as_user(s: &Scratch, args: &[&str]) -> std::process::Output {
    util::reclaim_rm_as(s, USER, args)
}

/// Gives `rel` (and the scratch root's search permission) to `USER`.
fn give(s: &Scratch, rel: &str) {
    std::fs::set_permissions(s.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new("chown")
        .args(["-R", &format!("{USER}:{USER}")])
        .arg(s.path(rel))
        .output()
        .unwrap();
    assert!(out.status.success(), "chown: {out:?}");
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn force_ignores_a_path_below_a_file() {
    let s = scratch!();
    s.file("f", "x");
    s.rm(&["-f", "f/x"])
        .assert()
        .success()
        .stdout("")
        .stderr("");
    s.rm(&["f/x"])
        .assert()
        .code(1)
        .stderr("reclaim: cannot remove 'f/x': Not a directory\n");
    assert!(s.exists("f"));
}

#[test]
fn unreadable_empty_directories_are_removed() {
    util::require_root!();
    let s = scratch!();
    s.mkdir("w/d");
    s.mkdir("w/t/e");
    s.file("w/t/f", "x");
    s.mkdir("w/full");
    s.file("w/full/keep", "x");
    give(&s, "w");
    chmod(&s.path("w/d"), 0o000);
    chmod(&s.path("w/t/e"), 0o100);
    chmod(&s.path("w/full"), 0o300);
    let out = rm_as_user(&s, &["-rf", "w/d", "w/t", "w/full"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "reclaim: cannot remove 'w/full': Permission denied\n"
    );
    assert!(!s.exists("w/d") && !s.exists("w/t"));
    assert!(s.exists("w/full/keep"));
}

#[test]
fn a_search_only_parent_is_enough() {
    util::require_root!();
    let s = scratch!();
    s.file("p/f", "x");
    s.file("p/g", "x");
    give(&s, "p");
    chmod(&s.path("p"), 0o300);
    let out = rm_as_user(&s, &["p/f", "p/g"]);
    assert!(out.status.success(), "{out:?}");
    chmod(&s.path("p"), 0o755);
    assert!(!s.exists("p/f") && !s.exists("p/g"));
}

#[test]
fn a_symlink_to_root_is_an_ordinary_symlink() {
    let s = scratch!();
    s.symlink("l", "/");
    s.rm(&["l"]).assert().success().stderr("");
    assert!(std::fs::symlink_metadata(s.path("l")).is_err());
}

#[test]
fn verbose_paths_lose_extra_trailing_slashes() {
    let s = scratch!();
    s.file("a/x", "x");
    s.rm(&["-rv", "a///"])
        .assert()
        .success()
        .stdout("removed 'a/x'\nremoved directory 'a/'\n");
}

#[test]
fn verbose_lists_arguments_in_the_order_given() {
    let s = scratch!();
    for t in ["t1", "t2", "t3"] {
        s.file(format!("{t}/x"), "x");
    }
    s.rm(&["-rv", "t3", "t1", "t2"]).assert().success().stdout(
        "removed 't3/x'\nremoved directory 't3'\nremoved 't1/x'\nremoved directory 't1'\n\
         removed 't2/x'\nremoved directory 't2'\n",
    );
}

#[test]
fn a_repeated_argument_is_missing_the_second_time() {
    let s = scratch!();
    s.file("t/x", "x");
    s.rm(&["-r", "t", "t"])
        .assert()
        .code(1)
        .stderr("reclaim: cannot remove 't': No such file or directory\n");
    s.file("u/x", "x");
    s.rm(&["-rf", "u", "u"]).assert().success().stderr("");
}

#[test]
fn errors_are_said_once_off_a_terminal() {
    let s = scratch!();
    s.rm(&["m1", "m2"]).assert().code(1).stderr(
        "reclaim: cannot remove 'm1': No such file or directory\n\
         reclaim: cannot remove 'm2': No such file or directory\n",
    );
}

#[test]
fn interactive_asks_about_each_entry() {
    let s = scratch!();
    s.file("f", "x");
    s.file("g", "x");
    s.file("d/h", "x");
    s.rm(&["-i", "-r", "f", "g", "d"])
        .write_stdin("y\nn\ny\ny\n")
        .assert()
        .success()
        .stdout("")
        .stderr(
            "reclaim: remove regular file 'f'? reclaim: remove regular file 'g'? \
             reclaim: descend into directory 'd'? reclaim: remove regular file 'd/h'? \
             reclaim: remove directory 'd'? ",
        );
    assert!(!s.exists("f") && s.exists("g") && s.exists("d") && !s.exists("d/h"));
}

#[test]
fn the_last_of_force_and_interactive_counts() {
    let s = scratch!();
    s.file("f", "x");
    // -i last: asks, reads end of input: no.
    s.rm(&["-f", "-i", "f"])
        .write_stdin("")
        .assert()
        .success()
        .stderr("reclaim: remove regular file 'f'? ");
    assert!(s.exists("f"));
    s.rm(&["--interactive", "-f", "f", "missing"])
        .write_stdin("")
        .assert()
        .success()
        .stderr("");
    assert!(!s.exists("f"));
    s.file("g", "x");
    s.rm(&["-f", "--interactive=never", "g", "missing"])
        .assert()
        .success()
        .stderr("");
}

#[test]
fn prompt_once_asks_one_question() {
    let s = scratch!();
    s.file("t/x", "x");
    s.rm(&["-I", "-r", "t"])
        .write_stdin("n\n")
        .assert()
        .success()
        .stderr("reclaim: remove 1 argument recursively? ");
    assert!(s.exists("t/x"));
    s.rm(&["-I", "-r", "t"])
        .write_stdin("y\n")
        .assert()
        .success();
    assert!(!s.exists("t"));
    // Three files: no question.
    for f in ["a", "b", "c"] {
        s.file(f, "x");
    }
    s.rm(&["-I", "a", "b", "c"]).assert().success().stderr("");
}

#[test]
fn interactive_does_not_combine_with_background() {
    let s = scratch!();
    s.file("f", "x");
    s.rm(&["-i", "--background", "f"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-i asks about each entry"));
    s.rm(&["--interactive=maybe", "f"]).assert().code(2);
    assert!(s.exists("f"));
}

#[test]
fn preserve_root_all_refuses_a_mount_point() {
    util::require_root!();
    let s = scratch!();
    let _m = util::or_skip!(util::Volume::tmpfs(&s, "m"));
    s.file("m/x", "x");
    s.rm(&["-r", "--preserve-root=all", "m"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--preserve-root=all is in effect"));
    assert!(s.exists("m/x"));
}

/// `rm` mode: a link named `rm` in the scratch directory.
fn rm_mode(s: &Scratch) -> Command {
    let link = s.path("bin/rm");
    if !link.exists() {
        s.mkdir("bin");
        std::os::unix::fs::symlink(std::fs::canonicalize(util::reclaim_bin()).unwrap(), &link)
            .unwrap();
    }
    let mut c = Command::new(&link);
    c.current_dir(s.root()).env("LC_ALL", "C");
    c
}

#[test]
fn rm_mode_help_is_golden() {
    let s = scratch!();
    let out = rm_mode(&s).arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .replace(s.path("bin/rm").to_str().unwrap(), "rm")
        .replace(env!("CARGO_PKG_VERSION"), "VERSION");
    let golden = include_str!("../golden/rm-help.txt");
    assert_eq!(
        text, golden,
        "rm --help changed; if on purpose, update tests/golden/rm-help.txt"
    );
    let v = rm_mode(&s).arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&v.stdout).into_owned();
    assert!(v.starts_with("rm (reclaim) "), "{v}");
    // The licence said is Cargo.toml's, not a text the README does not hold.
    let licence = env!("CARGO_PKG_LICENSE").replace(" OR ", " or ");
    assert!(
        v.contains(&format!("License: {licence}, at your option.")),
        "{v}"
    );
}

#[test]
fn rm_mode_ends_quietly_on_a_closed_stdout() {
    let s = scratch!();
    for i in 0..2000 {
        s.file(format!("t/{i:04}"), "");
    }
    let link = rm_mode(&s); // creates bin/rm
    drop(link);
    // The reader is gone before the first write.
    let script = "{ sleep 0.3; \"$0\" -rv t; } | true; echo \"${PIPESTATUS[0]}\"";
    let out = std::process::Command::new("bash")
        .args(["-c", script])
        .arg(s.path("bin/rm"))
        .current_dir(s.root())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{out:?}");
    // Killed by SIGPIPE, as GNU rm is (128 + 13).
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "141");
}

#[test]
fn closed_stdout_ends_subcommands_quietly() {
    let reclaim = util::reclaim_bin();
    let out = std::process::Command::new("bash")
        .args(["-c", "{ sleep 0.3; \"$0\" completions bash; } | true"])
        .arg(OsStr::new(&reclaim))
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{out:?}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// `rm ARGS` in `rm` mode (the link `bin/rm`) in `s`'s root as `USER`, `input` on stdin.
fn rm_mode_as_user(s: &Scratch, args: &[&str], input: &str) -> std::process::Output {
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        s.assert_inside(&s.path(a));
    }
    drop(rm_mode(s)); // creates bin/rm
                      // setpriv finds `rm` in PATH, bin/ first: argv[0] is `rm`, as typed.
    let path = format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", s.path("bin").display());
    let mut child = std::process::Command::new("setpriv")
        .arg(format!("--reuid={USER}"))
        .arg(format!("--regid={USER}"))
        .args(["--clear-groups", "--", "rm"])
        .args(args)
        .current_dir(s.root())
        .env("PATH", path)
        .env("LC_ALL", "C")
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// coreutils 9.2+ (`tests/rm/empty-inacc.sh`): `rm -d` removes an empty directory its user
/// may not read (rmdir says whether it was empty), and `-i` asks about it as inaccessible;
/// as another uid, since root reads everything. (GNU 9.1 said "Directory not empty".)
#[test]
fn rm_d_removes_an_empty_directory_it_cannot_read() {
    util::require_root!();
    let s = scratch!();
    for d in ["w/a-r", "w/m0", "w/ask", "w/no", "w/full", "w/fulli"] {
        s.mkdir(d);
    }
    s.file("w/full/keep", "x");
    s.file("w/fulli/keep", "x");
    give(&s, "w");
    chmod(&s.path("w/a-r"), 0o333); // mkdir -m a-r
    for d in ["w/m0", "w/ask", "w/no", "w/full", "w/fulli"] {
        chmod(&s.path(d), 0o000); // mkdir -m0
    }
    let text = |o: &std::process::Output| {
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let out = rm_mode_as_user(&s, &["-d", "w/a-r", "w/m0"], "");
    assert_eq!(text(&out), (Some(0), String::new(), String::new()));
    assert!(!s.exists("w/a-r") && !s.exists("w/m0"));

    let out = rm_mode_as_user(&s, &["-div", "w/ask"], "y\n");
    assert_eq!(
        text(&out),
        (
            Some(0),
            "removed directory 'w/ask'\n".to_string(),
            "rm: attempt removal of inaccessible directory 'w/ask'? ".to_string()
        )
    );
    assert!(!s.exists("w/ask"));

    // Declined: it stays, and that is no failure.
    let out = rm_mode_as_user(&s, &["-di", "w/no"], "n\n");
    assert_eq!(
        text(&out),
        (
            Some(0),
            String::new(),
            "rm: attempt removal of inaccessible directory 'w/no'? ".to_string()
        )
    );
    assert!(s.exists("w/no"));

    // Not empty: rmdir says so; asked first with -i, as coreutils 9.2+ does.
    let out = rm_mode_as_user(&s, &["-d", "w/full"], "");
    assert_eq!(
        text(&out),
        (
            Some(1),
            String::new(),
            "rm: cannot remove 'w/full': Directory not empty\n".to_string()
        )
    );
    let out = rm_mode_as_user(&s, &["-di", "w/fulli"], "y\n");
    assert_eq!(
        text(&out),
        (
            Some(1),
            String::new(),
            "rm: attempt removal of inaccessible directory 'w/fulli'? \
             rm: cannot remove 'w/fulli': Directory not empty\n"
                .to_string()
        )
    );
    for d in ["w/no", "w/full", "w/fulli"] {
        chmod(&s.path(d), 0o755);
    }
    assert!(s.exists("w/full/keep") && s.exists("w/fulli/keep"));
}
