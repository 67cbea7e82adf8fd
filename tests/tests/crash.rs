//! Crashes: `kill -9` of `reclaim rm --background` while it hides its targets, and of
//! `reclaim reap` while it frees a big file or a tree. Wherever the kill lands, each target is
//! whole at its path or whole in exactly one trash entry (or, once a reaper claimed it, partly
//! freed inside the trash: design §2.3), nothing else changes, and the next reaper finishes
//! what was pending, paced as before (§2.4).
//!
//! Root only (the trash is made at the top of a tmpfs or ext4 image mounted inside the scratch
//! directory); `RECLAIM_NO_SPAWN=1` everywhere, so no reaper runs but the ones started here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use crate::util::{
    self, assert_same, entry_meta, scratch, snapshot_any as snapshot, snapshot_without,
    snapshot_without_trash, trash_entries, Entry, ReaperSettle, Scratch, Snapshot, Volume,
    NO_SPAWN,
};

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small random number generator seeded from the clock (the seed is printed).
struct Rng(u64);

impl Rng {
    fn new(test: &str) -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        eprintln!("{test}: seed {seed}");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 = splitmix(self.0);
        self.0 % n.max(1)
    }
}

/// `len` bytes of pattern `seed`.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    let mut w = 0u64;
    while v.len() < len {
        v.extend_from_slice(&splitmix((seed << 32) ^ w).to_le_bytes());
        w += 1;
    }
    v.truncate(len);
    v
}

/// `reclaim ARGS...` started in the scratch root with `RECLAIM_NO_SPAWN=1` (paths checked as
/// for `Scratch::cmd`), output discarded or piped.
fn spawn(s: &Scratch, args: &[&str], piped: bool) -> Child {
    let _ = s.cmd(args);
    let out = || {
        if piped {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    StdCommand::new(util::reclaim_bin())
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .current_dir(s.root())
        .args(args)
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(s))
        .stdin(Stdio::null())
        .stdout(out())
        .stderr(out())
        .spawn()
        .unwrap()
}

/// SIGKILL (if still running) and reap `child`; true if it had exited on its own.
fn kill(child: &mut Child) -> bool {
    let exited = child.try_wait().unwrap().is_some();
    if !exited {
        let _ = child.kill();
    }
    child.wait().unwrap();
    exited
}

fn mode_of(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

// ---------------------------------------------------------------------------------------------
// Killing the hide.

/// The targets of one trial under `root/vol/w`: a file, a small tree, and a file or a tree, with
/// neighbours that must stay. Returns (relative path, snapshot) of each target.
fn make_targets(s: &Scratch, trial: u64, rng: &mut Rng) -> Vec<(String, Snapshot)> {
    let w = "vol/w";
    s.file(format!("{w}/keep"), format!("keep {trial}\n"));
    s.file(format!("{w}/keepdir/x"), "x\n");
    s.file(format!("{w}/t1"), bytes(trial, rng.below(20_000) as usize));
    s.file(format!("{w}/t2/a"), format!("a {trial}\n"));
    s.file(format!("{w}/t2/sub/b"), bytes(trial + 1, 5000));
    s.file(format!("{w}/t2/sub/deep/c"), "c\n");
    s.mkdir(format!("{w}/t2/empty"));
    s.symlink(format!("{w}/t2/sub/link"), "../a");
    if rng.below(2) == 0 {
        s.file(format!("{w}/t3"), bytes(trial + 2, 3000));
    } else {
        for i in 0..rng.below(30) {
            s.file(format!("{w}/t3/d{}/f{i}", i % 4), format!("{i}\n"));
        }
        s.mkdir(format!("{w}/t3"));
    }
    ["t1", "t2", "t3"]
        .iter()
        .map(|t| {
            let rel = format!("{w}/{t}");
            let snap = snapshot(&s.path(&rel));
            (rel, snap)
        })
        .collect()
}

/// What a killed hide left, checked: every target whole at its path or whole in exactly one
/// entry's `data`; entries without `data` are debris. Returns how many targets were hidden.
fn check_after_kill(
    s: &Scratch,
    trash: &Path,
    known: &BTreeSet<String>,
    targets: &[(String, Snapshot)],
    what: &str,
) -> usize {
    if fs::symlink_metadata(trash).is_ok() {
        assert_eq!(mode_of(trash), 0o700, "{what}: {}", trash.display());
    }
    let mut hidden: BTreeMap<String, String> = BTreeMap::new();
    for id in trash_entries(trash) {
        if known.contains(&id) {
            continue; // an earlier trial's, not reaped yet
        }
        let e = trash.join(&id);
        assert!(
            fs::symlink_metadata(e.join("reaping")).is_err(),
            "{what}: {id} claimed, but no reaper ran"
        );
        if fs::symlink_metadata(e.join("data")).is_err() {
            continue; // debris of an interrupted hide
        }
        let m = entry_meta(trash, &id);
        let original = m["original"].as_str().unwrap_or_default().to_owned();
        let (rel, snap) = targets
            .iter()
            .find(|(rel, _)| s.path(rel).to_str() == Some(&original))
            .unwrap_or_else(|| panic!("{what}: entry {id} hides {original}, not a target"));
        assert_same(
            &format!("{what}: {rel} in entry {id}"),
            snap,
            &snapshot(&e.join("data")),
        );
        if let Some(other) = hidden.insert(rel.clone(), id.clone()) {
            panic!("{what}: {rel} in two entries, {other} and {id}");
        }
    }
    for (rel, snap) in targets {
        let at_path = fs::symlink_metadata(s.path(rel)).is_ok();
        match (at_path, hidden.get(rel)) {
            (true, None) => assert_same(&format!("{what}: {rel}"), snap, &snapshot(&s.path(rel))),
            (false, Some(_)) => {}
            (true, Some(id)) => panic!("{what}: {rel} both at its path and in {id}"),
            (false, None) => panic!("{what}: {rel} neither at its path nor in the trash"),
        }
    }
    hidden.len()
}

#[test]
fn kill_during_hide_leaves_each_target_whole() {
    const TRIALS: u64 = 300;
    const MIN_TRIALS: u64 = 100;
    const TIME_BUDGET: Duration = Duration::from_secs(45);
    let test = util::test_name!();
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let top = s.path("vol");
    let trash = util::trash_dir(&top);
    let _settle = ReaperSettle {
        trash: trash.clone(),
    };
    let mut rng = Rng::new(test);
    s.file("vol/other/file", "other\n");
    s.symlink("vol/other/link", "file");

    let rm_args = |durable: bool| -> Vec<&'static str> {
        let mut a = vec!["rm", "-r", "--background"];
        if durable {
            a.push("--durable");
        }
        a.extend(["vol/w/t1", "vol/w/t2", "vol/w/t3"]);
        a
    };
    let reap = |what: &str| {
        if fs::symlink_metadata(&trash).is_err() {
            return;
        }
        let out = s
            .cmd(&["reap", "--trash", trash.to_str().unwrap()])
            .env(NO_SPAWN, "1")
            .env("XDG_STATE_HOME", util::state_home(&s))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}: reap: {}",
            util::stderr_of(&out)
        );
        assert_eq!(
            trash_entries(&trash),
            Vec::<String>::new(),
            "{what}: reap left entries"
        );
    };

    // How long an uninterrupted run takes: half the kills land anywhere from the start to a
    // little after that, half in the window where the hides happen, learnt as the trials go
    // (between the latest kill that found nothing hidden and the earliest that found all).
    let mut full = Vec::new();
    for i in 0..3 {
        make_targets(&s, 1000 + i, &mut rng);
        let t0 = Instant::now();
        let mut child = spawn(&s, &rm_args(false), false);
        let st = child.wait().unwrap();
        full.push(t0.elapsed());
        assert!(st.success(), "uninterrupted rm --background failed");
        assert!(!s.exists("vol/w/t1") && !s.exists("vol/w/t2") && !s.exists("vol/w/t3"));
        reap("uninterrupted");
        fs::remove_dir_all(s.path("vol/w")).unwrap();
    }
    full.sort();
    let spread = (full[1].as_micros() as u64 * 13 / 10).max(3000);
    eprintln!(
        "{test}: an uninterrupted run takes {:?}; kills within {spread} µs",
        full[1]
    );
    let (mut none_until, mut all_from) = (0u64, spread);

    let t0 = Instant::now();
    let mut outcomes = [0u64; 4];
    let mut trials = 0;
    while trials < TRIALS && (trials < MIN_TRIALS || t0.elapsed() < TIME_BUDGET) {
        let what = format!("trial {trials}");
        let targets = make_targets(&s, trials, &mut rng);
        let before = snapshot_without_trash(&top);
        let known: BTreeSet<String> = trash_entries(&trash).into_iter().collect();
        let (lo, hi) = (
            none_until.min(all_from).saturating_sub(300),
            none_until.max(all_from) + 300,
        );
        let micros = if rng.below(2) == 0 {
            rng.below(spread)
        } else {
            lo + rng.below(hi - lo)
        };
        let delay = Duration::from_micros(micros);
        let mut child = spawn(&s, &rm_args(trials % 2 == 1), false);
        std::thread::sleep(delay);
        let exited = kill(&mut child);
        let hidden = check_after_kill(&s, &trash, &known, &targets, &what);
        outcomes[hidden] += 1;
        if hidden == 0 {
            none_until = none_until.max(micros);
        } else if hidden == 3 {
            all_from = all_from.min(micros);
        }
        if exited {
            assert_eq!(
                hidden, 3,
                "{what}: rm exited on its own but hid {hidden} of 3"
            );
        }
        // Nothing else changed: the scratch volume is what it was, less the hidden targets.
        let mut expected = before;
        for (rel, _) in &targets {
            if !s.exists(rel) {
                let under_vol = Path::new(rel).strip_prefix("vol").unwrap().to_path_buf();
                expected = snapshot_without(expected, &under_vol);
            }
        }
        let after_kill = snapshot_without_trash(&top);
        assert_same(&format!("{what}: vol"), &expected, &after_kill);
        // The next reaper finishes the rest (of this trial and the nine before: a reaper
        // run costs about half a second) and leaves what is at its path alone.
        if trials % 10 != 9 {
            fs::remove_dir_all(s.path("vol/w")).unwrap();
            trials += 1;
            continue;
        }
        reap(&what);
        assert_same(
            &format!("{what}: vol after reap"),
            &after_kill,
            &snapshot_without_trash(&top),
        );
        fs::remove_dir_all(s.path("vol/w")).unwrap();
        trials += 1;
    }
    reap("after the last trial");
    eprintln!(
        "{test}: {trials} trials in {:?}; hide window ~{none_until}..{all_from} µs; \
         targets hidden when killed: 0: {}, 1: {}, 2: {}, 3: {}",
        t0.elapsed(),
        outcomes[0],
        outcomes[1],
        outcomes[2],
        outcomes[3]
    );
    assert!(outcomes[0] > 0, "no kill landed before the first hide");
    assert!(
        outcomes[1] + outcomes[2] + outcomes[3] > 0,
        "no kill landed after a hide"
    );
}

// ---------------------------------------------------------------------------------------------
// Killing the reaper.

/// The path (anywhere in the entry directory `entry`, two levels deep at most, never
/// following symlinks) of the regular file with inode `ino`, if it is still there.
fn find_inode(entry: &Path, ino: u64) -> Option<PathBuf> {
    let mut stack = vec![(entry.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(md) = fs::symlink_metadata(e.path()) else {
                continue;
            };
            if md.is_file() && md.ino() == ino {
                return Some(e.path());
            }
            if md.is_dir() && depth < 2 {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    None
}

/// The `reclaim reap --trash T` command line, with pacing options.
fn reap_args<'a>(trash: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["reap", "--trash", trash];
    a.extend_from_slice(extra);
    a
}

#[test]
fn kill_reaper_while_it_frees_a_big_file_then_resume_in_steps() {
    let test = util::test_name!();
    util::require_root!();
    let s = scratch!();
    let _vol = util::or_skip!(Volume::ext4(&s, "vol", 8 << 30, 4096));
    let top = s.path("vol");
    let trash = util::trash_dir(&top);
    let t = trash.to_str().unwrap().to_owned();
    let _settle = ReaperSettle {
        trash: trash.clone(),
    };
    let mut rng = Rng::new(test);
    s.file("vol/neighbour", "stays\n");
    s.make_outside("vol/outside");
    let before = snapshot_without_trash(&top);

    // 3 GiB from fallocate: ~25 block groups, so many steps; pattern at its head and tail.
    let len: u64 = 3 << 30;
    let head = bytes(7, 4096);
    let ino = {
        let f = File::create_new(s.path("vol/big")).unwrap();
        rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, len).unwrap();
        f.write_all_at(&head, 0).unwrap();
        f.write_all_at(&bytes(8, 4096), len - 4096).unwrap();
        f.sync_all().unwrap();
        f.metadata().unwrap().ino()
    };
    let out = s
        .rm(&["--background", "vol/big"])
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&out);
    let ids = trash_entries(&trash);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let entry = trash.join(&ids[0]);
    let size_of = |p: &Path| fs::symlink_metadata(p).map(|m| m.len()).ok();
    // Checks the file where it is now: a prefix of the original (only the end is ever cut).
    let check_prefix = |p: &Path, what: &str| {
        let f = File::open(p).unwrap();
        let size = f.metadata().unwrap().len();
        assert!(size <= len, "{what}: grew to {size}");
        if size >= 4096 {
            let mut buf = vec![0u8; 4096];
            f.read_exact_at(&mut buf, 0).unwrap();
            assert!(buf == head, "{what}: head changed");
        }
        size
    };
    // The first step of a run frees at most 4 regions (512 MiB), at least one extent (over
    // 100 MiB here); at 128 MiB/s the pause after it lasts most of a second, and the kill
    // lands in it. The last run goes faster, still in at least two steps.
    const RATE: &str = "128M";
    const FINAL_RATE: &str = "256M";

    let mut killed_mid_shrink = 0;
    for round in 0..2 {
        let what = format!("round {round}");
        let Some(p) = find_inode(&entry, ino) else {
            break;
        };
        let start = check_prefix(&p, &what);
        let mut child = spawn(&s, &reap_args(&t, &["--rate", RATE]), false);
        // Wait for the first step, then kill within the pause after it (or a later step).
        let t0 = Instant::now();
        loop {
            let now = find_inode(&entry, ino).and_then(|p| size_of(&p));
            if now.is_none_or(|n| n < start) {
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{what}: no step in 30 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(rng.below(500)));
        let exited = kill(&mut child);
        assert_same(
            &format!("{what}: vol"),
            &before,
            &snapshot_without_trash(&top),
        );
        match find_inode(&entry, ino) {
            None => {
                assert!(
                    fs::symlink_metadata(&entry).is_err(),
                    "{what}: the file is gone but its entry is not: {:?}",
                    util::snapshot(&trash).keys().collect::<Vec<_>>()
                );
                eprintln!("{test}: {what}: the reaper finished before the kill");
                break;
            }
            Some(p) => {
                assert!(!exited, "{what}: reaper exited and left {}", p.display());
                let size = check_prefix(&p, &what);
                assert!(
                    fs::symlink_metadata(entry.join("data")).is_err(),
                    "{what}: shrunk, but still restorable as data"
                );
                eprintln!(
                    "{test}: {what}: killed at {size} of {start} bytes ({})",
                    p.display()
                );
                if size < start {
                    killed_mid_shrink += 1;
                }
            }
        }
    }
    assert!(killed_mid_shrink >= 1, "no reaper was killed part way");

    // The last reaper finishes it, in steps again.
    let p = find_inode(&entry, ino).expect("the file is still in the trash");
    let start = check_prefix(&p, "final");
    let t0 = Instant::now();
    let mut child = spawn(&s, &reap_args(&t, &["--json", "--rate", FINAL_RATE]), true);
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        if let Some(n) = find_inode(&entry, ino).and_then(|p| size_of(&p)) {
            if seen.last() != Some(&n) {
                seen.push(n);
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "final reaper runs 90 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = child.wait_with_output().unwrap();
    util::assert_success(&out);
    let r = util::parse_reap_report(&out.stdout);
    eprintln!("{test}: final reaper from {start} bytes: sizes seen {seen:?}; {r}");
    assert_eq!(r["entries_freed"], 1, "{r}");
    assert_eq!(r["remaining"], 0, "{r}");
    assert_eq!(r["errors"], serde_json::Value::Array(vec![]), "{r}");
    assert!(
        seen.iter().any(|&n| n > 0 && n < start),
        "the restarted reaper freed {start} bytes in one go (sizes seen: {seen:?})"
    );
    // Its report says so: one large file, shrunk in steps, resumed if a killed reaper had
    // hidden it under its shrink name.
    let gentle = r["gentle"]
        .as_array()
        .unwrap_or_else(|| panic!("no \"gentle\" list in the report: {r}"));
    assert_eq!(gentle.len(), 1, "{r}");
    assert!(gentle[0]["steps"].as_u64().unwrap_or(0) >= 2, "{r}");
    let name = p.file_name().unwrap().to_string_lossy();
    if name != "data" && name != "reaping" {
        assert_eq!(gentle[0]["resumed"], true, "{name} was resumed: {r}");
    }
    assert_eq!(trash_entries(&trash), Vec::<String>::new());
    assert_same("vol", &before, &snapshot_without_trash(&top));
}

/// The tree in entry `e`, wherever it is (`data` or `reaping`), and its snapshot.
fn tree_in(e: &Path) -> Option<(PathBuf, Snapshot)> {
    ["reaping", "data"].iter().find_map(|n| {
        let p = e.join(n);
        fs::symlink_metadata(&p).is_ok().then(|| {
            let snap = snapshot(&p);
            (p, snap)
        })
    })
}

fn files_in(snap: &Snapshot) -> usize {
    snap.values()
        .filter(|e| !matches!(e, Entry::Dir { .. }))
        .count()
}

#[test]
fn kill_reaper_while_it_removes_a_tree_then_resume() {
    let test = util::test_name!();
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let top = s.path("vol");
    let trash = util::trash_dir(&top);
    let t = trash.to_str().unwrap().to_owned();
    let _settle = ReaperSettle {
        trash: trash.clone(),
    };
    let mut rng = Rng::new(test);
    s.file("vol/neighbour", "stays\n");
    s.make_outside("vol/outside");
    let before = snapshot_without_trash(&top);
    // 3,000 files in 30 directories (every tenth with content), symlinks out of the tree.
    for d in 0..30 {
        for f in 0..100 {
            let content = if f % 10 == 0 {
                format!("{d}/{f}\n")
            } else {
                String::new()
            };
            s.file(format!("vol/tree/d{}/e{d}/f{f}", d % 5), content);
        }
    }
    s.symlink("vol/tree/to_outside", s.path("vol/outside"));
    s.symlink("vol/tree/d0/to_outside_rel", "../../outside");
    let original = s.snapshot("vol/tree");
    let total = files_in(&original);
    let out = s
        .rm(&["-r", "--background", "vol/tree"])
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&out);
    let ids = trash_entries(&trash);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let entry = trash.join(&ids[0]);
    const IOPS: u64 = 2000;
    let iops = IOPS.to_string();

    let mut left = total;
    let mut killed_part_way = 0;
    for round in 0..3 {
        let what = format!("round {round}");
        let mut child = spawn(&s, &reap_args(&t, &["--iops", &iops]), false);
        std::thread::sleep(Duration::from_millis(50 + rng.below(400)));
        let exited = kill(&mut child);
        assert_same(
            &format!("{what}: vol"),
            &before,
            &snapshot_without_trash(&top),
        );
        let Some((p, snap)) = tree_in(&entry) else {
            assert!(
                fs::symlink_metadata(&entry).is_err(),
                "{what}: entry without its tree left"
            );
            eprintln!("{test}: {what}: the reaper finished before the kill");
            left = 0;
            break;
        };
        assert!(!exited, "{what}: reaper exited and left {}", p.display());
        // Partly freed: what is left is a part of the original, unchanged.
        for (k, v) in &snap {
            match original.get(k) {
                Some(o) if o == v || matches!(v, Entry::Dir { .. }) => {}
                other => panic!("{what}: {} is {v:?}, was {other:?}", k.display()),
            }
        }
        let n = files_in(&snap);
        assert!(n <= left, "{what}: {n} files left, {left} before");
        eprintln!(
            "{test}: {what}: killed with {n} of {total} files left ({})",
            p.display()
        );
        if n < left {
            killed_part_way += 1;
        }
        left = n;
    }
    assert!(killed_part_way >= 1, "no reaper was killed part way");

    let t0 = Instant::now();
    let out = spawn(&s, &reap_args(&t, &["--json", "--iops", &iops]), true)
        .wait_with_output()
        .unwrap();
    let elapsed = t0.elapsed();
    util::assert_success(&out);
    let r = util::parse_reap_report(&out.stdout);
    eprintln!("{test}: final reaper: {left} files left, took {elapsed:?}: {r}");
    assert_eq!(r["remaining"], 0, "{r}");
    assert_eq!(r["errors"], serde_json::Value::Array(vec![]), "{r}");
    assert_eq!(trash_entries(&trash), Vec::<String>::new());
    assert_same("vol", &before, &snapshot_without_trash(&top));
    // Paced as before: at most IOPS unlinks a second (with slack for a first burst).
    if left >= 1000 {
        let floor = Duration::from_secs_f64(left as f64 / IOPS as f64 * 0.5);
        assert!(
            elapsed >= floor,
            "the restarted reaper removed {left} files in {elapsed:?} (--iops {IOPS})"
        );
    }
}
