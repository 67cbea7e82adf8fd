//! `reclaim reap` frees what can be freed now and exits: it waits for a reaper that holds a
//! trash instead of skipping it, leaves entries in their grace window (and says until when),
//! and `--json` is one object whatever happened. `reclaim rm --background` says each entry's
//! ID, and the `reclaim restore` command only where a grace window keeps it restorable.
//!
//! As in trash.rs: a tmpfs mounted in the test's scratch directory (root only; skipped
//! otherwise), `RECLAIM_NO_SPAWN=1` so that no detached reaper starts behind the test's back.

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{self, scratch, trash_entries, Scratch, NO_SPAWN};

/// This process's trash on `root/vol`.
pub(crate) fn trash(s: &Scratch) -> PathBuf {
    util::trash_dir(&s.path("vol"))
}

/// `reclaim ARGS` in the scratch root, no reaper spawned.
pub(crate) fn run_ns(s: &Scratch, args: &[&str]) -> Output {
    s.cmd(args)
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(s))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// `reclaim reap --trash T EXTRA...`.
pub(crate) fn reap(s: &Scratch, t: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["reap", "--trash", t.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_ns(s, &args)
}

/// `reclaim rm ARGS` (no reaper spawned), which must succeed.
pub(crate) fn rm_ok(s: &Scratch, args: &[&str]) -> Output {
    let mut all = vec!["rm"];
    all.extend_from_slice(args);
    let o = run_ns(s, &all);
    util::assert_success(&o);
    o
}

/// A few files and directories under `root/rel`.
pub(crate) fn tree(s: &Scratch, rel: &str) {
    for i in 0..12 {
        s.file(format!("{rel}/d{}/f{i}", i % 3), format!("{i}\n"));
    }
}

/// The entry ids of `--json`'s `hidden` list, by path.
pub(crate) fn hidden(v: &Value) -> Vec<(String, String, Option<f64>)> {
    v["hidden"]
        .as_array()
        .unwrap_or_else(|| panic!("no hidden list: {v}"))
        .iter()
        .map(|h| {
            (
                h["path"].as_str().unwrap().to_owned(),
                h["id"].as_str().unwrap().to_owned(),
                h["restorable_until_unix"].as_f64(),
            )
        })
        .collect()
}

#[test]
fn reap_waits_for_the_reaper_holding_the_trash_then_frees() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    tree(&s, "vol/tree");
    s.file("vol/f", "f\n");
    rm_ok(&s, &["-r", "--background", "vol/tree", "vol/f"]);
    assert_eq!(trash_entries(&t).len(), 2);
    // Another "reaper": a process holding the trash's lock for a second and a half.
    let mut holder = StdCommand::new("flock")
        .args(["-x", t.join("lock").to_str().unwrap(), "sleep", "1.5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("flock(1) runs");
    let t0 = Instant::now();
    while !util::trash_locked(&t) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "flock never took the lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = reap(&s, &t, &["--json"]);
    let took = t0.elapsed();
    let released = holder.try_wait().unwrap().is_some();
    let _ = holder.kill();
    let _ = holder.wait();
    util::assert_success(&out);
    let r = util::parse_reap_report(&out.stdout);
    assert!(
        released,
        "reap returned while the other holder still had the lock ({took:?}): {r}"
    );
    assert_eq!(r["entries_freed"], 2, "{r}");
    assert_eq!(r["remaining"], 0, "{r}");
    assert_eq!(r["skipped_locked"], Value::Array(vec![]), "{r}");
    assert!(trash_entries(&t).is_empty(), "{:?}", trash_entries(&t));
    assert!(
        !util::stderr_of(&out).contains("skipped"),
        "{}",
        util::stderr_of(&out)
    );
}

#[test]
fn reap_leaves_grace_entries_and_says_until_when() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    s.file("vol/keep", "keep\n");
    s.file("vol/go", "go\n");
    rm_ok(&s, &["--background", "--grace", "1h", "vol/keep"]);
    rm_ok(&s, &["--background", "vol/go"]);
    // Not a wait of an hour: the command would time out (60 s) and fail.
    let t0 = Instant::now();
    let out = reap(&s, &t, &[]);
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    util::assert_success(&out);
    let err = util::stderr_of(&out);
    assert!(err.contains("freed 1 entry (1 file,"), "{err}");
    assert!(
        err.contains("1 entry waiting, restorable until 20"),
        "says what waits and until when: {err}"
    );
    assert_eq!(trash_entries(&t).len(), 1, "the grace entry stays");
    let out = reap(&s, &t, &["--json"]);
    util::assert_success(&out);
    let r = util::parse_reap_report(&out.stdout);
    assert_eq!(r["entries_freed"], 0, "{r}");
    assert_eq!(r["waiting"], 1, "{r}");
    assert_eq!(r["remaining"], 1, "{r}");
    assert_eq!(r["entries_failed"], 0, "{r}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let until = r["last_grace_unix"]
        .as_f64()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        (until - now - 3600.0).abs() < 120.0,
        "{until} vs {now}: {r}"
    );
    // Still restorable, as said.
    util::assert_success(&run_ns(
        &s,
        &["restore", s.path("vol/keep").to_str().unwrap()],
    ));
    assert_eq!(std::fs::read(s.path("vol/keep")).unwrap(), b"keep\n");
}

#[test]
fn reap_json_is_one_object_on_success_and_on_failure() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    tree(&s, "vol/tree");
    rm_ok(&s, &["-r", "--background", "vol/tree"]);
    let out = reap(&s, &t, &["--json"]);
    util::assert_success(&out);
    let r = util::parse_reap_report(&out.stdout);
    assert_eq!(r["entries_freed"], 1, "{r}");
    assert_eq!(r["files"], 12, "{r}");
    assert!(r["bytes_freed"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(
        (r["waiting"].as_u64(), r["entries_failed"].as_u64()),
        (Some(0), Some(0)),
        "{r}"
    );
    assert!(r.get("error").is_none(), "{r}");

    // An entry that cannot be freed (a file where an entry directory should be: damaged), next
    // to one that can: the good one is freed, the object says what failed, exit 1.
    s.file("vol/f", "f\n");
    rm_ok(&s, &["--background", "vol/f"]);
    std::fs::write(t.join("20200101T000000.000000Z-1-0"), "not an entry\n").unwrap();
    let out = reap(&s, &t, &["--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let r = util::parse_reap_report(&out.stdout);
    assert_eq!(r["entries_freed"], 1, "{r}");
    assert_eq!(r["entries_failed"], 1, "{r}");
    let errors = r["errors"].as_array().unwrap();
    assert!(
        errors.len() == 1 && errors[0].to_string().contains("damaged"),
        "{r}"
    );
    std::fs::remove_file(t.join("20200101T000000.000000Z-1-0")).unwrap();

    // The run as a whole fails (no trash there): still one object, with the reason.
    let out = run_ns(
        &s,
        &[
            "reap",
            "--json",
            "--trash",
            s.path("vol/none").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let r = util::parse_reap_report(&out.stdout);
    assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{r}");
}

#[test]
fn background_says_entry_ids_and_restore_only_with_grace() {
    let s = scratch!();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    for f in ["a", "b", "c", "d", "e", "f"] {
        s.file(format!("vol/{f}"), format!("{f}\n"));
    }
    // Off a terminal and without -v: nothing on stderr (scripts, cron).
    let o = rm_ok(&s, &["--background", "vol/a"]);
    assert_eq!(util::stderr_of(&o), "", "silent off a terminal");

    // -v: each entry ID; no grace window, so no restore command is promised.
    let o = rm_ok(&s, &["--background", "-v", "vol/b", "vol/c"]);
    let err = util::stderr_of(&o);
    let ids = trash_entries(&t);
    assert_eq!(ids.len(), 3);
    for (path, id) in [("vol/b", &ids[1]), ("vol/c", &ids[2])] {
        assert!(
            err.lines()
                .any(|l| l.contains(path) && l.contains(id.as_str())),
            "{path}'s entry {id} not said: {err}"
        );
    }
    assert!(err.contains("hid 2 paths"), "{err}");
    assert!(
        !err.contains("restore"),
        "no restore promised without --grace: {err}"
    );

    // With a grace window: the exact command, and it works.
    let o = rm_ok(&s, &["--background", "-v", "--grace", "10min", "vol/d"]);
    let err = util::stderr_of(&o);
    let id = trash_entries(&t)
        .into_iter()
        .find(|i| !ids.contains(i))
        .unwrap();
    let command = format!("`reclaim restore {id}` undoes it until 20");
    assert!(err.contains(&command), "{command} not in: {err}");
    assert!(err.contains("hid 1 path in"), "{err}");
    util::assert_success(&run_ns(&s, &["restore", &id]));
    assert_eq!(std::fs::read(s.path("vol/d")).unwrap(), b"d\n");

    // --json: the IDs in `hidden`, a restorable time only with a grace window.
    let o = rm_ok(&s, &["--background", "--json", "vol/e"]);
    let h = hidden(&util::json_object(&o.stdout));
    assert_eq!(h.len(), 1);
    assert!(
        h[0].0.ends_with("vol/e") && util::looks_like_entry_id(&h[0].1),
        "{h:?}"
    );
    assert_eq!(h[0].2, None, "{h:?}");
    assert!(trash_entries(&t).contains(&h[0].1));
    let o = rm_ok(&s, &["--background", "--json", "--grace", "10min", "vol/f"]);
    let h = hidden(&util::json_object(&o.stdout));
    assert!(h[0].2.is_some(), "{h:?}");
    assert_eq!(util::stderr_of(&o), "");

    // On a terminal, without -v: said too.
    s.file("vol/g", "g\n");
    let screen = util::or_skip!(on_a_terminal(
        &s,
        &["rm", "--background", "--grace", "5min", "vol/g"]
    ));
    assert!(
        screen.contains("hid 1 path in") && screen.contains("`reclaim restore 20"),
        "{screen}"
    );
}

/// What `reclaim ARGS` (no reaper spawned) writes on a pseudo-terminal, through `script(1)`;
/// Err (for a skip of that check) if there is no `script`.
fn on_a_terminal(s: &Scratch, args: &[&str]) -> Result<String, String> {
    let mut line = shell_word(util::reclaim_bin().to_str().unwrap());
    for a in args {
        line.push(' ');
        line.push_str(&shell_word(a));
    }
    let o = StdCommand::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .current_dir(s.root())
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(s))
        .stdin(Stdio::null())
        .output();
    match o {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => panic!(
            "script {line}: {}\n{}{}",
            o.status,
            util::stdout_of(&o),
            util::stderr_of(&o)
        ),
        Err(e) => Err(format!(
            "the check on a terminal: cannot run script(1): {e}"
        )),
    }
}

/// `w` quoted for sh.
fn shell_word(w: &str) -> String {
    format!("'{}'", w.replace('\'', r"'\''"))
}
