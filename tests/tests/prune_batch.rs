//! `prune` through the trash (issue 26): one trash entry per directory a run prunes, holding
//! all its paths (a "batch": `meta.json` says where, `held.json` lists each name and its slot
//! in `data/`), not one entry per file. One `status` line and one log line per entry;
//! `restore ID` puts every path back where it was, refuses (and names) each whose name is
//! taken again, keeping those in the entry; `kill -9` during the hide leaves each file at its
//! path or in an entry whose list names it; entries of the single-path format still read;
//! a record that names anything but a name in its own directory restores nothing elsewhere.
//!
//! Root only (a tmpfs mounted in the scratch directory); `RECLAIM_NO_SPAWN=1`: no reaper runs
//! but the ones started here.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{self, scratch, trash_entries, ReaperSettle, Scratch, Volume, NO_SPAWN};

fn env(c: &mut StdCommand, s: &Scratch) {
    c.env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(s));
}

/// `reclaim ARGS...` in the scratch root, no reaper started.
fn run(s: &Scratch, args: &[&str]) -> Output {
    s.cmd(args)
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(s))
        .output()
        .unwrap()
}

fn trash(s: &Scratch) -> PathBuf {
    util::trash_dir(&s.path("vol"))
}

/// `n` files `dir/f0000...` of distinct contents (some empty), oldest first, and `dir/newest`
/// (kept by `--keep-last 1`).
fn files(s: &Scratch, dir: &str, n: usize) {
    for i in 0..n {
        let body = if i % 7 == 0 {
            Vec::new()
        } else {
            format!("{i} {}\n", "x".repeat(i % 300)).into_bytes()
        };
        s.file(format!("{dir}/f{i:04}"), body);
    }
    let old = std::time::SystemTime::now() - Duration::from_secs(86_400);
    let d = s.path(dir);
    for e in fs::read_dir(&d).unwrap() {
        let f = fs::File::options().write(true).open(e.unwrap().path());
        if let Ok(f) = f {
            f.set_modified(old).unwrap();
        }
    }
    s.file(format!("{dir}/newest"), "newest\n");
}

fn json(o: &Output) -> Value {
    util::json_object(&o.stdout)
}

/// The trash's one entry (asserting there is exactly one).
fn only_entry(s: &Scratch) -> String {
    let ids = trash_entries(&trash(s));
    assert_eq!(ids.len(), 1, "entries: {ids:?}");
    ids[0].clone()
}

fn held(s: &Scratch, id: &str) -> Value {
    let p = trash(s).join(id).join("held.json");
    serde_json::from_slice(&fs::read(&p).unwrap()).unwrap()
}

fn status_json(s: &Scratch) -> Value {
    let t = trash(s);
    let o = run(s, &["status", "--json", "--trash", t.to_str().unwrap()]);
    util::assert_success(&o);
    json(&o)
}

#[test]
fn a_many_file_prune_is_one_entry_one_status_line_one_log_line_and_restores_whole() {
    const N: usize = 3000;
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let _settle = ReaperSettle { trash: trash(&s) };
    files(&s, "vol/logs", N);
    // Not only files: a tree, a symlink and a name that is not UTF-8.
    s.file("vol/logs/tree/a", "a\n");
    s.file("vol/logs/tree/sub/b", "b\n");
    s.symlink("vol/logs/link", "f0001");
    s.file(
        Path::new("vol/logs").join(util::os(b"bad\xffname")),
        "bytes\n",
    );
    for p in [
        "vol/logs/tree",
        "vol/logs/tree/a",
        "vol/logs/tree/sub",
        "vol/logs/tree/sub/b",
    ] {
        let old = std::time::SystemTime::now() - Duration::from_secs(86_400);
        if let Ok(f) = fs::File::options().write(true).open(s.path(p)) {
            f.set_modified(old).unwrap();
        }
    }
    let before = s.snapshot("vol/logs");
    // All but `newest`: the files, the tree, the link, the odd name (N + 4 files: the tree
    // holds two).
    let paths = N + 3;
    let o = run(
        &s,
        &["prune", "--match", "*", "--keep-last", "1", "vol/logs"],
    );
    util::assert_success(&o);
    let out = util::stdout_of(&o);
    assert!(
        out.contains(&format!(
            "hid {} entries into the trash as 1 trash entry (",
            grouped(paths)
        )),
        "{}",
        out.lines().last().unwrap_or_default()
    );
    let id = only_entry(&s);
    let m = util::entry_meta(&trash(&s), &id);
    assert_eq!(m["kind"], "batch");
    assert_eq!(m["held"], paths as u64);
    assert_eq!(held(&s, &id)["items"].as_array().unwrap().len(), paths);
    assert_eq!(
        fs::read_dir(s.path("vol/logs")).unwrap().count(),
        1,
        "only `newest` is left"
    );

    // status: one line for the entry, with its count; --json the count and the first names.
    let t = trash(&s);
    let o = run(&s, &["status", "--trash", t.to_str().unwrap()]);
    util::assert_success(&o);
    let text = util::stdout_of(&o);
    assert!(text.lines().count() < 8, "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(&id)).collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].contains(&format!("{} paths (", grouped(paths)))
            && lines[0].contains(&format!("{} files)", grouped(N + 4))),
        "{text}"
    );
    let st = status_json(&s);
    let item = &st["trashes"][0]["items"][0];
    assert_eq!(st["trashes"][0]["entries"], 1);
    assert_eq!(item["held"], paths as u64);
    assert_eq!(item["files"], (N + 4) as u64, "{item}");
    assert_eq!(item["held_first"].as_array().unwrap().len(), 10);

    // restore ID: every path back, byte for byte; the entry gone.
    let o = run(&s, &["restore", &id]);
    util::assert_success(&o);
    let out = util::stdout_of(&o);
    assert_eq!(
        out.trim_end(),
        format!(
            "restored {} paths of entry '{id}' into '{}' (`--json` lists each)",
            grouped(paths),
            s.path("vol/logs").display()
        ),
    );
    util::assert_same("restored", &before, &s.snapshot("vol/logs"));
    assert!(trash_entries(&t).is_empty());

    // Again, and freed by a reaper: one log line for the entry.
    util::assert_success(&run(
        &s,
        &["prune", "--match", "*", "--keep-last", "1", "vol/logs"],
    ));
    let id = only_entry(&s);
    let o = run(
        &s,
        &["reap", "--log", "file", "--trash", t.to_str().unwrap()],
    );
    util::assert_success(&o);
    assert!(trash_entries(&t).is_empty());
    let log = fs::read_to_string(t.join("reaper.log")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(
        log.contains(&format!("freed {} paths in ", grouped(paths)))
            && log.contains(&format!("{} files", grouped(N + 4))),
        "{log} ({id})"
    );
    assert_eq!(
        fs::read_dir(s.path("vol/logs")).unwrap().count(),
        1,
        "only `newest` is left"
    );
}

/// `n` with thousands separated by commas, as reclaim prints counts.
fn grouped(n: usize) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn restore_refuses_names_taken_again_and_keeps_those_paths_listed() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let _settle = ReaperSettle { trash: trash(&s) };
    files(&s, "vol/d", 40);
    let before = s.snapshot("vol/d");
    util::assert_success(&run(
        &s,
        &["prune", "--match", "*", "--keep-last", "1", "vol/d"],
    ));
    let id = only_entry(&s);
    // Someone takes two of the names again.
    s.file("vol/d/f0003", "squatter\n");
    s.file("vol/d/f0017", "squatter\n");
    let o = run(&s, &["restore", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", util::stderr_of(&o));
    let err = util::stderr_of(&o);
    for n in ["f0003", "f0017"] {
        let p = s.path(format!("vol/d/{n}"));
        assert!(
            err.contains(&format!(
                "cannot restore '{}' (entry '{id}'): original path is taken",
                p.display()
            )),
            "{err}"
        );
        assert_eq!(fs::read(&p).unwrap(), b"squatter\n");
    }
    assert!(err.contains("keeps 2 paths"), "{err}");
    assert!(util::stdout_of(&o).contains("restored 38 paths of entry"));
    // The rest is back as it was; the two stay in the entry, listed.
    let mut expect = before.clone();
    expect.remove(Path::new("f0003"));
    expect.remove(Path::new("f0017"));
    let mut now = s.snapshot("vol/d");
    now.remove(Path::new("f0003"));
    now.remove(Path::new("f0017"));
    util::assert_same("restored but the two", &expect, &now);
    let item = &status_json(&s)["trashes"][0]["items"][0];
    assert_eq!(item["held"], 2, "{item}");
    let mut first: Vec<&str> = item["held_first"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    first.sort();
    assert_eq!(first, ["f0003", "f0017"]);

    // One of them by its original path, once its name is free; then the other by the ID.
    fs::remove_file(s.path("vol/d/f0017")).unwrap();
    let p = s.path("vol/d/f0017");
    util::assert_success(&run(&s, &["restore", p.to_str().unwrap()]));
    assert_eq!(status_json(&s)["trashes"][0]["items"][0]["held"], 1);
    fs::remove_file(s.path("vol/d/f0003")).unwrap();
    util::assert_success(&run(&s, &["restore", &id]));
    util::assert_same("all back", &before, &s.snapshot("vol/d"));
    assert!(trash_entries(&trash(&s)).is_empty());
}

#[test]
fn entries_of_the_single_path_format_still_read_beside_batches() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let t = trash(&s);
    let _settle = ReaperSettle { trash: t.clone() };
    // One entry as `rm --background` makes it (one path), ...
    s.file("vol/one/file", "one\n");
    util::assert_success(&run(&s, &["rm", "--background", "vol/one/file"]));
    // ... one as the first layout wrote it (version 1: no lineage beyond device and inode),
    // by hand ...
    s.file("vol/old/file", "old\n");
    let parent = fs::metadata(s.path("vol/old")).unwrap();
    let old_id = "20250101T000000.000001Z-1-0";
    let e = t.join(old_id);
    fs::create_dir(&e).unwrap();
    fs::set_permissions(&e, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let record = serde_json::json!({
        "version": 1,
        "id": old_id,
        "original": s.path("vol/old/file").to_str().unwrap(),
        "parent_dev": parent.dev(),
        "parent_ino": parent.ino(),
        "uid": util::euid(),
        "created_unix": 1_735_689_600.0,
        "grace_until_unix": null,
        "kind": "file",
        "allocated": 4096,
        "files": 1,
    });
    fs::write(e.join("meta.json"), record.to_string()).unwrap();
    fs::rename(s.path("vol/old/file"), e.join("data")).unwrap();
    // ... and a batch.
    files(&s, "vol/d", 5);
    util::assert_success(&run(
        &s,
        &["prune", "--match", "*", "--keep-last", "1", "vol/d"],
    ));
    let ids = trash_entries(&t);
    assert_eq!(ids.len(), 3, "{ids:?}");
    let batch = ids
        .iter()
        .find(|i| util::entry_meta(&t, i)["kind"] == "batch")
        .unwrap()
        .clone();
    let st = status_json(&s);
    let items = st["trashes"][0]["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for i in items {
        let old = i["id"] == old_id;
        assert_eq!(i["state"], "pending", "{i}");
        assert_eq!(i["held"].is_null(), i["id"] != batch.as_str(), "{i}");
        if old {
            assert_eq!(i["original"], s.path("vol/old/file").to_str().unwrap());
        }
    }
    // The old one restores; the batch is freed now by its ID; the reaper frees the rest.
    util::assert_success(&run(&s, &["restore", old_id]));
    assert_eq!(fs::read(s.path("vol/old/file")).unwrap(), b"old\n");
    let o = run(
        &s,
        &["reap", "--now", &batch, "--trash", t.to_str().unwrap()],
    );
    util::assert_success(&o);
    assert_eq!(trash_entries(&t).len(), 1);
    assert_eq!(fs::read_dir(s.path("vol/d")).unwrap().count(), 1);
    util::assert_success(&run(&s, &["reap", "--trash", t.to_str().unwrap()]));
    assert!(trash_entries(&t).is_empty());
}

#[test]
fn a_record_naming_anything_but_its_own_names_restores_nothing_elsewhere() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let t = trash(&s);
    let _settle = ReaperSettle { trash: t.clone() };
    files(&s, "vol/d", 3);
    s.mkdir("vol/elsewhere");
    util::assert_success(&run(
        &s,
        &["prune", "--match", "*", "--keep-last", "1", "vol/d"],
    ));
    let id = only_entry(&s);
    let entry = t.join(&id);
    // The list names a path up and a path down instead of names.
    let mut list = held(&s, &id);
    list["items"][0]["name"] = "../elsewhere/x".into();
    list["items"][1]["name"] = "..".into();
    list["items"][2]["name"] = "sub/x".into();
    fs::write(entry.join("held.json"), list.to_string()).unwrap();
    let o = run(&s, &["restore", &id]);
    assert_eq!(o.status.code(), Some(1));
    let err = util::stderr_of(&o);
    assert_eq!(
        err.matches("its record names no single name").count(),
        3,
        "{err}"
    );
    assert!(util::stdout_of(&o).is_empty());
    assert_eq!(fs::read_dir(s.path("vol/elsewhere")).unwrap().count(), 0);
    assert_eq!(fs::read_dir(s.path("vol/d")).unwrap().count(), 1);
    assert_eq!(fs::read_dir(entry.join("data")).unwrap().count(), 3);
    // The record names another directory (its lineage is still the old one's): refused whole.
    let mut m = util::entry_meta(&t, &id);
    m["original"] = s.path("vol/elsewhere").to_str().unwrap().into();
    fs::write(entry.join("meta.json"), m.to_string()).unwrap();
    let o = run(&s, &["restore", &id]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        util::stderr_of(&o).contains("is gone or was replaced"),
        "{}",
        util::stderr_of(&o)
    );
    assert_eq!(fs::read_dir(s.path("vol/elsewhere")).unwrap().count(), 0);
    // A reaper frees what is in the entry, whatever its record says.
    util::assert_success(&run(&s, &["reap", "--trash", t.to_str().unwrap()]));
    assert!(trash_entries(&t).is_empty());
    assert_eq!(fs::read_dir(s.path("vol/d")).unwrap().count(), 1);
}

// ---------------------------------------------------------------------------------------------
// Killing the hide.

/// What a killed prune left in `trash` (beside the entries in `known`): for each file of
/// `originals` (name → contents), where it is: `None` at its path, `Some(entry)` in that
/// entry's `data` under a slot its list names. Panics on a file in two places, in none, or
/// changed, and on anything in an entry its list does not name.
fn where_each(
    dir: &Path,
    trash: &Path,
    known: &BTreeSet<String>,
    originals: &BTreeMap<String, Vec<u8>>,
    what: &str,
) -> BTreeMap<String, Option<String>> {
    let mut at: BTreeMap<String, Option<String>> = BTreeMap::new();
    for id in trash_entries(trash) {
        if known.contains(&id) {
            continue;
        }
        let e = trash.join(&id);
        let Ok(data) = fs::read_dir(e.join("data")) else {
            continue; // debris of a hide killed before anything moved
        };
        let slots: Vec<String> = data
            .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        if slots.is_empty() {
            continue;
        }
        let m = util::entry_meta(trash, &id);
        assert_eq!(m["kind"], "batch", "{what}: {id}");
        assert_eq!(m["original"], dir.to_str().unwrap(), "{what}: {id}");
        let list: Value = serde_json::from_slice(&fs::read(e.join("held.json")).unwrap()).unwrap();
        let names: BTreeMap<String, String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["slot"].as_u64().unwrap().to_string(),
                    h["name"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        for slot in slots {
            let name = names
                .get(&slot)
                .unwrap_or_else(|| panic!("{what}: {id}/data/{slot} is not in its list"));
            let body = fs::read(e.join("data").join(&slot)).unwrap();
            assert_eq!(Some(&body), originals.get(name), "{what}: {name} in {id}");
            if at.insert(name.clone(), Some(id.clone())).is_some() {
                panic!("{what}: {name} in two entries");
            }
        }
    }
    for (name, body) in originals {
        match (fs::read(dir.join(name)), at.get(name)) {
            (Ok(b), None) => {
                assert_eq!(&b, body, "{what}: {name} changed at its path");
                at.insert(name.clone(), None);
            }
            (Ok(_), Some(id)) => panic!("{what}: {name} both at its path and in {id:?}"),
            (Err(_), Some(_)) => {}
            (Err(e), None) => panic!("{what}: {name} neither at its path nor in the trash: {e}"),
        }
    }
    at
}

#[test]
fn kill_during_a_batch_hide_leaves_each_file_at_its_path_or_listed_in_its_entry() {
    // Enough that the renames are a fair share of a run (kills land anywhere in it).
    const FILES: usize = 1000;
    const MIN_TRIALS: u32 = 16;
    const TIME_BUDGET: Duration = Duration::from_secs(20);
    let test = util::test_name!();
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let t = trash(&s);
    let _settle = ReaperSettle { trash: t.clone() };
    let dir = s.path("vol/w");
    let make = || -> BTreeMap<String, Vec<u8>> {
        if dir.exists() {
            fs::remove_dir_all(&dir).unwrap();
        }
        files(&s, "vol/w", FILES);
        fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    fs::read(e.path()).unwrap(),
                )
            })
            .collect()
    };
    let start = || {
        let _ = s.cmd(&["prune", "--match", "*", "--keep-last", "1", "vol/w"]);
        let mut c = StdCommand::new(util::reclaim_bin());
        c.env("RECLAIM_CONFIG", "")
            .env("RECLAIM_UNDER", s.root())
            .current_dir(s.root())
            .args(["prune", "--match", "*", "--keep-last", "1", "vol/w"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        env(&mut c, &s);
        c.spawn().unwrap()
    };
    // How long an uninterrupted run takes: kills land anywhere up to a little after that.
    let mut full = Vec::new();
    for _ in 0..3 {
        make();
        let t0 = Instant::now();
        assert!(start().wait().unwrap().success());
        full.push(t0.elapsed());
        util::assert_success(&run(&s, &["reap", "--trash", t.to_str().unwrap()]));
    }
    full.sort();
    let spread = (full[1].as_micros() as u64 * 12 / 10).max(2000);
    let mut seed = Instant::now().elapsed().as_nanos() as u64 ^ 0x9E37_79B9_7F4A_7C15;
    eprintln!(
        "{test}: an uninterrupted run takes {:?}; seed {seed}",
        full[1]
    );
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let (mut trials, mut partial, t0) = (0u32, 0u32, Instant::now());
    // Under load a run's start-up jitter can hide the batch's window for a while: go on past
    // the budget (up to twice it) until at least one kill landed in it.
    while trials < MIN_TRIALS
        || (t0.elapsed() < TIME_BUDGET && partial < 4)
        || (t0.elapsed() < 2 * TIME_BUDGET && partial == 0)
    {
        let what = format!("trial {trials}");
        let originals = make();
        let known: BTreeSet<String> = trash_entries(&t).into_iter().collect();
        let mut child = start();
        std::thread::sleep(Duration::from_micros(next(spread)));
        let _ = child.kill();
        child.wait().unwrap();
        let at = where_each(&dir, &t, &known, &originals, &what);
        let hidden = at.values().filter(|v| v.is_some()).count();
        if hidden > 0 && hidden < FILES {
            partial += 1;
        }
        if trials % 2 == 0 {
            // restore each new entry: everything back as it was.
            for id in trash_entries(&t).into_iter().filter(|i| !known.contains(i)) {
                if fs::symlink_metadata(t.join(&id).join("data")).is_ok() {
                    let o = run(&s, &["restore", &id]);
                    util::assert_success(&o);
                }
            }
            for (name, body) in &originals {
                assert_eq!(&fs::read(dir.join(name)).unwrap(), body, "{what}: {name}");
            }
        }
        // The reaper frees what is in the entries, never what is at its path.
        util::assert_success(&run(&s, &["reap", "--trash", t.to_str().unwrap()]));
        assert!(trash_entries(&t).is_empty(), "{what}: reap left entries");
        for (name, place) in &at {
            let here = dir.join(name);
            match place {
                Some(_) if trials % 2 == 1 => assert!(!here.exists(), "{what}: {name}"),
                _ => assert_eq!(
                    &fs::read(&here).unwrap(),
                    &originals[name],
                    "{what}: {name}"
                ),
            }
        }
        trials += 1;
    }
    eprintln!(
        "{test}: {trials} trials in {:?}, {partial} killed mid-batch",
        t0.elapsed()
    );
    assert!(partial > 0, "no kill landed in the middle of a batch");
}

#[test]
fn what_a_reaper_cannot_free_is_named_by_its_original_path_and_goes_back_with_wait() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let t = trash(&s);
    let _settle = ReaperSettle { trash: t.clone() };
    files(&s, "vol/d", 20);
    s.file("vol/d/tree/sub/imm", "immutable\n");
    s.file("vol/d/tree/other", "other\n");
    let old = std::time::SystemTime::now() - Duration::from_secs(86_400);
    fs::File::open(s.path("vol/d/tree"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let _imm = util::or_skip!(util::ImmutableGuard::new(&s, "vol/d/tree/sub/imm"));
    let imm = s.path("vol/d/tree/sub/imm");

    // --wait: the tree's remnant goes back where it was, named there; the rest is freed.
    let o = run(
        &s,
        &[
            "prune",
            "--match",
            "*",
            "--keep-last",
            "1",
            "--wait",
            "vol/d",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", util::stdout_of(&o));
    let err = util::stderr_of(&o);
    assert!(
        err.contains(&format!("'{}'", imm.display())) && !err.contains("/reaping/"),
        "{err}"
    );
    assert_eq!(fs::read(&imm).unwrap(), b"immutable\n");
    assert!(!s.exists("vol/d/tree/other") && !s.exists("vol/d/f0003"));
    assert!(trash_entries(&t).is_empty(), "{:?}", trash_entries(&t));

    // In the background: status names the original path and where it is now, in the entry.
    fs::remove_file(s.path("vol/d/newest")).unwrap();
    files(&s, "vol/d", 3);
    fs::File::open(s.path("vol/d/tree"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    util::assert_success(&run(
        &s,
        &["prune", "--match", "*", "--keep-last", "1", "vol/d"],
    ));
    let id = only_entry(&s);
    let o = run(&s, &["reap", "--trash", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let item = &status_json(&s)["trashes"][0]["items"][0];
    assert_eq!(item["state"], "failed", "{item}");
    let e = &item["failure"]["errors"][0];
    assert_eq!(e["path"], imm.to_str().unwrap(), "{item}");
    let now_at = e["now_at"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("{item}"));
    assert!(
        now_at.starts_with(t.join(&id).join("reaping").to_str().unwrap())
            && now_at.ends_with("/sub/imm"),
        "{item}"
    );
    assert_eq!(item["held"], 1, "{item}");
    // restore ID puts back what is left.
    let o = run(&s, &["restore", &id]);
    util::assert_success(&o);
    assert_eq!(fs::read(&imm).unwrap(), b"immutable\n");
    assert!(trash_entries(&t).is_empty());
}

#[test]
fn one_entry_per_directory_pruned() {
    let s = scratch!();
    let _vol = util::or_skip!(Volume::tmpfs(&s, "vol"));
    let t = trash(&s);
    let _settle = ReaperSettle { trash: t.clone() };
    files(&s, "vol/a", 30);
    files(&s, "vol/b", 30);
    let (a, b) = (s.snapshot("vol/a"), s.snapshot("vol/b"));
    // One pool: keep the newest of both (one of the two `newest`).
    let o = run(
        &s,
        &[
            "prune",
            "--match",
            "*",
            "--keep-last",
            "1",
            "vol/a",
            "vol/b",
        ],
    );
    util::assert_success(&o);
    let ids = trash_entries(&t);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let mut held: Vec<u64> = ids
        .iter()
        .map(|i| util::entry_meta(&t, i)["held"].as_u64().unwrap())
        .collect();
    held.sort();
    assert_eq!(held, [30, 31]);
    for id in &ids {
        util::assert_success(&run(&s, &["restore", id]));
    }
    util::assert_same("a", &a, &s.snapshot("vol/a"));
    util::assert_same("b", &b, &s.snapshot("vol/b"));
}
