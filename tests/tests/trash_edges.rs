//! Rough edges of the trash a newcomer hit (issue 26): a tree with an immutable file inside,
//! a full disk that cannot wait out a grace window (`reap --now`), a reaper left waiting for
//! an emptied trash, the first `status` after `--background`, `--wait`'s account and progress
//! of a tree, and `status --brief`.
//!
//! As in trash.rs: volumes mounted in the test's scratch directory (root only; skipped
//! otherwise), `RECLAIM_NO_SPAWN=1` unless the test is about the detached reaper itself.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::reap::{hidden, rm_ok, run_ns};
use crate::util::{
    self, scratch, trash_entries, ImmutableGuard, ReaperSettle, Scratch, Volume, NO_SPAWN,
};

/// This process's trash on `root/vol`.
fn trash(s: &Scratch) -> PathBuf {
    util::trash_dir(&s.path("vol"))
}

/// `dirs` directories of `per_dir` files each under `root/rel` (and `rel` itself).
fn wide_tree(s: &Scratch, rel: &str, dirs: usize, per_dir: usize) {
    for d in 0..dirs {
        for f in 0..per_dir {
            s.file(format!("{rel}/d{d}/f{f}"), "");
        }
    }
}

/// What a terminal of 120 columns shows while the shell `line` runs in the scratch root
/// (script(1) gives the pty); `spawn`: detached reapers may start. Err: no script(1).
fn on_a_terminal(s: &Scratch, line: &str, spawn: bool) -> Result<String, String> {
    let typescript = s.path("typescript");
    let bin = fs::canonicalize(util::reclaim_bin()).unwrap();
    let cmd = format!(
        "stty cols 120 rows 40; reclaim() {{ '{}' \"$@\"; }}; {line}",
        bin.display()
    );
    let mut c = std::process::Command::new("script");
    c.args(["-qfec", &cmd])
        .arg(&typescript)
        .current_dir(s.root())
        .env("TERM", "xterm")
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .env("XDG_STATE_HOME", util::state_home(s))
        .stdin(std::process::Stdio::null());
    if !spawn {
        c.env(NO_SPAWN, "1");
    }
    let out = c
        .output()
        .map_err(|e| format!("cannot run script(1): {e}"))?;
    assert!(out.status.success(), "{line}: {out:?}");
    Ok(String::from_utf8_lossy(&fs::read(&typescript).unwrap()).into_owned())
}

/// Waits up to `limit` for `f` to hold.
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// The pid in the trash's `reaper.json`, if any.
fn state_pid(t: &Path) -> Option<u32> {
    let v: serde_json::Value =
        serde_json::from_slice(&fs::read(t.join("reaper.json")).ok()?).ok()?;
    v["pid"].as_u64().map(|p| p as u32)
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

// ---------------------------------------------------------------------------------------------
// 1. An immutable file inside a tree hidden with --background.

#[test]
fn immutable_file_in_a_hidden_tree_is_named_where_it_is_and_the_rest_restorable() {
    let s = scratch!();
    util::require_root!();
    let vol = util::or_skip!(Volume::ext4(&s, "vol", 64 << 20, 256));
    let _settle = ReaperSettle { trash: trash(&s) };
    let t = trash(&s);
    wide_tree(&s, "vol/tree", 3, 4);
    s.file("vol/tree/sub/imm", "keep me\n");
    let _imm = util::or_skip!(ImmutableGuard::new(&s, "vol/tree/sub/imm"));
    let out = rm_ok(&s, &["-r", "--background", "--json", "vol/tree"]);
    let id = hidden(&util::json_object(&out.stdout))[0].1.clone();
    // The reaper frees what it can, and says which entry failed, by its ID.
    let out = run_ns(&s, &["reap", "--trash", t.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = util::stderr_of(&out);
    assert!(err.contains(&id), "the failure names entry {id}: {err}");
    // status names the file where it is now (inside the entry), and the entry.
    let now_at = t.join(&id).join("reaping/sub/imm");
    assert!(
        now_at.exists(),
        "{} is not where status will say",
        now_at.display()
    );
    let st = util::stdout_of(&run_ns(&s, &["status"]));
    assert!(
        st.contains(now_at.to_str().unwrap()) && st.contains(&format!("reclaim restore {id}")),
        "status names {} and how to get it back: {st}",
        now_at.display()
    );
    // Restore puts what is left back (what GNU rm -rf leaves: the file and its directories).
    let out = run_ns(&s, &["restore", &id]);
    util::assert_success(&out);
    assert_eq!(fs::read(s.path("vol/tree/sub/imm")).unwrap(), b"keep me\n");
    assert!(!s.exists("vol/tree/d0"), "freed parts stay freed");
    assert!(trash_entries(&t).is_empty(), "{:?}", trash_entries(&t));
    // An error about an entry names it by its ID, also when asked by (relative) path.
    rm_ok(&s, &["-r", "--background", "--grace", "1h", "vol/tree"]);
    let id2 = trash_entries(&t).pop().unwrap();
    s.mkdir("vol/tree");
    let out = run_ns(&s, &["restore", "vol/tree"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = util::stderr_of(&out);
    assert!(err.contains(&format!("(entry '{id2}')")), "{err}");
    fs::remove_dir(s.path("vol/tree")).unwrap();
    util::assert_success(&run_ns(&s, &["restore", &id2]));
    drop(_imm);
    drop(vol);
}

#[test]
fn wait_with_an_immutable_file_inside_exits_1_naming_it_and_keeps_it_in_place() {
    let s = scratch!();
    util::require_root!();
    let _vol = util::or_skip!(Volume::ext4(&s, "vol", 64 << 20, 256));
    let _settle = ReaperSettle { trash: trash(&s) };
    wide_tree(&s, "vol/tree", 2, 3);
    s.file("vol/tree/sub/imm", "keep me\n");
    let _imm = util::or_skip!(ImmutableGuard::new(&s, "vol/tree/sub/imm"));
    let out = s
        .rm(&["-r", "--wait", "vol/tree"])
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = util::stderr_of(&out);
    assert!(
        err.contains(s.path("vol/tree/sub/imm").to_str().unwrap()),
        "names the file: {err}"
    );
    // Like GNU rm -rf: what could not be removed is where it was, and nothing waits in the trash.
    assert_eq!(fs::read(s.path("vol/tree/sub/imm")).unwrap(), b"keep me\n");
    assert!(!s.exists("vol/tree/d0"));
    assert!(trash_entries(&trash(&s)).is_empty());
}

// ---------------------------------------------------------------------------------------------
// 2. reap --now.

#[test]
fn reap_now_frees_entries_in_their_grace_window() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    for f in ["a", "b", "c"] {
        s.file(format!("vol/{f}"), format!("{f}\n"));
    }
    let out = rm_ok(
        &s,
        &[
            "--background",
            "--grace",
            "1h",
            "--json",
            "vol/a",
            "vol/b",
            "vol/c",
        ],
    );
    let ids: Vec<String> = hidden(&util::json_object(&out.stdout))
        .into_iter()
        .map(|h| h.1)
        .collect();
    let tp = t.to_str().unwrap();
    // A plain reap leaves them all.
    util::assert_success(&run_ns(&s, &["reap", "--trash", tp]));
    assert_eq!(trash_entries(&t).len(), 3);
    // One by ID.
    let out = run_ns(&s, &["reap", "--trash", tp, "--now", &ids[1], "--json"]);
    util::assert_success(&out);
    let r = util::parse_reap_report(&out.stdout);
    assert_eq!(r["entries_freed"], 1, "{r}");
    assert_eq!(trash_entries(&t), vec![ids[0].clone(), ids[2].clone()]);
    // An unknown ID: one line naming it, exit 1, nothing freed.
    let out = run_ns(&s, &["reap", "--now", "20200101T000000.000000Z-1-0"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = util::stderr_of(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("20200101T000000.000000Z-1-0"), "{err}");
    assert_eq!(trash_entries(&t).len(), 2);
    // Everything.
    util::assert_success(&run_ns(&s, &["reap", "--now", "--all"]));
    assert!(trash_entries(&t).is_empty(), "{:?}", trash_entries(&t));
    // --now needs what to free.
    let out = run_ns(&s, &["reap", "--now"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

// ---------------------------------------------------------------------------------------------
// 3 and 4. The detached reaper: seen as soon as it is started, gone when nothing is left.

#[test]
fn status_right_after_background_sees_the_reaper_and_it_leaves_an_emptied_trash() {
    let s = scratch!();
    util::require_root!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let _settle = ReaperSettle { trash: trash(&s) };
    let t = trash(&s);
    for round in 0..4 {
        s.file(format!("vol/f{round}"), "f\n");
        let seen = util::or_skip!(on_a_terminal(
            &s,
            &format!("reclaim rm --background --grace 10min vol/f{round}; reclaim status"),
            true
        ));
        assert!(
            !seen.contains("no reaper running"),
            "round {round}: status said no reaper while one was starting:\n{seen}"
        );
        assert!(seen.contains("reaper "), "round {round}:\n{seen}");
    }
    // The reaper waits for the grace windows; restoring every entry leaves it nothing to wait
    // for, and it leaves within seconds (not when the 10 minutes are over).
    assert!(eventually(Duration::from_secs(10), || state_pid(&t).is_some_and(alive)));
    let pid = state_pid(&t).unwrap();
    for id in trash_entries(&t) {
        util::assert_success(&run_ns(&s, &["restore", &id]));
    }
    assert!(
        eventually(Duration::from_secs(5), || !alive(pid)),
        "the reaper {pid} still waits for an empty trash"
    );
    assert!(s.exists("vol/f0") && s.exists("vol/f3"));
}

// ---------------------------------------------------------------------------------------------
// 5. --wait of a tree: its directories counted, its progress against a total, no false line.

#[test]
fn wait_counts_the_directories_of_a_tree() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    wide_tree(&s, "vol/tree", 7, 3);
    s.mkdir("vol/tree/empty/deeper");
    let out = rm_ok(&s, &["-r", "--wait", "--json", "vol/tree"]);
    let v = util::json_object(&out.stdout);
    // tree, d0..d6, empty, deeper.
    assert_eq!(
        (v["files"].as_u64(), v["dirs"].as_u64()),
        (Some(21), Some(10)),
        "{v}"
    );
}

#[test]
fn wait_shows_files_of_a_total_and_an_eta_for_a_tree() {
    let s = scratch!();
    util::require_root!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let _settle = ReaperSettle { trash: trash(&s) };
    wide_tree(&s, "vol/tree", 20, 60);
    // Paced (400 unlinks/s: about 3 s) so that the line is drawn after the first second.
    let seen = util::or_skip!(on_a_terminal(
        &s,
        "reclaim rm -r --wait --iops 400 vol/tree",
        false
    ));
    let lines: Vec<&str> = seen.split(['\r', '\n']).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" of 1,200 files") && l.contains("ETA")),
        "no line with files of the total and an ETA:\n{seen}"
    );
    assert!(!s.exists("vol/tree"));
}

#[test]
fn background_never_flashes_an_empty_removal_line() {
    let s = scratch!();
    util::require_root!();
    // ext4 on a loop device (which may call itself rotational: the tree phase would probe it).
    let _vol = util::or_skip!(Volume::ext4(&s, "vol", 64 << 20, 256));
    let _settle = ReaperSettle { trash: trash(&s) };
    for i in 0..3 {
        s.file(format!("vol/g{i}/sub/x"), "g\n");
        let seen = util::or_skip!(on_a_terminal(
            &s,
            &format!("reclaim rm -r --background --grace 5min vol/g{i}"),
            false
        ));
        assert!(!seen.contains("0 directories removed"), "{seen}");
        assert!(seen.contains("hid 1 path"), "{seen}");
    }
}

// ---------------------------------------------------------------------------------------------
// 6. status --brief.

#[test]
fn status_brief_is_one_line_per_trash() {
    let s = scratch!();
    util::require_root!();
    let _a = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let _b = util::or_skip!(Volume::tmpfs(&s, "other"));
    s.file("vol/x", "x\n");
    s.file("vol/y", "y\n");
    s.file("other/z", vec![7u8; 64 << 10]);
    rm_ok(&s, &["--background", "--grace", "1h", "vol/x", "vol/y"]);
    rm_ok(&s, &["--background", "other/z"]);
    let out = run_ns(&s, &["status", "--brief"]);
    util::assert_success(&out);
    let text = util::stdout_of(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let vol = lines
        .iter()
        .find(|l| l.contains(trash(&s).to_str().unwrap()))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        vol.contains("root")
            && vol.contains("2 entries")
            && vol.contains("oldest")
            && vol.contains("no reaper"),
        "{vol}"
    );
    let other = util::trash_dir(&s.path("other"));
    let other = lines
        .iter()
        .find(|l| l.contains(other.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        other.contains("1 entry") && other.contains("64.0 KiB"),
        "{other}"
    );
    reap_all(&s);
}

fn reap_all(s: &Scratch) -> Output {
    run_ns(s, &["reap", "--now", "--all"])
}
