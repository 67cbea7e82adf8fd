//! Namespace-first removal: `reclaim rm --background` hides each target whole into the trash
//! at the top of its file system (`<top>/.reclaim/<uid>/<ID>/data`, one rename) and a reaper
//! frees it later; `--wait` hides and frees in the same process; `reclaim status` shows what is
//! pending, `reclaim restore` puts an entry back while it is whole, `reclaim reap` frees.
//!
//! Every test here hides things on a tmpfs (or ext4 image) mounted inside its own scratch
//! directory, so the trash is made there and never at the top of the host's file system (root
//! only; skipped otherwise). `RECLAIM_NO_SPAWN=1` keeps `rm --background` from starting a
//! detached reaper, so the tests can look into the trash and run `reclaim reap --trash T`
//! themselves; the one test that lets a reaper start waits for it to finish before the volume
//! is unmounted (and `ReaperSettle` does so even when a test fails).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::reap::{reap, run_ns};

use crate::util::{
    self, assert_same, entry_meta, free_bytes, scratch, snapshot_any as snapshot, snapshot_without,
    snapshot_without_trash, trash_entries, ImmutableGuard, ReaperSettle, Scratch, TrashLock,
    Volume, NO_SPAWN,
};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Volumes, trees, commands.

/// This process's trash on `root/vol`.
fn trash(s: &Scratch) -> PathBuf {
    util::trash_dir(&s.path("vol"))
}

/// `len` bytes of a pattern that depends on `seed`.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(31).wrapping_add(seed * 7919) % 251) as u8)
        .collect()
}

/// A small tree under `root/rel`: files (one of 64 KiB), nested and empty directories, a
/// relative symlink, a fifo.
fn small_tree(s: &Scratch, rel: &str, seed: u64) {
    s.file(format!("{rel}/a"), format!("a {seed}\n"));
    s.file(format!("{rel}/big"), bytes(seed, 64 * KIB as usize));
    s.file(format!("{rel}/sub/c"), format!("c {seed}\n"));
    s.file(format!("{rel}/sub/deeper/d"), format!("d {seed}\n"));
    s.mkdir(format!("{rel}/empty"));
    s.symlink(format!("{rel}/sub/link"), "../a");
    s.fifo(format!("{rel}/sub/fifo"));
}

/// `st_blocks * 512` of one path (not followed).
fn allocated(p: &Path) -> u64 {
    fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()))
        .blocks()
        * 512
}

/// `reclaim rm ARGS` in the scratch root with `RECLAIM_NO_SPAWN=1`.
fn rm_ns(s: &Scratch, args: &[&str]) -> Output {
    s.rm(args)
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(s))
        .output()
        .unwrap()
}

/// `reclaim restore ARGS`.
fn restore(s: &Scratch, args: &[&str]) -> Output {
    let mut all = vec!["restore"];
    all.extend_from_slice(args);
    run_ns(s, &all)
}

fn abs(s: &Scratch, rel: &str) -> String {
    s.path(rel).to_str().unwrap().to_owned()
}

fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The only non-empty line of stderr (panics if there are more or none).
#[track_caller]
fn one_line(o: &Output) -> String {
    let err = util::stderr_of(o);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr:\n{err}");
    lines[0].to_owned()
}

/// The `"hidden"` list of an `rm --json` report (panics if absent or not an array).
fn hidden_of(stdout: &[u8]) -> Vec<Value> {
    let v = util::json_object(stdout);
    match v.get("hidden") {
        Some(Value::Array(a)) => a.clone(),
        other => panic!("\"hidden\" is not an array ({other:?}): {v}"),
    }
}

/// The ids of the entries of `trash`, keyed by the `original` path of their meta.json.
fn ids_by_original(trash: &Path) -> std::collections::BTreeMap<String, String> {
    trash_entries(trash)
        .into_iter()
        .map(|id| {
            let m = entry_meta(trash, &id);
            (m["original"].as_str().unwrap_or_default().to_owned(), id)
        })
        .collect()
}

/// The entry of `trash` hiding `original` (absolute).
#[track_caller]
fn id_of(trash: &Path, original: &str) -> String {
    let by = ids_by_original(trash);
    by.get(original)
        .unwrap_or_else(|| panic!("no entry of {} for {original}: {by:?}", trash.display()))
        .clone()
}

/// `reclaim status --json`: the object of `trash`, if listed.
fn status_of(s: &Scratch, trash: &Path) -> Option<Value> {
    let out = run_ns(s, &["status", "--json"]);
    util::assert_success(&out);
    let v = util::json_object(&out.stdout);
    let trashes = v["trashes"]
        .as_array()
        .unwrap_or_else(|| panic!("status --json: \"trashes\" is not an array: {v}"));
    trashes
        .iter()
        .find(|t| t["trash"].as_str().map(Path::new) == Some(trash))
        .cloned()
}

/// Every item of every trash `reclaim status --json` lists.
fn all_status_items(stdout: &[u8]) -> Vec<Value> {
    let v = util::json_object(stdout);
    v["trashes"]
        .as_array()
        .unwrap_or_else(|| panic!("\"trashes\" is not an array: {v}"))
        .iter()
        .flat_map(|t| t["items"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn mode_of(p: &Path) -> u32 {
    fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

#[track_caller]
fn assert_trash_empty(trash: &Path) {
    assert_eq!(
        trash_entries(trash),
        Vec::<String>::new(),
        "{} still holds entries",
        trash.display()
    );
}

/// Checks a `reap --json` report of a run that freed everything it was given.
#[track_caller]
fn assert_reaped_all(out: &Output) -> Value {
    util::assert_success(out);
    let r = util::parse_reap_report(&out.stdout);
    assert_eq!(r["remaining"], 0, "{r}");
    assert_eq!(r["errors"], Value::Array(vec![]), "{r}");
    r
}

// ---------------------------------------------------------------------------------------------
// Hiding.

#[test]
fn background_hides_a_file_and_a_tree_at_once() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    let top = s.path("vol");
    s.file("vol/neighbour", "stays\n");
    s.make_outside("vol/outside");
    let free0 = free_bytes(&top);
    s.file("vol/d/file", bytes(1, MIB as usize));
    small_tree(&s, "vol/tree", 2);
    let file_snap = snapshot(&s.path("vol/d/file"));
    let tree_snap = s.snapshot("vol/tree");
    let file_alloc = allocated(&s.path("vol/d/file"));
    let tree_alloc = util::allocated_bytes(&s.path("vol/tree")).0;
    let d_md = fs::metadata(s.path("vol/d")).unwrap();
    let top_md = fs::metadata(&top).unwrap();
    let rest = snapshot_without(
        snapshot_without(snapshot_without_trash(&top), Path::new("d/file")),
        Path::new("tree"),
    );
    let t0 = now_unix();
    let out = rm_ns(&s, &["-r", "--background", "vol/d/file", "vol/tree"]);
    util::assert_success(&out);
    let t1 = now_unix();
    assert!(!s.exists("vol/d/file") && !s.exists("vol/tree"));
    assert_same("the rest of vol", &rest, &snapshot_without_trash(&top));

    // The trash and its entries.
    assert_eq!(mode_of(&t), 0o700, "{}", t.display());
    let ids = trash_entries(&t);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let by = ids_by_original(&t);
    for (rel, snap, kind, parent) in [
        ("vol/d/file", &file_snap, "file", &d_md),
        ("vol/tree", &tree_snap, "dir", &top_md),
    ] {
        let original = abs(&s, rel);
        let id = by
            .get(&original)
            .unwrap_or_else(|| panic!("no entry for {original}: {by:?}"));
        assert!(util::looks_like_entry_id(id), "entry id {id:?}");
        let m = entry_meta(&t, id);
        assert_eq!(m["version"], 2, "{m}");
        assert_eq!(m["id"], id.as_str(), "{m}");
        assert_eq!(m["kind"], kind, "{m}");
        assert_eq!(m["uid"], util::euid(), "{m}");
        assert_eq!(m["parent_dev"], parent.dev(), "{m}");
        assert_eq!(m["parent_ino"], parent.ino(), "{m}");
        // The parent's lineage, which `restore` checks: owner, and birth time where known.
        assert_eq!(m["parent"]["ino"], parent.ino(), "{m}");
        assert_eq!(m["parent"]["uid"], parent.uid(), "{m}");
        assert!(
            m.get("original_hex").is_none_or(Value::is_null),
            "UTF-8 path: {m}"
        );
        let created = m["created_unix"].as_f64().expect("created_unix");
        assert!(t0 - 2.0 <= created && created <= t1 + 2.0, "{m}");
        assert!(m["grace_until_unix"].is_null(), "{m}");
        assert!(
            m["allocated"].is_u64() || m["allocated"].is_null(),
            "allocated: {m}"
        );
        assert!(m["files"].is_u64() || m["files"].is_null(), "files: {m}");
        assert_same(
            &format!("{rel} in the trash"),
            snap,
            &snapshot(&t.join(id).join("data")),
        );
        assert!(!t.join(id).join("reaping").exists());
    }
    let file_meta = entry_meta(&t, &by[&abs(&s, "vol/d/file")]);
    assert_eq!(file_meta["allocated"], file_alloc, "{file_meta}");

    // The reaper frees it all.
    let free_hidden = free_bytes(&top);
    let r = assert_reaped_all(&reap(&s, &t, &["--json"]));
    assert_eq!(r["entries_freed"], 2, "{r}");
    assert_trash_empty(&t);
    let free_after = free_bytes(&top);
    assert!(
        free_after >= free_hidden + file_alloc + tree_alloc,
        "space not back: {free_hidden} -> {free_after}"
    );
    assert!(
        free_after + 64 * KIB >= free0,
        "space not back: {free0} before, {free_after} after"
    );
    assert_same("the rest of vol", &rest, &snapshot_without_trash(&top));
    // And the report counts what was freed, the tree's files too.
    assert!(
        r["bytes_freed"].as_u64().unwrap() >= file_alloc + tree_alloc,
        "bytes_freed below {file_alloc} + {tree_alloc}: {r}"
    );
}

#[test]
fn background_starts_a_reaper_that_empties_the_trash() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    let top = s.path("vol");
    s.file("vol/neighbour", "stays\n");
    let free0 = free_bytes(&top);
    let rest = snapshot_without_trash(&top);
    s.file("vol/f", bytes(3, MIB as usize));
    small_tree(&s, "vol/tree", 4);
    // No RECLAIM_NO_SPAWN: a detached reaper frees it.
    let out = s
        .rm(&["-r", "--background", "vol/f", "vol/tree"])
        .env_remove(NO_SPAWN)
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(!s.exists("vol/f") && !s.exists("vol/tree"));
    assert!(
        util::wait_trash_idle(&t, Duration::from_secs(60), true),
        "the reaper did not empty {} in 60 s: {:?}",
        t.display(),
        trash_entries(&t)
    );
    assert_same("vol", &rest, &snapshot_without_trash(&top));
    assert!(free_bytes(&top) + 64 * KIB >= free0, "space not back");
    // One log line per freed entry (what, how much, how long), and status shows the last ones.
    let log = fs::read_to_string(t.join("reaper.log")).unwrap_or_default();
    for what in ["vol/f", "vol/tree"] {
        assert!(
            log.lines().any(|l| l.contains("freed '")
                && l.contains(what)
                && l.contains(" in ")
                && l.contains(" s")),
            "no line for {what} in reaper.log:\n{log}"
        );
    }
    let out = run_ns(&s, &["status"]);
    util::assert_success(&out);
    assert!(
        util::stdout_of(&out).contains("log: ") && util::stdout_of(&out).contains("freed '"),
        "status shows no log lines:\n{}",
        util::stdout_of(&out)
    );
}

#[test]
fn the_detached_reaper_is_reclaim_to_pgrep() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/f", "x\n");
    // A grace window keeps the detached reaper alive (waiting) for a while.
    let out = s
        .rm(&["--background", "--grace", "20s", "vol/f"])
        .env_remove(NO_SPAWN)
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&out);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let pid = loop {
        let out = run_ns(&s, &["status", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if let Some(pid) = v["trashes"][0]["reaper"]["pid"].as_u64() {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no reaper in status: {}",
            util::stdout_of(&out)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    assert_eq!(comm.trim(), "reclaim", "the reaper's process name");
    let pgrep = std::process::Command::new("pgrep")
        .args(["-x", "reclaim"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&pgrep.stdout)
            .lines()
            .any(|l| l.trim() == pid.to_string()),
        "pgrep -x reclaim does not list {pid}"
    );
    // Done with it: take the entry back and stop the waiting reaper (SIGTERM: it stops at a
    // consistent point), so the volume can be unmounted.
    let id = trash_entries(&t).pop().expect("the entry");
    util::assert_success(&restore(&s, &[&id]));
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).expect("a pid"),
        rustix::process::Signal::TERM,
    );
    let gone = std::time::Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() && std::time::Instant::now() < gone
    {
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn wait_shows_progress_with_a_total_and_an_eta_on_a_terminal() {
    let s = scratch!();
    util::require_root!();
    let _vol = util::or_skip!(Volume::tmpfs_with(&s, "vol", "size=256m"));
    let _settle = ReaperSettle { trash: trash(&s) };
    s.file("vol/big", bytes(17, 128 * MIB as usize));
    // A terminal of 120 columns (script(1) gives the pty; stty its size), paced so the bar
    // gets drawn a few times.
    let seen = util::on_a_terminal(&s, "rm --wait --rate 40M vol/big");
    let lines: Vec<&str> = seen.split(['\r', '\n']).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("freeing '") && l.contains(" of 128.0 MiB") && l.contains("ETA")),
        "no progress line with a total and an ETA:\n{seen}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("removed 1 file and 0 directories")),
        "no final line:\n{seen}"
    );
    assert!(!s.exists("vol/big"));
}

#[test]
fn reap_shows_progress_with_a_total_and_an_eta_on_a_terminal() {
    let s = scratch!();
    util::require_root!();
    let _vol = util::or_skip!(Volume::tmpfs_with(&s, "vol", "size=256m"));
    let _settle = ReaperSettle { trash: trash(&s) };
    s.file("vol/big", bytes(18, 128 * MIB as usize));
    // Hidden now (its pacing recorded in the entry), freed by `reap` on a terminal.
    util::assert_success(&rm_ns(&s, &["--background", "--rate", "40M", "vol/big"]));
    let seen = util::on_a_terminal(&s, "reap");
    let lines: Vec<&str> = seen.split(['\r', '\n']).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("freeing '") && l.contains(" of 128.0 MiB") && l.contains("ETA")),
        "no progress line with a total and an ETA:\n{seen}"
    );
    assert!(
        lines.iter().any(|l| l.contains("freed 1 entry")),
        "no final line:\n{seen}"
    );
    assert_trash_empty(&trash(&s));
}

#[test]
fn wait_returns_only_when_the_trash_entries_are_gone() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    let top = s.path("vol");
    s.file("vol/neighbour", "stays\n");
    let free0 = free_bytes(&top);
    let rest = snapshot_without_trash(&top);
    s.file("vol/f", bytes(5, 2 * MIB as usize));
    small_tree(&s, "vol/tree", 6);
    let out = rm_ns(&s, &["-r", "--wait", "--json", "vol/f", "vol/tree"]);
    util::assert_success(&out);
    let hidden = hidden_of(&out.stdout);
    assert_eq!(hidden.len(), 2, "{hidden:?}");
    for h in &hidden {
        let id = h["id"].as_str().expect("hidden id");
        assert!(util::looks_like_entry_id(id), "{h}");
        assert!(
            fs::symlink_metadata(t.join(id)).is_err(),
            "entry {id} still there after --wait returned"
        );
    }
    assert_trash_empty(&t);
    assert!(!util::trash_locked(&t), "a reaper still runs after --wait");
    assert!(!s.exists("vol/f") && !s.exists("vol/tree"));
    assert_same("vol", &rest, &snapshot_without_trash(&top));
    assert!(free_bytes(&top) + 64 * KIB >= free0, "space not back");
}

#[test]
fn default_rm_does_not_use_the_trash() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    s.file("vol/neighbour", "stays\n");
    let rest = s.snapshot("vol");
    small_tree(&s, "vol/tree", 7);
    s.file("vol/f", "f\n");
    small_tree(&s, "vol/tree2", 8);
    let out = rm_ns(&s, &["-r", "--json", "vol/tree", "vol/f"]);
    util::assert_success(&out);
    let v = util::json_object(&out.stdout);
    assert!(
        v.get("hidden")
            .is_none_or(|h| h.as_array().is_some_and(|a| a.is_empty())),
        "{v}"
    );
    util::assert_success(&rm_ns(&s, &["-r", "--now", "vol/tree2"]));
    assert!(
        !s.exists("vol/.reclaim"),
        "rm without --background made a trash"
    );
    assert_same("vol", &rest, &s.snapshot("vol"));
}

#[test]
fn rm_json_with_background_lists_the_hidden_ids() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/f", "f\n");
    small_tree(&s, "vol/tree", 9);
    let out = rm_ns(&s, &["-r", "--background", "--json", "vol/f", "vol/tree"]);
    util::assert_success(&out);
    // Still the usual report, plus "hidden" and "fallback".
    let _ = util::parse_report(&out.stdout);
    let v = util::json_object(&out.stdout);
    assert_eq!(v["fallback"], Value::Array(vec![]), "{v}");
    let hidden = hidden_of(&out.stdout);
    assert_eq!(hidden.len(), 2, "{v}");
    let ids = trash_entries(&t);
    for (h, rel) in hidden.iter().zip(["vol/f", "vol/tree"]) {
        let p = h["path"].as_str().expect("path");
        assert!(p == rel || p == abs(&s, rel), "{h}");
        assert_eq!(h["trash"].as_str().map(Path::new), Some(t.as_path()), "{h}");
        let id = h["id"].as_str().expect("id");
        assert!(ids.iter().any(|i| i == id), "{id} not in {ids:?}");
        assert_eq!(entry_meta(&t, id)["original"], abs(&s, rel));
    }
    assert_reaped_all(&reap(&s, &t, &["--json"]));
    assert_trash_empty(&t);
}

// ---------------------------------------------------------------------------------------------
// Status.

#[test]
fn status_lists_pending_entries_then_nothing_after_reap() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/f", bytes(10, MIB as usize));
    small_tree(&s, "vol/tree", 11);
    let f_alloc = allocated(&s.path("vol/f"));
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/f", "vol/tree"]));
    let ids = trash_entries(&t);
    assert_eq!(ids.len(), 2);

    let st = status_of(&s, &t).unwrap_or_else(|| panic!("status does not list {}", t.display()));
    assert_eq!(
        st["mount"].as_str().map(Path::new),
        Some(s.path("vol").as_path()),
        "{st}"
    );
    assert_eq!(st["uid"], util::euid(), "{st}");
    assert_eq!(st["entries"], 2, "{st}");
    assert!(st["pending_bytes"].as_u64().unwrap_or(0) >= f_alloc, "{st}");
    assert!(st["pending_files"].as_u64().is_some(), "{st}");
    assert!(st["reaper"].is_null(), "no reaper runs: {st}");
    let items = st["items"].as_array().expect("items");
    let mut listed: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    listed.sort();
    assert_eq!(listed, ids, "{st}");
    for i in items {
        assert_eq!(i["state"], "pending", "{i}");
        let (orig, kind) = if i["kind"] == "file" {
            (abs(&s, "vol/f"), "file")
        } else {
            (abs(&s, "vol/tree"), "dir")
        };
        assert_eq!(i["original"], orig.as_str(), "{i}");
        assert_eq!(i["kind"], kind, "{i}");
        assert!(
            i["created_unix"].is_f64() || i["created_unix"].is_u64(),
            "{i}"
        );
        assert!(i["grace_until_unix"].is_null(), "{i}");
        assert!(i["allocated"].is_u64() || i["allocated"].is_null(), "{i}");
        assert!(i["files"].is_u64() || i["files"].is_null(), "{i}");
        if kind == "file" {
            assert_eq!(i["allocated"], f_alloc, "{i}");
        }
    }
    // The human form names the trash.
    let out = run_ns(&s, &["status"]);
    util::assert_success(&out);
    let text = util::stdout_of(&out);
    assert!(
        text.contains(t.to_str().unwrap()),
        "status does not mention {}:\n{text}",
        t.display()
    );

    assert_reaped_all(&reap(&s, &t, &["--json"]));
    if let Some(st) = status_of(&s, &t) {
        assert_eq!(st["entries"], 0, "{st}");
        assert_eq!(st["pending_bytes"], 0, "{st}");
        assert_eq!(st["items"], Value::Array(vec![]), "{st}");
    }
}

// ---------------------------------------------------------------------------------------------
// Restore.

#[test]
fn restore_by_id_and_by_path_puts_the_content_back() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    let top = s.path("vol");
    s.file("vol/neighbour", "stays\n");
    s.file("vol/d/f", bytes(12, 300 * KIB as usize));
    small_tree(&s, "vol/d/tree", 13);
    let before = snapshot_without_trash(&top);
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/d/f", "vol/d/tree"]));
    assert!(!s.exists("vol/d/f") && !s.exists("vol/d/tree"));
    let id = id_of(&t, &abs(&s, "vol/d/f"));
    let out = restore(&s, &[&id]);
    util::assert_success(&out);
    let tree = abs(&s, "vol/d/tree");
    let out = restore(&s, &[&tree]);
    util::assert_success(&out);
    assert_same("vol after restore", &before, &snapshot_without_trash(&top));
    for id in trash_entries(&t) {
        assert!(
            !t.join(&id).join("data").exists() && !t.join(&id).join("reaping").exists(),
            "restored entry {id} still holds data"
        );
    }
    // A reaper after that frees nothing that was restored.
    util::assert_success(&reap(&s, &t, &[]));
    assert_trash_empty(&t);
    assert_same("vol after reap", &before, &snapshot_without_trash(&top));
}

#[test]
fn restore_by_original_path_picks_the_newest_entry() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/f", "old\n");
    util::assert_success(&rm_ns(&s, &["--background", "vol/f"]));
    // Entry ids have microseconds: make sure the second is newer.
    std::thread::sleep(Duration::from_millis(5));
    s.file("vol/f", "new\n");
    util::assert_success(&rm_ns(&s, &["--background", "vol/f"]));
    assert_eq!(trash_entries(&t).len(), 2);
    // A relative path (from the working directory), like rm takes.
    util::assert_success(&restore(&s, &["vol/f"]));
    assert_eq!(fs::read(s.path("vol/f")).unwrap(), b"new\n");
    // Taken now: the older one stays.
    let out = restore(&s, &[&abs(&s, "vol/f")]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    assert_eq!(fs::read(s.path("vol/f")).unwrap(), b"new\n");
    fs::remove_file(s.path("vol/f")).unwrap();
    util::assert_success(&restore(&s, &[&abs(&s, "vol/f")]));
    assert_eq!(fs::read(s.path("vol/f")).unwrap(), b"old\n");
    util::assert_success(&reap(&s, &t, &[]));
    assert_trash_empty(&t);
    assert_eq!(fs::read(s.path("vol/f")).unwrap(), b"old\n");
}

#[test]
fn restore_refuses_when_the_original_path_is_taken() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    small_tree(&s, "vol/d/tree", 14);
    let snap = s.snapshot("vol/d/tree");
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/d/tree"]));
    let original = abs(&s, "vol/d/tree");
    let id = id_of(&t, &original);
    s.file("vol/d/tree", "intruder\n");
    for arg in [id.as_str(), original.as_str()] {
        let out = restore(&s, &[arg]);
        assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
        let line = one_line(&out);
        assert!(line.contains(&original), "{line}");
        assert!(line.contains("original path is taken"), "{line}");
        assert_eq!(fs::read(s.path("vol/d/tree")).unwrap(), b"intruder\n");
        assert_same("the entry", &snap, &snapshot(&t.join(&id).join("data")));
    }
    util::assert_success(&reap(&s, &t, &[]));
    assert_trash_empty(&t);
    assert_eq!(fs::read(s.path("vol/d/tree")).unwrap(), b"intruder\n");
}

#[test]
fn restore_to_puts_an_entry_elsewhere_on_the_same_file_system() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    small_tree(&s, "vol/d/tree", 16);
    let snap = s.snapshot("vol/d/tree");
    s.mkdir("vol/elsewhere");
    s.file("vol/elsewhere/taken", "mine\n");
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/d/tree"]));
    let id = id_of(&t, &abs(&s, "vol/d/tree"));
    // Never over an existing name; not across file systems (a restore is a rename).
    let out = restore(&s, &["--to", &abs(&s, "vol/elsewhere/taken"), &id]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    assert!(
        one_line(&out).contains("--to never overwrites"),
        "{}",
        one_line(&out)
    );
    assert_eq!(fs::read(s.path("vol/elsewhere/taken")).unwrap(), b"mine\n");
    let out = restore(&s, &["--to", &abs(&s, "outside-vol"), &id]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    assert!(
        one_line(&out).contains("another file system"),
        "{}",
        one_line(&out)
    );
    assert!(!s.exists("outside-vol"));
    // One entry only.
    let out = restore(&s, &["--to", &abs(&s, "vol/x"), &id, &id]);
    assert_eq!(out.status.code(), Some(2));
    // By its original path, to a new name.
    let out = restore(
        &s,
        &[
            "--to",
            &abs(&s, "vol/elsewhere/tree"),
            &abs(&s, "vol/d/tree"),
        ],
    );
    util::assert_success(&out);
    assert_same("restored to", &snap, &s.snapshot("vol/elsewhere/tree"));
    assert!(!s.exists("vol/d/tree"));
    assert_trash_empty(&t);
}

#[test]
fn restore_refuses_an_entry_already_being_freed() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    small_tree(&s, "vol/tree", 15);
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/tree"]));
    let original = abs(&s, "vol/tree");
    let id = id_of(&t, &original);
    // What a reaper does when it claims an entry.
    fs::rename(t.join(&id).join("data"), t.join(&id).join("reaping")).unwrap();
    let snap = snapshot(&t.join(&id).join("reaping"));
    for arg in [id.as_str(), original.as_str()] {
        let out = restore(&s, &[arg]);
        assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
        let line = one_line(&out);
        assert!(line.contains("already being freed"), "{line}");
        assert!(!s.exists("vol/tree"), "restored a claimed entry");
        assert_same(
            "the claimed entry",
            &snap,
            &snapshot(&t.join(&id).join("reaping")),
        );
    }
    util::assert_success(&reap(&s, &t, &[]));
    assert_trash_empty(&t);
}

#[test]
fn restore_refuses_when_the_original_directory_was_replaced_or_is_gone() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/d/f", "f\n");
    util::assert_success(&rm_ns(&s, &["--background", "vol/d/f"]));
    let id = id_of(&t, &abs(&s, "vol/d/f"));
    // Replaced: same path, another directory.
    fs::rename(s.path("vol/d"), s.path("vol/d-old")).unwrap();
    s.mkdir("vol/d");
    let out = restore(&s, &[&id]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let _ = one_line(&out);
    assert_eq!(fs::read_dir(s.path("vol/d")).unwrap().count(), 0);
    assert_eq!(fs::read_dir(s.path("vol/d-old")).unwrap().count(), 0);
    assert_eq!(fs::read(t.join(&id).join("data")).unwrap(), b"f\n");
    // Gone.
    fs::remove_dir(s.path("vol/d")).unwrap();
    fs::remove_dir(s.path("vol/d-old")).unwrap();
    let out = restore(&s, &[&id]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let _ = one_line(&out);
    assert!(!s.exists("vol/d"));
    assert_eq!(fs::read(t.join(&id).join("data")).unwrap(), b"f\n");
    util::assert_success(&reap(&s, &t, &[]));
    assert_trash_empty(&t);
}

#[test]
fn restore_refuses_unknown_ids_and_paths() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/f", "f\n");
    s.file("vol/g", "g\n");
    util::assert_success(&rm_ns(&s, &["--background", "vol/f", "vol/g"]));
    let entries = trash_entries(&t);
    let unknown = "20000101T000000.000000Z-1-0";
    let nowhere = abs(&s, "vol/never-was");
    for arg in [unknown, "not-an-id", nowhere.as_str()] {
        let out = restore(&s, &[arg]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{arg}: {}",
            util::stderr_of(&out)
        );
        let line = one_line(&out);
        assert!(line.contains(arg), "{arg}: {line}");
        assert_eq!(trash_entries(&t), entries);
        assert!(!s.exists("vol/f") && !s.exists("vol/never-was"));
    }
    // No argument: usage.
    let out = restore(&s, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", util::stderr_of(&out));
    // One good, one unknown: the good one is restored, exit 1.
    let g = id_of(&t, &abs(&s, "vol/g"));
    let out = restore(&s, &[&g, unknown]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    assert_eq!(fs::read(s.path("vol/g")).unwrap(), b"g\n");
    assert!(!s.exists("vol/f"));
    util::assert_success(&reap(&s, &t, &[]));
    assert_trash_empty(&t);
    assert_eq!(fs::read(s.path("vol/g")).unwrap(), b"g\n");
}

#[test]
fn grace_keeps_an_entry_restorable_through_reap_once() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    small_tree(&s, "vol/tree", 16);
    let snap = s.snapshot("vol/tree");
    let out = rm_ns(&s, &["-r", "--background", "--grace", "1h", "vol/tree"]);
    util::assert_success(&out);
    let id = id_of(&t, &abs(&s, "vol/tree"));
    let m = entry_meta(&t, &id);
    let created = m["created_unix"].as_f64().unwrap();
    let until = m["grace_until_unix"]
        .as_f64()
        .unwrap_or_else(|| panic!("no grace_until_unix: {m}"));
    assert!((until - created - 3600.0).abs() < 5.0, "{m}");
    let st = status_of(&s, &t).expect("status lists the trash");
    assert_eq!(st["items"][0]["state"], "grace", "{st}");
    // One pass: the entry is not due yet.
    let out = reap(&s, &t, &["--once", "--json"]);
    util::assert_success(&out);
    let r = util::parse_reap_report(&out.stdout);
    assert_eq!(r["entries_freed"], 0, "{r}");
    assert_eq!(r["remaining"], 1, "{r}");
    assert_same(
        "entry in grace",
        &snap,
        &snapshot(&t.join(&id).join("data")),
    );
    util::assert_success(&restore(&s, &[&id]));
    assert_same("restored tree", &snap, &s.snapshot("vol/tree"));
}

#[test]
fn grace_needs_background() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    s.file("vol/f", "f\n");
    for mode in [None, Some("--now"), Some("--wait")] {
        let mut args: Vec<&str> = mode.into_iter().collect();
        args.extend(["--grace", "1h", "vol/f"]);
        let out = rm_ns(&s, &args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            util::stderr_of(&out)
        );
        assert!(s.exists("vol/f"), "{args:?} removed the file");
    }
    assert!(!s.exists("vol/.reclaim"));
}

// ---------------------------------------------------------------------------------------------
// Users.

/// `reclaim ARGS` as uid/gid 65534 (no groups), in `/`. Err if setpriv cannot do that.
fn as_nobody(args: &[&str]) -> Result<Output, String> {
    let run = |args: &[&str]| {
        StdCommand::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(util::reclaim_bin())
            .args(args)
            .current_dir("/")
            // Its own environment (root's HOME is not readable for it).
            .env_clear()
            .env("RECLAIM_CONFIG", "")
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", "/nonexistent")
            .env(NO_SPAWN, "1")
            .output()
    };
    match run(&["--version"]) {
        Ok(o) if o.status.success() => {}
        other => return Err(format!("cannot run reclaim as uid 65534: {other:?}")),
    }
    Ok(run(args).unwrap())
}

#[test]
fn entries_of_one_uid_are_invisible_to_another() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    small_tree(&s, "vol/tree", 17);
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/tree"]));
    let id = id_of(&t, &abs(&s, "vol/tree"));
    let snap = snapshot(&t.join(&id).join("data"));
    let out = util::or_skip!(as_nobody(&["status", "--json"]));
    util::assert_success(&out);
    let v = util::json_object(&out.stdout);
    for tr in v["trashes"].as_array().expect("trashes") {
        assert_ne!(
            tr["trash"].as_str().map(Path::new),
            Some(t.as_path()),
            "{tr}"
        );
        assert_ne!(tr["uid"], util::euid(), "{tr}");
    }
    assert!(
        all_status_items(&out.stdout)
            .iter()
            .all(|i| i["id"] != id.as_str()),
        "{v}"
    );
    let out = as_nobody(&["restore", &id]).unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    assert!(!s.exists("vol/tree"));
    assert_same("root's entry", &snap, &snapshot(&t.join(&id).join("data")));
    util::assert_success(&reap(&s, &t, &[]));
    assert_trash_empty(&t);
}

// ---------------------------------------------------------------------------------------------
// No usable trash.

#[test]
fn a_squatted_trash_name_is_passed_over_never_a_reason_to_remove_now() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    // Someone put a file where this user's trash would go (the name is squatted).
    let squat = s.file(
        format!("vol/.reclaim-{}", util::euid()),
        "not a directory\n",
    );
    s.file("vol/neighbour", "stays\n");
    let before = s.snapshot("vol");
    small_tree(&s, "vol/tree", 18);
    s.file("vol/f", "f\n");
    let out = rm_ns(
        &s,
        &[
            "-r",
            "--background",
            "--grace",
            "1h",
            "--json",
            "-v",
            "vol/tree",
            "vol/f",
        ],
    );
    util::assert_success(&out);
    assert!(!s.exists("vol/tree") && !s.exists("vol/f"));
    assert_eq!(fs::read(&squat).unwrap(), b"not a directory\n");
    let v = util::json_object(&out.stdout);
    let hidden = v["hidden"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(hidden.len(), 2, "{v}");
    let trash = PathBuf::from(hidden[0]["trash"].as_str().unwrap());
    let name = trash.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!(".reclaim-{}.", util::euid())) && name.len() > 18,
        "another, random name: {name}"
    );
    assert_eq!(mode_of(&trash), 0o700);
    assert!(
        util::stderr_of(&out).contains("not using"),
        "-v says why: {}",
        util::stderr_of(&out)
    );
    // Restorable as asked, and found again by the next run.
    util::assert_success(&restore(&s, &[&abs(&s, "vol/f")]));
    assert_eq!(fs::read(s.path("vol/f")).unwrap(), b"f\n");
    let out = rm_ns(&s, &["--background", "--json", "vol/f"]);
    util::assert_success(&out);
    let v = util::json_object(&out.stdout);
    assert_eq!(v["hidden"][0]["trash"], trash.to_str().unwrap(), "{v}");
    util::assert_success(&reap(&s, &trash, &["--once"]));
    let out = s.cmd(&["restore", &abs(&s, "vol/tree")]).output().unwrap();
    util::assert_success(&out);
    util::assert_success(&reap(&s, &trash, &[]));
    assert_trash_empty(&trash);
    let mut after = util::snapshot_without_trash(&s.path("vol"));
    after.retain(|k, _| !k.starts_with("tree"));
    let mut want = before.clone();
    want.retain(|k, _| !util::in_trash(k));
    assert_same("vol", &want, &after);
}

#[test]
fn uses_the_highest_writable_directory_when_the_top_is_not() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    small_tree(&s, "vol/sub/deeper/tree", 19);
    let snap = s.snapshot("vol/sub/deeper/tree");
    let alt = util::trash_dir(&s.path("vol/sub"));
    let _settle = ReaperSettle { trash: alt.clone() };
    let _immutable = util::or_skip!(ImmutableGuard::new(&s, "vol"));
    let out = rm_ns(&s, &["-r", "--background", "vol/sub/deeper/tree"]);
    util::assert_success(&out);
    assert!(!s.exists("vol/sub/deeper/tree"));
    assert!(!util::trash_dir(&s.path("vol")).exists());
    let id = id_of(&alt, &abs(&s, "vol/sub/deeper/tree"));
    assert_same("entry", &snap, &snapshot(&alt.join(&id).join("data")));
    assert_eq!(mode_of(&alt), 0o700);
    // Registered: status sees it.
    let st =
        status_of(&s, &alt).unwrap_or_else(|| panic!("status does not list {}", alt.display()));
    assert_eq!(st["entries"], 1, "{st}");
    assert_reaped_all(&reap(&s, &alt, &["--json"]));
    assert_trash_empty(&alt);
}

#[test]
fn a_grace_window_that_cannot_be_kept_refuses_the_removal() {
    let s = scratch!();
    util::require_root!();
    // A tmpfs with no inode to spare: no trash (nor entry) can be made on it.
    let _vol = util::or_skip!(Volume::tmpfs_with(&s, "vol", "size=4m,nr_inodes=8"));
    s.file("vol/f", "f\n");
    let mut n = 0;
    while fs::write(s.path(format!("vol/fill{n}")), b"").is_ok() {
        n += 1;
        assert!(n < 100, "tmpfs nr_inodes not honoured");
    }
    let before = s.snapshot("vol");
    let out = rm_ns(&s, &["--background", "--grace", "1h", "vol/f"]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let line = one_line(&out);
    assert!(
        line.contains("vol/f") && line.contains("restorable"),
        "one line naming the path and why: {line}"
    );
    assert_same("vol (untouched)", &before, &s.snapshot("vol"));
    // Without a grace window nothing is promised but removal: done in the foreground.
    let out = rm_ns(&s, &["--background", "vol/f"]);
    util::assert_success(&out);
    assert!(!s.exists("vol/f"));
}

// ---------------------------------------------------------------------------------------------
// Mounts and symlinks.

#[test]
fn background_never_moves_a_mount_point_into_the_trash() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    small_tree(&s, "vol/tree", 21);
    let _inner = util::or_skip!(Volume::tmpfs(&s, "vol/tree/sub/mnt"));
    s.file("vol/tree/sub/mnt/on_inner", "keep\n");
    s.file("vol/tree/sub/mnt/d/deeper", "keep\n");
    let inner = s.snapshot("vol/tree/sub/mnt");
    let mnt = s.path("vol/tree/sub/mnt");
    let out = rm_ns(&s, &["-r", "--background", "vol/tree"]);
    let err = util::stderr_of(&out);
    eprintln!(
        "rm --background of a tree holding a mount point: {}\n{err}",
        out.status
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "status {:?}: {err}",
        out.status
    );
    assert!(
        err.contains("mount"),
        "no word about the mount point:\n{err}"
    );
    let mounts = util::mounts_under(&s.path("vol"));
    assert!(mounts.contains(&mnt), "the mount moved: {mounts:?}");
    assert!(
        mounts
            .iter()
            .all(|m| !m.starts_with(s.path("vol/.reclaim"))),
        "a mount is in the trash: {mounts:?}"
    );
    assert_same(
        "the inner file system",
        &inner,
        &s.snapshot("vol/tree/sub/mnt"),
    );
    for id in trash_entries(&t) {
        let data = t.join(&id).join("data");
        if data.exists() {
            assert!(
                !snapshot(&data).keys().any(|k| k.ends_with("sub/mnt")),
                "entry {id} holds the mount point's directory"
            );
        }
    }
    if t.exists() {
        util::assert_success(&reap(&s, &t, &[]));
    }
    assert_same(
        "the inner file system",
        &inner,
        &s.snapshot("vol/tree/sub/mnt"),
    );
}

#[test]
fn reaper_never_follows_symlinks() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    // Outside directories on another file system and on the trash's own.
    let far = s.make_outside("outside");
    let near = s.make_outside("vol/outside");
    let far_snap = s.snapshot("outside");
    let near_snap = s.snapshot("vol/outside");
    // A symlink to a directory, hidden itself.
    s.symlink("vol/link", &far);
    // A tree full of symlinks out.
    small_tree(&s, "vol/tree", 22);
    s.symlink("vol/tree/to_far", &far);
    s.symlink("vol/tree/to_near", &near);
    s.symlink("vol/tree/sub/to_near_rel", "../../outside");
    s.symlink("vol/tree/sub/to_file", far.join("file0"));
    // Trees whose data / reaping get swapped for symlinks out after the hide.
    small_tree(&s, "vol/swapped", 23);
    small_tree(&s, "vol/claimed", 24);
    let swapped_snap = s.snapshot("vol/swapped");
    let claimed_snap = s.snapshot("vol/claimed");
    let out = rm_ns(
        &s,
        &[
            "-r",
            "--background",
            "vol/link",
            "vol/tree",
            "vol/swapped",
            "vol/claimed",
        ],
    );
    util::assert_success(&out);
    let link_id = id_of(&t, &abs(&s, "vol/link"));
    assert_eq!(entry_meta(&t, &link_id)["kind"], "symlink");
    let sw = t.join(id_of(&t, &abs(&s, "vol/swapped")));
    fs::rename(sw.join("data"), s.path("vol/swapped-away")).unwrap();
    std::os::unix::fs::symlink(&near, sw.join("data")).unwrap();
    let cl = t.join(id_of(&t, &abs(&s, "vol/claimed")));
    fs::rename(cl.join("data"), s.path("vol/claimed-away")).unwrap();
    std::os::unix::fs::symlink(&far, cl.join("reaping")).unwrap();

    let out = reap(&s, &t, &["--json"]);
    util::assert_same("outside", &far_snap, &s.snapshot("outside"));
    util::assert_same("vol/outside", &near_snap, &s.snapshot("vol/outside"));
    assert_same(
        "moved-away data",
        &swapped_snap,
        &s.snapshot("vol/swapped-away"),
    );
    assert_same(
        "moved-away claimed",
        &claimed_snap,
        &s.snapshot("vol/claimed-away"),
    );
    assert_reaped_all(&out);
    assert_trash_empty(&t);
}

#[test]
fn a_trash_reached_through_a_symlink_is_refused() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let uid = util::euid().to_string();
    // Something that looks like a trash with one entry, elsewhere on the volume.
    let fake_entry = |base: &str| {
        let e = format!("{base}/20000101T000000.000000Z-1-0");
        s.file(format!("{e}/data/precious"), "precious\n");
        s.file(format!("{e}/meta.json"), "{\"version\":1}\n");
    };
    fake_entry("vol/elsewhere");
    fake_entry(&format!("vol/elsewhere2/{uid}"));
    let elsewhere = s.snapshot("vol/elsewhere");
    let elsewhere2 = s.snapshot("vol/elsewhere2");
    let check = |what: &str| {
        assert_same(what, &elsewhere, &s.snapshot("vol/elsewhere"));
        assert_same(what, &elsewhere2, &s.snapshot("vol/elsewhere2"));
    };
    for case in ["uid dir is a symlink", ".reclaim is a symlink"] {
        // Whatever the last case left (std's remove_dir_all does not follow symlinks).
        let dot = s.path("vol/.reclaim");
        match fs::symlink_metadata(&dot) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&dot).unwrap(),
            Ok(_) => fs::remove_file(&dot).unwrap(),
            Err(_) => {}
        }
        if case == "uid dir is a symlink" {
            s.mkdir("vol/.reclaim");
            fs::set_permissions(s.path("vol/.reclaim"), fs::Permissions::from_mode(0o700)).unwrap();
            s.symlink(format!("vol/.reclaim/{uid}"), s.path("vol/elsewhere"));
        } else {
            s.symlink("vol/.reclaim", s.path("vol/elsewhere2"));
        }
        let t = trash(&s);
        s.file("vol/f", "f\n");
        let out = rm_ns(&s, &["--background", "vol/f"]);
        util::assert_success(&out);
        assert!(!s.exists("vol/f"), "{case}");
        check(case);
        let out = reap(&s, &t, &[]);
        check(case);
        assert!(
            out.status.code() != Some(0) || !util::stderr_of(&out).is_empty(),
            "{case}: reap --trash through a symlink said nothing"
        );
    }
    // Nor is a directory that is not `<top>/.reclaim/<uid>` a trash.
    let out = reap(&s, &s.path("vol/elsewhere"), &[]);
    check("reap --trash of a directory that is no trash");
    assert!(
        out.status.code() != Some(0) || !util::stderr_of(&out).is_empty(),
        "reap --trash of a plain directory said nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// Reapers.

#[test]
fn reap_once_skips_a_locked_trash() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    small_tree(&s, "vol/tree", 25);
    s.file("vol/f", bytes(26, 100 * KIB as usize));
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/tree", "vol/f"]));
    let entries_snap = |t: &Path| {
        let mut snap = snapshot(t);
        snap.retain(|k, _| {
            !["lock", "reaper.json", "reaper.log"]
                .iter()
                .any(|n| k.starts_with(n))
        });
        snap
    };
    let before = entries_snap(&t);
    {
        let _lock = TrashLock::take(&t);
        let out = reap(&s, &t, &["--once", "--json"]);
        util::assert_success(&out);
        let r = util::parse_reap_report(&out.stdout);
        assert_eq!(r["entries_freed"], 0, "{r}");
        let skipped: Vec<&str> = r["skipped_locked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(skipped, [t.to_str().unwrap()], "{r}");
        assert_same("locked trash", &before, &entries_snap(&t));
        // Without --json, it says so too.
        let out = reap(&s, &t, &["--once"]);
        util::assert_success(&out);
        let said = format!("{}{}", util::stdout_of(&out), util::stderr_of(&out));
        assert!(
            said.contains("lock") || said.contains(t.to_str().unwrap()),
            "nothing said about the lock:\n{said}"
        );
        assert_same("locked trash", &before, &entries_snap(&t));
    }
    assert_reaped_all(&reap(&s, &t, &["--json"]));
    assert_trash_empty(&t);
}

#[test]
fn reap_frees_debris_and_claimed_entries() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    let top = s.path("vol");
    s.file("vol/neighbour", "stays\n");
    let rest = snapshot_without_trash(&top);
    let free0 = free_bytes(&top);
    s.file("vol/gone", "gone\n");
    s.file("vol/plain", bytes(27, MIB as usize));
    small_tree(&s, "vol/claimed", 28);
    s.file("vol/claimed/more", bytes(29, MIB as usize));
    util::assert_success(&rm_ns(
        &s,
        &["-r", "--background", "vol/gone", "vol/plain", "vol/claimed"],
    ));
    // Only meta.json: the debris of a hide killed before its rename.
    let gone = t.join(id_of(&t, &abs(&s, "vol/gone")));
    fs::remove_file(gone.join("data")).unwrap();
    // Claimed by a reaper that was killed.
    let claimed = t.join(id_of(&t, &abs(&s, "vol/claimed")));
    fs::rename(claimed.join("data"), claimed.join("reaping")).unwrap();
    // An entry directory with nothing in it at all.
    let empty = t.join("20000101T000000.000000Z-1-0");
    fs::create_dir(&empty).unwrap();
    let out = reap(&s, &t, &["--json"]);
    let r = assert_reaped_all(&out);
    assert_trash_empty(&t);
    assert_same("vol", &rest, &snapshot_without_trash(&top));
    assert!(free_bytes(&top) + 64 * KIB >= free0, "space not back");
    // The plain file and the claimed tree's files (1 MiB each at least) are counted.
    assert!(r["bytes_freed"].as_u64().unwrap() >= 2 * MIB, "{r}");
}

// ---------------------------------------------------------------------------------------------
// Durability.

#[test]
fn durable_removes_in_every_mode() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/neighbour", "stays\n");
    let rest = snapshot_without_trash(&s.path("vol"));
    for (i, mode) in ["--now", "--background", "--wait"].iter().enumerate() {
        let rel = format!("vol/t{i}");
        small_tree(&s, &rel, 30 + i as u64);
        let out = rm_ns(&s, &["-r", "--durable", mode, &rel]);
        util::assert_success(&out);
        assert!(!s.exists(&rel), "{mode}");
    }
    util::assert_success(&reap(&s, &t, &[]));
    assert_trash_empty(&t);
    assert_same("vol", &rest, &snapshot_without_trash(&s.path("vol")));
}

#[test]
fn durable_syncs_each_directory_once_not_each_file() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    if StdCommand::new("strace").arg("-V").output().is_err() {
        util::skip!("no strace");
    }
    let names: Vec<String> = (1..=100).map(|i| format!("f{i}")).collect();
    let count_syncs = |durable: bool| -> usize {
        for n in &names {
            s.file(format!("vol/d/{n}"), n.as_bytes());
        }
        let mut args: Vec<&str> = Vec::new();
        if durable {
            args.push("--durable");
        }
        args.extend(names.iter().map(String::as_str));
        let _ = s.rm_in("vol/d", &args); // checks the paths
        let trace = s.path("strace.out");
        let out = StdCommand::new("strace")
            .env("RECLAIM_CONFIG", "")
            .env("RECLAIM_UNDER", s.root())
            .args(["-f", "-qq", "-e", "trace=fsync,fdatasync,syncfs,sync", "-o"])
            .arg(&trace)
            .arg(util::reclaim_bin())
            .arg("rm")
            .args(&args)
            .current_dir(s.path("vol/d"))
            .env(NO_SPAWN, "1")
            .env("XDG_STATE_HOME", util::state_home(&s))
            .output()
            .unwrap();
        util::assert_success(&out);
        for n in &names {
            assert!(!s.exists(format!("vol/d/{n}")));
        }
        let text = fs::read_to_string(&trace).unwrap();
        fs::remove_file(&trace).unwrap();
        text.lines()
            .filter(|l| {
                ["fsync(", "fdatasync(", "syncfs(", "sync("]
                    .iter()
                    .any(|c| l.contains(c))
            })
            .count()
    };
    let plain = count_syncs(false);
    let durable = count_syncs(true);
    eprintln!("syncs for 100 files: {plain} plain, {durable} durable");
    assert!(durable >= 1, "--durable made no fsync");
    assert!(
        durable <= 5,
        "--durable made {durable} syncs for 100 files in one directory"
    );
}

// ---------------------------------------------------------------------------------------------
// More of the contract: names that are not UTF-8, the running reaper in `status` (a plain
// `reap` with grace entries: reap.rs).

#[test]
fn a_name_that_is_not_utf8_is_recorded_exactly_and_restored() {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    let rel = std::ffi::OsString::from_vec(b"vol/d/caf\xe9\nline".to_vec());
    s.file(&rel, "bytes\n");
    let before = snapshot_without_trash(&s.path("vol"));
    let out = s
        .rm(&[std::ffi::OsStr::new("--background"), &rel])
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(!s.exists(&rel));
    let ids = trash_entries(&t);
    assert_eq!(ids.len(), 1);
    let m = entry_meta(&t, &ids[0]);
    let hex = m["original_hex"]
        .as_str()
        .unwrap_or_else(|| panic!("no original_hex for a name that is not UTF-8: {m}"));
    let want: String = s
        .path(&rel)
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(hex.to_ascii_lowercase(), want, "{m}");
    assert!(m["original"].is_string(), "{m}");
    util::assert_success(&restore(&s, &[&ids[0]]));
    assert_same("vol", &before, &snapshot_without_trash(&s.path("vol")));
}

#[test]
fn status_shows_the_running_reaper() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    for i in 0..400 {
        s.file(format!("vol/tree/d{}/f{i}", i % 8), "");
    }
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/tree"]));
    // Slow on purpose: 400 unlinks at 100 a second.
    let _ = s.cmd(&["reap", "--trash", t.to_str().unwrap()]);
    let mut child = StdCommand::new(util::reclaim_bin())
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .current_dir(s.root())
        .args(["reap", "--trash", t.to_str().unwrap(), "--iops", "100"])
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(&s))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let seen = loop {
        let st = status_of(&s, &t);
        // (The reaper claims the entry, then says so in reaper.json; status reads both.)
        if let Some(st) = &st {
            if !st["reaper"].is_null() && st["items"][0]["state"] == "reaping" {
                break st.clone();
            }
        }
        if child.try_wait().unwrap().is_some() || t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("status never showed the reaper: {st:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    let r = &seen["reaper"];
    assert_eq!(r["pid"], child.id(), "{seen}");
    assert!(r["state"].as_str().is_some_and(|s| !s.is_empty()), "{seen}");
    assert!(
        r.get("rate_bps").is_some() && r.get("eta_s").is_some(),
        "{seen}"
    );
    assert!(r.get("entry").is_some(), "{seen}");
    util::assert_success(&reap(&s, &t, &["--fast"]));
    assert_trash_empty(&t);
}

// ---------------------------------------------------------------------------------------------
// Defaults from the config file and the environment.

#[test]
fn mode_background_from_the_config_file_or_the_environment() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/a", "a\n");
    s.file("vol/b", "b\n");
    s.file("vol/c", "c\n");
    let cfg = s.file("reclaim.toml", "[rm]\nmode = \"background\"\n");
    let o = s
        .rm(&["vol/a"])
        .env("RECLAIM_CONFIG", &cfg)
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&o);
    let o = s
        .rm(&["vol/b"])
        .env("RECLAIM_MODE", "background")
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&o);
    assert_eq!(trash_entries(&t).len(), 2, "both hidden, not removed");
    // A flag wins over both.
    let o = s
        .rm(&["--now", "vol/c"])
        .env("RECLAIM_CONFIG", &cfg)
        .env("RECLAIM_MODE", "background")
        .output()
        .unwrap();
    util::assert_success(&o);
    assert_eq!(trash_entries(&t).len(), 2, "--now removed it directly");
    assert!(!s.exists("vol/c"));
    // A bad value in the environment is a usage error naming it.
    let o = s
        .rm(&["vol/nothing"])
        .env("RECLAIM_MAX_LATENCY", "soon")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        util::stderr_of(&o).contains("soon"),
        "{}",
        util::stderr_of(&o)
    );
    util::assert_success(&run_ns(&s, &["reap", "--trash", t.to_str().unwrap()]));
}

/// The day people delete things most is the day the disk is full: no room for the trash's
/// record must not mean no removal.
#[test]
fn a_full_file_system_falls_back_to_removing_now() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    s.file("vol/neighbour", "stays\n");
    // Fill the 16 MiB tmpfs to the last block.
    let filler = s.path("vol/filler");
    {
        use std::io::Write;
        let mut f = fs::File::create(&filler).unwrap();
        let chunk = vec![1u8; 64 * KIB as usize];
        while f.write_all(&chunk).is_ok() {}
        let one = [1u8; 512];
        while f.write_all(&one).is_ok() {}
    }
    let o = rm_ns(&s, &["--background", "vol/filler"]);
    util::assert_success(&o);
    assert!(!s.exists("vol/filler"), "removed in the foreground");
    let err = util::stderr_of(&o);
    assert!(
        err.contains("filler") && err.contains("removing it now"),
        "one line naming the path and why: {err}"
    );
    assert!(s.exists("vol/neighbour"));
}

/// What the systemd unit runs: `reap --watch` stays, and frees entries as they arrive, also
/// ones whose grace window ends while it waits.
#[test]
fn reap_watch_frees_entries_as_they_arrive() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/neighbour", "stays\n");
    s.file("vol/a", "a\n");
    s.file("vol/b", "b\n");
    small_tree(&s, "vol/tree", 5);
    util::assert_success(&rm_ns(&s, &["--background", "vol/a"]));
    // Plain std Command: the watcher runs until killed below.
    let mut watcher = StdCommand::new(util::reclaim_bin())
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .current_dir(s.root())
        .args(["reap", "--watch", "--trash", t.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let wait_empty = |what: &str| {
        let t0 = std::time::Instant::now();
        while !trash_entries(&t).is_empty() {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{what}: {:?}",
                trash_entries(&t)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_empty("the entry present at start");
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/tree"]));
    wait_empty("an entry hidden while it watches");
    util::assert_success(&rm_ns(&s, &["--background", "--grace", "1s", "vol/b"]));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(trash_entries(&t).len(), 1, "kept through its grace window");
    wait_empty("an entry whose grace ended");
    assert!(
        watcher.try_wait().unwrap().is_none(),
        "--watch keeps running"
    );
    watcher.kill().unwrap();
    let out = watcher.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        !log.contains("cannot") && log.contains(": freed 1 entry"),
        "one line per pass that freed something, no errors:\n{log}"
    );
    assert!(
        util::wait_trash_idle(&t, Duration::from_secs(30), true),
        "the killed watcher left the lock or entries"
    );
    assert!(s.exists("vol/neighbour"));
}

#[test]
fn status_count_walks_pending_trees() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    small_tree(&s, "vol/tree", 9);
    let (tree_bytes, _) = util::allocated_bytes(&s.path("vol/tree"));
    util::assert_success(&rm_ns(&s, &["-r", "--background", "vol/tree"]));
    let item = |args: &[&str]| {
        let o = run_ns(&s, args);
        util::assert_success(&o);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let tr = v["trashes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["trash"] == t.to_str().unwrap())
            .cloned()
            .unwrap_or_else(|| panic!("no {} in {v}", t.display()));
        tr["items"][0].clone()
    };
    let plain = item(&["status", "--json"]);
    assert_eq!(plain["allocated"], Value::Null, "{plain}");
    let counted = item(&["status", "--json", "--count"]);
    // small_tree: a, big, sub/c, sub/deeper/d, sub/link, sub/fifo (directories not counted).
    assert_eq!(counted["files"], 6, "{counted}");
    assert_eq!(counted["allocated"].as_u64(), Some(tree_bytes), "{counted}");
    // Learned once, kept: the entry's record now has the size, so a plain status (and a
    // reaper's progress) knows it without a walk.
    let plain = item(&["status", "--json"]);
    assert_eq!(plain["allocated"].as_u64(), Some(tree_bytes), "{plain}");
    assert_eq!(plain["files"], 6, "{plain}");
    util::assert_success(&run_ns(&s, &["reap", "--trash", t.to_str().unwrap()]));
}

/// Trashes of the first layout (`<top>/.reclaim/<uid>/`, records of version 1) keep working:
/// `status` lists their entries, `restore` puts them back, `reap` frees them; nothing new is
/// ever made there.
#[test]
fn trashes_of_the_first_layout_are_still_read() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let uid = util::euid();
    let old = s.mkdir(format!("vol/.reclaim/{uid}"));
    fs::set_permissions(s.path("vol/.reclaim"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&old, fs::Permissions::from_mode(0o700)).unwrap();
    s.mkdir("vol/d");
    let d = fs::metadata(s.path("vol/d")).unwrap();
    // What the first version wrote: two entries, a file and a tree.
    for (i, (name, tree)) in [("f", false), ("t", true)].iter().enumerate() {
        let id = format!("20261101T000000.00000{i}Z-1-{i}");
        let e = s.mkdir(format!("vol/.reclaim/{uid}/{id}"));
        fs::set_permissions(&e, fs::Permissions::from_mode(0o700)).unwrap();
        let original = abs(&s, &format!("vol/d/{name}"));
        let meta = serde_json::json!({
            "version": 1, "id": id, "original": original,
            "parent_dev": d.dev(), "parent_ino": d.ino(), "uid": uid,
            "created_unix": 1.0e9, "grace_until_unix": null,
            "kind": if *tree { "dir" } else { "file" }, "allocated": null, "files": null,
            "pacing": {"fast": false}
        });
        fs::write(e.join("meta.json"), meta.to_string()).unwrap();
        if *tree {
            small_tree(&s, &format!("vol/.reclaim/{uid}/{id}/data"), 40);
        } else {
            fs::write(e.join("data"), b"old file\n").unwrap();
        }
    }
    let st = status_of(&s, &old).unwrap_or_else(|| panic!("status does not list {old:?}"));
    assert_eq!(st["entries"], 2, "{st}");
    util::assert_success(&restore(&s, &[&abs(&s, "vol/d/f")]));
    assert_eq!(fs::read(s.path("vol/d/f")).unwrap(), b"old file\n");
    assert_reaped_all(&reap(&s, &old, &["--json"]));
    assert_trash_empty(&old);
    assert!(!s.exists("vol/d/t"));
    // New entries go to the current layout, never into the old one.
    let out = rm_ns(&s, &["--background", "vol/d/f"]);
    util::assert_success(&out);
    assert_trash_empty(&old);
    assert_eq!(trash_entries(&trash(&s)).len(), 1);
}

/// For scripts, `--background` prints each entry's ID on stdout, one a line in the order of
/// the arguments (`id=$(reclaim rm --background X)`); on a terminal, the paragraph that names
/// each path, its ID and the `reclaim restore` that undoes it.
#[test]
fn background_prints_each_entry_id_for_scripts_and_a_paragraph_on_a_terminal() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    s.file("vol/a", "a\n");
    s.file("vol/b", "b\n");
    let o = rm_ns(&s, &["--background", "--grace", "1h", "vol/a", "vol/b"]);
    util::assert_success(&o);
    let t = trash(&s);
    let ids: Vec<String> = util::stdout_of(&o).lines().map(String::from).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(ids[0], id_of(&t, &abs(&s, "vol/a")));
    assert_eq!(ids[1], id_of(&t, &abs(&s, "vol/b")));
    assert_eq!(
        util::stderr_of(&o),
        "",
        "nothing but the IDs off a terminal"
    );
    // On a terminal: the paragraph, with the restore command.
    s.file("vol/c", "c\n");
    let seen = util::on_a_terminal(&s, "rm --background --grace 1h vol/c");
    let id = id_of(&t, &abs(&s, "vol/c"));
    assert!(
        seen.contains("hid 1 path") && seen.contains(&format!("reclaim restore {id}")),
        "{seen}"
    );
    for id in ids {
        util::assert_success(&restore(&s, &[&id]));
    }
}
