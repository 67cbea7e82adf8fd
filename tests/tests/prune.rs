//! `reclaim prune`: the plan is printed first and obeyed exactly; keep rules are never
//! violated; free-space targets count what the trash still holds, so a second run right after
//! the first removes nothing more while the reaper lags; nothing but direct entries of the
//! named directories is ever touched. (The policy itself is property-tested in
//! src/engine/prune/policy/tests.rs.)

use std::path::Path;
use std::process::Command as StdCommand;

use serde_json::Value;

use crate::util::{self, scratch, Scratch, Volume};

const MIB: u64 = 1 << 20;
const DAY: i64 = 86_400;

/// `n` backups `vol/b/backup-NN` (directories with one file of `size` bytes), backup-00 the
/// oldest, one day apart, the newest one day old.
fn backups(s: &Scratch, n: i64, size: usize) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for i in 0..n {
        let d = format!("vol/b/backup-{i:02}");
        s.mkdir(&d);
        s.file(format!("{d}/data"), vec![7u8; size]);
        set_mtime(&s.path(&d), now - (n - i) * DAY);
    }
}

fn set_mtime(p: &Path, t: i64) {
    let ok = StdCommand::new("touch")
        .arg("-d")
        .arg(format!("@{t}"))
        .arg(p)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn prune(s: &Scratch, args: &[&str]) -> std::process::Output {
    let mut all = vec!["prune"];
    all.extend_from_slice(args);
    s.cmd(&all)
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_NO_SPAWN", "1")
        .env("XDG_STATE_HOME", s.path("state"))
        .output()
        .unwrap()
}

fn names(s: &Scratch, rel: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(s.path(rel))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn reap(s: &Scratch) {
    let o = s
        .cmd(&["reap", "--trash", "vol/.reclaim-0"])
        .env("RECLAIM_CONFIG", "")
        .output()
        .unwrap();
    util::assert_success(&o);
}

fn json(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", util::stdout_of(o)))
}

#[test]
fn dry_run_prints_the_plan_and_removes_nothing() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    backups(&s, 5, 10);
    let before = s.snapshot("vol");
    let o = prune(&s, &["--keep-last", "2", "--dry-run", "vol/b"]);
    util::assert_success(&o);
    let out = util::stdout_of(&o);
    let lines = |w: &str| out.lines().filter(|l| l.starts_with(w)).count();
    assert_eq!(lines("REMOVE "), 3, "{out}");
    assert_eq!(lines("keep "), 2, "{out}");
    assert!(
        out.contains("backup-04") && out.contains("dry run"),
        "{out}"
    );
    util::assert_same("dry run", &before, &s.snapshot("vol"));
}

#[test]
fn keep_last_and_older_than_remove_exactly_the_plan_through_the_trash() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    backups(&s, 6, 1000);
    s.file("vol/b/.hidden-old", "dotfiles are not candidates");
    set_mtime(&s.path("vol/b/.hidden-old"), 1_000_000);
    let o = prune(
        &s,
        &[
            "--keep-last",
            "2",
            "--older-than",
            "3d12h",
            "--json",
            "vol/b",
        ],
    );
    util::assert_success(&o);
    let v = json(&o);
    let removed: Vec<&str> = v["plan"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["remove"] == true)
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    // Ages 1d (backup-05) to 6d (backup-00): older than 3d12h are 02, 01, 00.
    assert_eq!(
        removed,
        ["vol/b/backup-02", "vol/b/backup-01", "vol/b/backup-00"]
    );
    assert_eq!(v["result"]["hidden"].as_array().unwrap().len(), 3);
    assert_eq!(
        names(&s, "vol/b"),
        [".hidden-old", "backup-03", "backup-04", "backup-05"]
    );
    reap(&s);
    assert!(names(&s, "vol/.reclaim-0").iter().all(|n| n == "lock"));
}

#[test]
fn refuses_a_plan_that_removes_everything() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    backups(&s, 3, 10);
    let before = s.snapshot("vol");
    let o = prune(&s, &["--max-total", "0", "vol/b"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        util::stderr_of(&o).contains("--allow-empty"),
        "{}",
        util::stderr_of(&o)
    );
    util::assert_same("refused", &before, &s.snapshot("vol"));
    let o = prune(&s, &["--max-total", "0", "--allow-empty", "--now", "vol/b"]);
    util::assert_success(&o);
    assert!(names(&s, "vol/b").is_empty());
}

#[test]
fn no_rule_is_a_usage_error() {
    let s = scratch!();
    s.mkdir("b");
    let o = prune(&s, &["b"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(util::stderr_of(&o).contains("no rule"));
}

#[test]
fn symlink_entries_are_removed_never_followed() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let outside = s.make_outside("outside");
    let before = s.snapshot("outside");
    backups(&s, 2, 10);
    std::os::unix::fs::symlink(&outside, s.path("vol/b/backup-link")).unwrap();
    let o = StdCommand::new("touch")
        .args(["-h", "-d", "@1000000"])
        .arg(s.path("vol/b/backup-link"))
        .status()
        .unwrap();
    assert!(o.success());
    // The link's name is not of the backups' shape: chosen by --match.
    let o = prune(
        &s,
        &["--keep-last", "2", "--match", "backup-*", "--now", "vol/b"],
    );
    util::assert_success(&o);
    assert_eq!(names(&s, "vol/b"), ["backup-00", "backup-01"]);
    util::assert_same("outside", &before, &s.snapshot("outside"));
}

#[test]
fn policy_comes_from_the_config_file_and_flags_override_it() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    backups(&s, 5, 10);
    let cfg = s.file(
        "reclaim.toml",
        format!(
            "[prune.nightly]\ndirs = [\"{}\"]\nkeep_last = 3\n",
            s.path("vol/b").display()
        ),
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["prune", "--policy", "nightly", "--dry-run", "--json"];
        args.extend_from_slice(extra);
        let o = s
            .cmd(&args)
            .env("RECLAIM_CONFIG", &cfg)
            .env("RECLAIM_NO_SPAWN", "1")
            .output()
            .unwrap();
        util::assert_success(&o);
        json(&o)["remove_count"].as_u64().unwrap()
    };
    assert_eq!(run(&[]), 2);
    assert_eq!(run(&["--keep-last", "1"]), 4);
    let o = s
        .cmd(&["prune", "--policy", "nope", "--dry-run"])
        .env("RECLAIM_CONFIG", &cfg)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        util::stderr_of(&o).contains("nightly"),
        "lists the known policies"
    );
    let bad = s.file("bad.toml", "[rm]\nmax_latncy = \"5ms\"\n");
    let o = s
        .cmd(&["status"])
        .env("RECLAIM_CONFIG", &bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        util::stderr_of(&o).contains("max_latncy"),
        "{}",
        util::stderr_of(&o)
    );
}

/// The field's failure of df-based scripts: the space of what was removed comes back only as
/// the reaper frees it, so a second run must count what is still pending in the trash.
#[test]
fn keep_free_counts_space_still_pending_in_the_trash() {
    let s = scratch!();
    util::require_root!();
    let _vol = util::or_skip!(Volume::ext4(&s, "vol", 256 * MIB, 1024));
    backups(&s, 8, 16 * MIB as usize);
    let st = rustix::fs::statvfs(s.path("vol").as_path()).unwrap();
    let avail = st.f_bavail * st.f_frsize;
    // Free space wanted: what is free now plus 3.5 backups: the 4 oldest must go, no more.
    let want = (avail + 3 * 16 * MIB + 8 * MIB).to_string();
    let o = prune(&s, &["--keep-free", &want, "--json", "vol/b"]);
    util::assert_success(&o);
    let v = json(&o);
    assert_eq!(v["remove_count"], 4, "{v}");
    assert_eq!(
        names(&s, "vol/b"),
        ["backup-04", "backup-05", "backup-06", "backup-07"]
    );
    // Not reaped yet (no reaper was started): the space is still allocated, in the trash.
    let o = prune(&s, &["--keep-free", &want, "--json", "vol/b"]);
    util::assert_success(&o);
    assert_eq!(json(&o)["remove_count"], 0, "pending space counted");
    reap(&s);
    let o = prune(&s, &["--keep-free", &want, "--json", "vol/b"]);
    util::assert_success(&o);
    assert_eq!(json(&o)["remove_count"], 0, "freed space counted");
    assert_eq!(names(&s, "vol/b").len(), 4);
    // A target out of reach: everything removable goes (the newest stays, by --keep-last),
    // and stderr says the target is not met; still exit 0.
    let o = prune(
        &s,
        &[
            "--keep-free",
            "99%",
            "--keep-last",
            "1",
            "--dry-run",
            "vol/b",
        ],
    );
    util::assert_success(&o);
    assert!(
        util::stderr_of(&o).contains("--keep-free not reachable"),
        "{}",
        util::stderr_of(&o)
    );
}

/// `n` backups `rel/backup-NN` as [`backups`] makes them, in any directory (no volume: for
/// dry runs, which remove nothing and need no trash).
fn backups_in(s: &Scratch, rel: &str, ages_days: &[f64], size: usize) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for (i, age) in ages_days.iter().enumerate() {
        let d = format!("{rel}/backup-{i:02}");
        s.mkdir(&d);
        s.file(format!("{d}/data"), vec![7u8; size]);
        set_mtime(&s.path(&d), now - (age * DAY as f64) as i64);
    }
}

#[test]
fn dash_n_is_dry_run() {
    let s = scratch!();
    backups_in(&s, "b", &[3.0, 2.0, 1.0], 10);
    let before = s.snapshot("b");
    let o = prune(&s, &["-n", "--keep-last", "1", "b"]);
    util::assert_success(&o);
    let out = util::stdout_of(&o);
    assert!(
        out.contains("plan: remove 2 of 3 entries") && out.contains("dry run, nothing removed"),
        "{out}"
    );
    util::assert_same("-n", &before, &s.snapshot("b"));
    let o = prune(&s, &["-n", "--json", "--keep-last", "1", "b"]);
    util::assert_success(&o);
    assert_eq!(json(&o)["dry_run"], true);
    util::assert_same("-n --json", &before, &s.snapshot("b"));
    // The help names it, next to --dry-run.
    let o = util::reclaim().args(["prune", "--help"]).output().unwrap();
    assert!(
        util::stdout_of(&o).contains("-n, --dry-run"),
        "{}",
        util::stdout_of(&o)
    );
}

/// Sizes are measured and shown whatever the rules (before, the column was blank unless a size
/// rule was given): a directory as the engine's dry run counts it, a file by its blocks.
#[test]
fn the_plan_shows_every_size_without_a_size_rule() {
    let s = scratch!();
    backups_in(&s, "b", &[3.0, 2.0, 1.0], 256 << 10);
    s.file("b/single.tar", vec![1u8; 128 << 10]);
    set_mtime(&s.path("b/single.tar"), 1_000_000_000);
    let o = prune(
        &s,
        &[
            "--keep-last",
            "2",
            "--match",
            "*",
            "--dry-run",
            "--json",
            "b",
        ],
    );
    util::assert_success(&o);
    let v = json(&o);
    let plan = v["plan"].as_array().unwrap();
    assert_eq!(plan.len(), 4, "{v}");
    let mut removing = 0;
    for e in plan {
        let allocated = e["allocated"].as_u64().unwrap_or_else(|| panic!("{e}"));
        let want = if e["kind"] == "file" {
            128 << 10
        } else {
            256 << 10
        };
        assert!(allocated >= want, "{e}");
        if e["remove"] == true {
            removing += allocated;
        }
    }
    assert_eq!(v["remove_bytes"].as_u64(), Some(removing), "{v}");
    // The human plan: a size in every line's column, and the total in the last line.
    let o = prune(&s, &["--keep-last", "2", "--match", "*", "--dry-run", "b"]);
    util::assert_success(&o);
    let out = util::stdout_of(&o);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("REMOVE") || l.starts_with("keep"))
        .collect();
    assert_eq!(lines.len(), 4, "{out}");
    for l in &lines {
        // REMOVE  2026-11-22 08:15    256.0 KiB  b/backup-02  (kept: ...)
        let size: Vec<&str> = l.split_whitespace().skip(3).take(2).collect();
        assert!(
            size[0].parse::<f64>().is_ok() && ["B", "KiB", "MiB"].contains(&size[1]),
            "no size in {l:?}"
        );
    }
    assert!(
        out.lines()
            .any(|l| l.starts_with("plan: remove 2 of 4 entries (") && l.contains("iB)")),
        "{out}"
    );
}

#[test]
fn plan_messages_count_in_singular_and_plural() {
    let s = scratch!();
    backups_in(&s, "one", &[1.0], 10);
    let o = prune(&s, &["--keep-last", "1", "-n", "one"]);
    util::assert_success(&o);
    let out = util::stdout_of(&o);
    assert!(
        out.contains("plan: remove 0 of 1 entry (0 B); dry run"),
        "{out}"
    );
    assert!(out.contains("(kept: the newest (--keep-last 1))"), "{out}");
    let o = prune(&s, &["--max-total", "0", "-n", "one"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        util::stderr_of(&o).contains("would remove the only entry;"),
        "{}",
        util::stderr_of(&o)
    );
    // What was done: one file and one directory removed in the foreground.
    backups_in(&s, "two", &[2.0, 1.0], 10);
    let o = prune(&s, &["--keep-last", "1", "--now", "two"]);
    util::assert_success(&o);
    let out = util::stdout_of(&o);
    assert!(
        out.contains("plan: remove 1 of 2 entries (")
            && out.contains("removed 1 file and 1 directory, "),
        "{out}"
    );
    assert_eq!(names(&s, "two"), ["backup-01"]);
}

#[test]
fn hiding_one_entry_says_one_entry() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    backups(&s, 2, 10);
    let o = prune(&s, &["--keep-last", "1", "vol/b"]);
    util::assert_success(&o);
    assert!(
        util::stdout_of(&o).contains("hid 1 entry into the trash as 1 trash entry ("),
        "{}",
        util::stdout_of(&o)
    );
    reap(&s);
}

/// restic's vocabulary on the command line: `--keep-within` in restic's form (m is months)
/// keeps what is newer than the newest entry minus the span; the calendar rules count
/// periods that have an entry.
#[test]
fn restic_keep_rules_on_the_command_line() {
    let s = scratch!();
    // Ages in days: backup-00 is the oldest.
    backups_in(&s, "b", &[40.0, 5.0, 3.5, 2.0, 1.0], 10);
    let removed = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["-n", "--json"];
        all.extend_from_slice(args);
        all.push("b");
        let o = prune(&s, &all);
        util::assert_success(&o);
        json(&o)["plan"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["remove"] == true)
            .map(|e| e["path"].as_str().unwrap().to_string())
            .collect()
    };
    // Newer than (1 day old) minus 2 days: ages 1 and 2 stay.
    assert_eq!(
        removed(&["--keep-within", "2d"]),
        ["b/backup-02", "b/backup-01", "b/backup-00"]
    );
    // One month back from the newest keeps everything but the 40-day-old one.
    assert_eq!(removed(&["--keep-within", "1mo"]), ["b/backup-00"]);
    assert_eq!(removed(&["--keep-within", "1 month"]), ["b/backup-00"]);
    // Five distinct days; three daily keepers, and the oldest is not kept (counts used up).
    assert_eq!(
        removed(&["--keep-daily", "3"]),
        ["b/backup-01", "b/backup-00"]
    );
    // Fewer months with an entry than asked: the oldest entry is kept too, as restic does.
    let r = removed(&["--keep-monthly", "12"]);
    assert!(!r.contains(&"b/backup-00".to_string()), "{r:?}");
    // restic's `1m` is months, elsewhere minutes: a usage error that says both spellings.
    let o = prune(&s, &["-n", "--keep-within", "1m", "b"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        util::stderr_of(&o).contains("1m: minutes or months? say 1min or 1mo"),
        "{}",
        util::stderr_of(&o)
    );
    for flag in ["--keep-hourly", "--keep-weekly", "--keep-yearly"] {
        let o = prune(&s, &["-n", flag, "2", "b"]);
        util::assert_success(&o);
    }
}

/// A mount's `lost+found` (fsck's, at the top of an ext4) and mount points (another file
/// system, a bind mount of the same one) are never entries of a plan, with or without
/// `--all`, so keep rules count only what is really there.
#[test]
fn never_plans_lost_and_found_or_a_mount_point() {
    util::require_root!();
    let s = scratch!();
    let _vol = util::or_skip!(Volume::ext4(&s, "vol", 64 * MIB, 256));
    assert!(s.exists("vol/lost+found"), "mkfs.ext4 makes lost+found");
    for n in ["a", "b", "c"] {
        s.file(format!("vol/{n}"), "x");
    }
    s.mkdir("vol/c-dir/lost+found");
    let _m = util::or_skip!(Volume::tmpfs(&s, "vol/m"));
    let _b = util::or_skip!(Volume::bind(&s, "vol/c-dir", "vol/bound", false));
    for extra in [&[][..], &["--all"][..]] {
        let mut args = vec![
            "--keep-last",
            "0",
            "--allow-empty",
            "--match",
            "*",
            "--dry-run",
            "--json",
        ];
        args.extend_from_slice(extra);
        args.push("vol");
        let out = prune(&s, &args);
        util::assert_success(&out);
        let v = json(&out);
        let mut planned: Vec<&str> = v["plan"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        planned.sort();
        assert_eq!(planned, ["vol/a", "vol/b", "vol/c", "vol/c-dir"], "{v}");
    }
    // Below the top, a directory named lost+found is an ordinary entry.
    let out = prune(
        &s,
        &[
            "--keep-last",
            "0",
            "--allow-empty",
            "--dry-run",
            "--json",
            "vol/c-dir",
        ],
    );
    util::assert_success(&out);
    assert_eq!(json(&out)["plan"][0]["path"], "vol/c-dir/lost+found");
}

/// `--free SIZE`: SIZE more free than now (relative), counting what is still pending in the
/// trash; with `--keep-free` too: one line, exit 2, nothing removed.
#[test]
fn free_keeps_size_more_free_than_now() {
    let s = scratch!();
    util::require_root!();
    let _vol = util::or_skip!(Volume::ext4(&s, "vol", 256 * MIB, 1024));
    backups(&s, 8, 16 * MIB as usize);
    // 3.5 backups more than free now: the 4 oldest must go, no more.
    let more = (3 * 16 * MIB + 8 * MIB).to_string();
    let o = prune(&s, &["--free", &more, "--keep-free", "1G", "vol/b"]);
    assert_eq!(o.status.code(), Some(2), "{}", util::stderr_of(&o));
    let err = util::stderr_of(&o);
    assert!(
        err.lines().count() == 1 && err.contains("--free") && err.contains("--keep-free"),
        "{err}"
    );
    assert_eq!(
        names(&s, "vol/b").len(),
        8,
        "nothing removed on a usage error"
    );
    let o = prune(&s, &["--free", &more, "--json", "vol/b"]);
    util::assert_success(&o);
    let v = json(&o);
    assert_eq!(v["remove_count"], 4, "{v}");
    assert_eq!(
        names(&s, "vol/b"),
        ["backup-04", "backup-05", "backup-06", "backup-07"]
    );
    // The 64 MiB removed are still in the trash (no reaper ran): on their way, so "56 MiB
    // more than now" is met without removing anything more.
    let o = prune(&s, &["--free", &more, "--json", "vol/b"]);
    util::assert_success(&o);
    assert_eq!(json(&o)["remove_count"], 0, "pending space counted");
    assert_eq!(names(&s, "vol/b").len(), 4);
}

/// The sysadmin's directory: eleven daily `db-YYYY-MM-DD.tar.gz` and a `README.txt` written
/// today. Without `--match`, the README is left out (kept, said, counted by no rule), so
/// today's backup stays "the newest of its day" and is never planned for removal.
#[test]
fn a_readme_beside_dated_backups_is_never_planned_for_removal() {
    let s = scratch!();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for d in 0..11 {
        let p = s.file(format!("b/db-2026-11-{:02}.tar.gz", d + 1), "backup");
        set_mtime(&p, now - (10 - d) * DAY - 60);
    }
    let readme = s.file("b/README.txt", "how the backups are made");
    set_mtime(&readme, now);
    let o = prune(&s, &["-n", "--json", "--keep-daily", "7", "b"]);
    util::assert_success(&o);
    let v = json(&o);
    let plan = v["plan"].as_array().unwrap();
    assert_eq!(plan.len(), 11, "{v}");
    assert!(plan
        .iter()
        .all(|e| !e["path"].as_str().unwrap().contains("README")));
    let removed: Vec<&str> = plan
        .iter()
        .filter(|e| e["remove"] == true)
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(removed.len(), 4, "{v}");
    assert!(
        !removed.contains(&"b/db-2026-11-11.tar.gz"),
        "today's backup: {v}"
    );
    assert_eq!(v["left_out"][0]["shape"], "README.txt");
    // The text says what was left out, and the README stays after a real run.
    let o = prune(&s, &["--now", "--keep-daily", "7", "b"]);
    util::assert_success(&o);
    let out = util::stdout_of(&o);
    assert!(
        out.contains("left out: 1 entry named 'README.txt'"),
        "{out}"
    );
    assert!(s.exists("b/README.txt") && s.exists("b/db-2026-11-11.tar.gz"));
    assert_eq!(names(&s, "b").len(), 8);
}

/// Two families of names, as many of each: nothing is planned, the shapes are said with the
/// `--match` that chooses; `--match '*'` takes every entry.
#[test]
fn names_without_a_dominant_shape_are_refused_with_the_shapes_seen() {
    let s = scratch!();
    for i in 0..3 {
        s.file(format!("b/db-{i}.tar"), "db");
        s.file(format!("b/app-{i}.log"), "log");
    }
    let before = s.snapshot("b");
    let o = prune(&s, &["--now", "--keep-last", "1", "b"]);
    assert_eq!(o.status.code(), Some(2));
    let err = util::stderr_of(&o);
    assert!(
        err.contains("'app-*.log' (3), 'db-*.tar' (3)")
            && err.contains("--match 'app-*.log'")
            && err.contains("nothing removed"),
        "{err}"
    );
    util::assert_same("b", &before, &s.snapshot("b"));
    let o = prune(
        &s,
        &["-n", "--json", "--keep-last", "1", "--match", "*", "b"],
    );
    util::assert_success(&o);
    assert_eq!(json(&o)["plan"].as_array().unwrap().len(), 6);
}
