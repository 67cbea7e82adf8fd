//! btrfs (issue 25): a subvolume inside a tree is part of the tree, as for GNU rm (mount points,
//! told apart by mount id, stay skipped); a subvolume met as a target, in a tree or in the trash
//! is deleted whole by the file system where the caller may (nested ones first), otherwise
//! walked with one line why; GNU mode walks it as GNU rm does, and its `--one-file-system`
//! keeps GNU's `st_dev` rule.
//!
//! On btrfs loop images made by each test (btrfs-progs), root only; skipped, and said so,
//! otherwise.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util::{self, or_skip, scratch, Scratch, Volume};

/// A second uid for the unprivileged cases.
const USER: u32 = 61_025;

fn btrfs(s: &Scratch, options: &str) -> Result<Volume, String> {
    Volume::btrfs(s, "vol", 256 << 20, options)
}

/// `btrfs subvolume create` at `rel` (inside the scratch root).
fn subvolume(s: &Scratch, rel: &str) {
    let p = s.path(rel);
    let out = Command::new("btrfs")
        .args(["subvolume", "create"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success(), "btrfs subvolume create: {out:?}");
}

/// Files `0..n` in `rel/dN` directories of 50.
fn files(s: &Scratch, rel: &str, n: usize) {
    for i in 0..n {
        s.file(format!("{rel}/d{}/f{i}", i / 50), format!("{i}\n"));
    }
}

/// The ids of the subvolumes still in the namespace of the btrfs at `top` (not those deleted
/// and waiting for the cleaner).
fn live_subvolumes(top: &Path) -> Vec<String> {
    let out = Command::new("btrfs")
        .args(["subvolume", "list"])
        .arg(top)
        .output()
        .unwrap();
    assert!(out.status.success(), "btrfs subvolume list: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("DELETED"))
        .map(str::to_owned)
        .collect()
}

fn json(out: &Output) -> Value {
    util::json_object(&out.stdout)
}

#[test]
fn subvolumes_inside_a_tree_are_removed_with_it() {
    let s = scratch!();
    let _v = or_skip!(btrfs(&s, ""));
    s.file("vol/t/plain/a", "a\n");
    s.mkdir("vol/t/d");
    subvolume(&s, "vol/t/d/sv");
    files(&s, "vol/t/d/sv", 120);
    s.mkdir("vol/t/d/sv/deeper");
    subvolume(&s, "vol/t/d/sv/deeper/inner");
    files(&s, "vol/t/d/sv/deeper/inner", 30);
    subvolume(&s, "vol/t/other");
    s.file("vol/neighbour", "stays\n");
    let out = s.rm(&["-r", "--json", "vol/t"]).output().unwrap();
    util::assert_success(&out);
    assert!(!s.exists("vol/t"), "{}", util::stderr_of(&out));
    assert_eq!(
        fs::read_to_string(s.path("vol/neighbour")).unwrap(),
        "stays\n"
    );
    assert_eq!(live_subvolumes(&s.path("vol")), Vec::<String>::new());
    let v = json(&out);
    let subs = v["subvolumes"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(subs.len(), 2, "{v}");
    for sv in subs {
        assert_eq!(sv["how"], "snap_destroy_v2", "{v}");
    }
    let sv = subs.iter().find(|x| x["path"] == "vol/t/d/sv").unwrap();
    assert_eq!(sv["nested"].as_array().map(Vec::len), Some(1), "{v}");
    // Only the plain part was walked: t, plain, plain/a, d.
    assert_eq!(
        (v["files"].as_u64(), v["dirs"].as_u64()),
        (Some(1), Some(3))
    );
}

#[test]
fn a_mount_inside_a_btrfs_tree_is_still_skipped() {
    let s = scratch!();
    let _v = or_skip!(btrfs(&s, ""));
    s.file("vol/elsewhere/keep", "kept\n");
    s.mkdir("vol/t");
    subvolume(&s, "vol/t/sv");
    s.file("vol/t/sv/x", "x\n");
    // The same file system again (same st_dev as vol/t): only its mount id tells it apart.
    let bind = or_skip!(Volume::bind(&s, "vol/elsewhere", "vol/t/bound", false));
    let out = s.rm(&["-r", "--json", "vol/t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let v = json(&out);
    assert_eq!(
        v["skipped_mounts"],
        serde_json::json!(["vol/t/bound"]),
        "{v}"
    );
    assert!(!s.exists("vol/t/sv"), "the subvolume is part of the tree");
    drop(bind);
    assert_eq!(
        fs::read_to_string(s.path("vol/elsewhere/keep")).unwrap(),
        "kept\n"
    );
}

#[test]
fn a_subvolume_target_leaves_without_a_walk() {
    let s = scratch!();
    let _v = or_skip!(btrfs(&s, ""));
    subvolume(&s, "vol/sv");
    files(&s, "vol/sv", 2_000);
    let out = s.rm(&["-r", "--json", "vol/sv"]).output().unwrap();
    util::assert_success(&out);
    assert!(!s.exists("vol/sv"));
    let v = json(&out);
    // Nothing was walked: the file system deleted it whole.
    assert_eq!(
        (v["files"].as_u64(), v["dirs"].as_u64()),
        (Some(0), Some(0)),
        "{v}"
    );
    assert_eq!(v["subvolumes"][0]["path"], "vol/sv", "{v}");
    assert_eq!(v["subvolumes"][0]["how"], "snap_destroy_v2", "{v}");
    assert!(
        v["subvolumes"][0]["id"]
            .as_u64()
            .is_some_and(|id| id >= 256),
        "{v}"
    );
}

#[test]
fn a_dry_run_walks_a_subvolume_and_deletes_nothing() {
    let s = scratch!();
    let _v = or_skip!(btrfs(&s, ""));
    subvolume(&s, "vol/sv");
    files(&s, "vol/sv", 60);
    let out = s
        .rm(&["-r", "--dry-run", "--json", "vol/sv"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["files"].as_u64(), Some(60), "{v}");
    assert_eq!(live_subvolumes(&s.path("vol")).len(), 1);
    assert!(s.exists("vol/sv/d0/f0"));
}

/// `reclaim rm ARGS` in the scratch root as `USER`.
fn rm_as_user(s: &Scratch, args: &[&str]) -> Output {
    util::reclaim_rm_as(s, USER, args)
}

/// `vol/home` and a subvolume `vol/home/sv` with files, all `USER`'s.
fn users_subvolume(s: &Scratch) {
    fs::set_permissions(s.root(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(s.path("vol"), fs::Permissions::from_mode(0o755)).unwrap();
    s.mkdir("vol/home");
    subvolume(s, "vol/home/sv");
    files(s, "vol/home/sv", 100);
    let out = Command::new("chown")
        .args(["-R", &format!("{USER}:{USER}")])
        .arg(s.path("vol/home"))
        .output()
        .unwrap();
    assert!(out.status.success(), "chown: {out:?}");
}

#[test]
fn a_subvolume_the_caller_may_not_delete_is_walked_with_one_line_why() {
    let s = scratch!();
    // Without user_subvol_rm_allowed, only root may delete a subvolume.
    let _v = or_skip!(btrfs(&s, ""));
    users_subvolume(&s);
    let out = rm_as_user(&s, &["-r", "--json", "vol/home/sv"]);
    util::assert_success(&out);
    assert!(!s.exists("vol/home/sv"), "{}", util::stderr_of(&out));
    let err = util::stderr_of(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("'vol/home/sv': a btrfs subvolume, removed file by file")
            && lines[0].contains("user_subvol_rm_allowed"),
        "{err}"
    );
    let v = json(&out);
    assert_eq!(v["subvolumes"][0]["how"], "walk", "{v}");
    assert_eq!(v["files"].as_u64(), Some(100), "{v}");
}

#[test]
fn user_subvol_rm_allowed_lets_a_user_delete_their_subvolume_whole() {
    let s = scratch!();
    let _v = or_skip!(btrfs(&s, "user_subvol_rm_allowed"));
    users_subvolume(&s);
    let out = rm_as_user(&s, &["-r", "--json", "vol/home/sv"]);
    util::assert_success(&out);
    assert!(!s.exists("vol/home/sv"));
    let v = json(&out);
    assert_eq!(v["subvolumes"][0]["how"], "snap_destroy_v2", "{v}");
    assert_eq!(v["files"].as_u64(), Some(0), "{v}");
    assert_eq!(util::stderr_of(&out), "");
}

#[test]
fn background_frees_a_tree_with_subvolumes_and_a_subvolume_target() {
    let s = scratch!();
    let v = or_skip!(btrfs(&s, ""));
    let trash = util::trash_dir(&s.path("vol"));
    let settle = util::ReaperSettle {
        trash: trash.clone(),
    };
    s.file("vol/t/a", "a\n");
    subvolume(&s, "vol/t/sv");
    files(&s, "vol/t/sv", 80);
    subvolume(&s, "vol/t/sv/inner");
    s.file("vol/t/sv/inner/x", "x\n");
    subvolume(&s, "vol/sv2");
    files(&s, "vol/sv2", 40);
    let out = s
        .rm(&["-r", "--background", "vol/t", "vol/sv2"])
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(!s.exists("vol/t") && !s.exists("vol/sv2"));
    assert!(
        util::wait_trash_idle(&trash, Duration::from_secs(60), true),
        "the reaper did not empty {}: {:?}\n{}",
        trash.display(),
        util::trash_entries(&trash),
        fs::read_to_string(trash.join("reaper.log")).unwrap_or_default()
    );
    assert_eq!(live_subvolumes(&s.path("vol")), Vec::<String>::new());
    let out = s
        .cmd(&["status"])
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    let text = util::stdout_of(&out);
    assert!(!text.contains("could not be freed"), "{text}");
    drop(settle);
    drop(v);
}

/// `PROG ARGS` in a copy of the scenario under `dir` (GNU rm or reclaim as `rm`): status,
/// stdout, stderr with the directory's name taken out.
fn run_rm(s: &Scratch, prog: &Path, dir: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(prog)
        .args(args)
        .current_dir(s.path(dir))
        .env("LC_ALL", "C")
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        util::stdout_of(&out),
        util::stderr_of(&out).replace(prog.to_str().unwrap(), "rm"),
    )
}

#[test]
fn gnu_mode_matches_gnu_rm_on_subvolumes() {
    let s = scratch!();
    let _v = or_skip!(btrfs(&s, ""));
    let link = s.path("bin/rm");
    s.mkdir("bin");
    std::os::unix::fs::symlink(util::reclaim_bin(), &link).unwrap();
    let gnu = Path::new("/usr/bin/rm");
    for (i, args) in [
        &["-rf", "t"][..],
        &["-r", "--one-file-system", "t"][..],
        &["-rv", "t"][..],
    ]
    .iter()
    .enumerate()
    {
        for who in ["gnu", "ours"] {
            let t = format!("vol/{i}{who}/t");
            s.file(format!("{t}/a"), "a\n");
            subvolume(&s, &format!("{t}/sv"));
            s.file(format!("{t}/sv/b"), "b\n");
            subvolume(&s, &format!("{t}/sv/inner"));
            s.file(format!("{t}/sv/inner/c"), "c\n");
        }
        let theirs = run_rm(&s, gnu, &format!("vol/{i}gnu"), args);
        let ours = run_rm(&s, &link, &format!("vol/{i}ours"), args);
        assert_eq!(ours, theirs, "rm {args:?}");
        assert_eq!(
            s.snapshot(format!("vol/{i}ours")),
            s.snapshot(format!("vol/{i}gnu")),
            "rm {args:?}: the trees left differ"
        );
    }
}

/// Chunk `chunk` of a file whose 4 KiB blocks all differ: block `i` starts with `i * seed`
/// and is filled with the low byte of `i`.
fn pattern_chunk(seed: u64, chunk: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    for b in 0..(len / 4096) as u64 {
        let i = chunk * (len as u64 / 4096) + b;
        let mut block = [i as u8; 4096];
        block[..8].copy_from_slice(&i.wrapping_mul(seed).to_le_bytes());
        out.extend_from_slice(&block);
    }
    out
}

#[test]
fn reflinked_copies_are_reported_not_freed_and_the_original_stays_intact() {
    use std::io::{Read, Write};
    const CHUNK: usize = 4 << 20;
    const CHUNKS: u64 = 64; // 256 MiB
    let s = scratch!();
    let _v = or_skip!(Volume::btrfs(&s, "vol", 1 << 30, ""));
    let seed = 0x9E37_79B9_7F4A_7C15;
    let mut f = fs::File::create(s.path("vol/a")).unwrap();
    for c in 0..CHUNKS {
        f.write_all(&pattern_chunk(seed, c, CHUNK)).unwrap();
    }
    f.sync_all().unwrap();
    drop(f);
    s.mkdir("vol/t");
    for copy in ["vol/b", "vol/t/c"] {
        let out = Command::new("cp")
            .args(["--reflink=always"])
            .arg(s.path("vol/a"))
            .arg(s.path(copy))
            .output()
            .unwrap();
        assert!(out.status.success(), "cp --reflink: {out:?}");
    }
    Command::new("sync").status().unwrap();
    // A named copy, and one in a tree (a small directory: its large files are stated).
    let out = s.rm(&["-r", "--json", "vol/b", "vol/t"]).output().unwrap();
    util::assert_success(&out);
    assert!(!s.exists("vol/b") && !s.exists("vol/t"));
    let v = json(&out);
    // What the file systems gave back is measured too; nothing like 2 x 256 MiB was.
    assert!(
        v["bytes_freed"].as_u64().is_some_and(|b| b < 32 << 20),
        "{v}"
    );
    let gentle = v["gentle"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(gentle.len(), 2, "{v}");
    for g in gentle {
        assert_eq!(g["steps"], 0, "shrunk in steps that free nothing: {v}");
        assert_eq!(
            g["shared_bytes"].as_u64(),
            Some(CHUNKS * CHUNK as u64),
            "{v}"
        );
        assert!(
            g["unlinked_whole"]
                .as_str()
                .is_some_and(|w| w.contains("shared")),
            "{v}"
        );
    }
    // The original, byte for byte.
    let mut f = fs::File::open(s.path("vol/a")).unwrap();
    let mut buf = vec![0u8; CHUNK];
    for c in 0..CHUNKS {
        f.read_exact(&mut buf).unwrap();
        assert!(
            buf == pattern_chunk(seed, c, CHUNK),
            "chunk {c} of vol/a changed"
        );
    }
    assert_eq!(f.read(&mut buf).unwrap(), 0, "vol/a grew");
}

/// Deleted subvolumes the cleaner of the btrfs at `top` has not freed yet, as
/// `btrfs subvolume list -d` shows them.
fn queued(top: &Path) -> usize {
    let out = Command::new("btrfs")
        .args(["subvolume", "list", "-d"])
        .arg(top)
        .output()
        .unwrap();
    assert!(out.status.success(), "btrfs subvolume list -d: {out:?}");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Unfreezes a frozen file system on drop (also when the test panics).
struct Frozen<'a>(&'a Path);

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze").arg("-u").arg(self.0).status();
    }
}

#[test]
fn status_shows_what_btrfs_still_frees_and_wait_waits_for_it() {
    let s = scratch!();
    let _v = or_skip!(btrfs(&s, ""));
    let top = s.path("vol");
    subvolume(&s, "vol/b");
    files(&s, "vol/b", 1_000);
    // Deleted by btrfs-progs (which does not wake the cleaner): queued until the next commit
    // interval. Frozen, the cleaner cannot go on: status and btrfs-progs see the same queue.
    let mut tries = 0;
    let (expect, out, text) = loop {
        tries += 1;
        let sv = format!("vol/a{tries}");
        subvolume(&s, &sv);
        files(&s, &sv, 1_000);
        let del = Command::new("btrfs")
            .args(["subvolume", "delete"])
            .arg(s.path(&sv))
            .output()
            .unwrap();
        assert!(del.status.success(), "{del:?}");
        assert!(Command::new("fsfreeze")
            .arg("-f")
            .arg(&top)
            .status()
            .unwrap()
            .success());
        let guard = Frozen(&top);
        let expect = queued(&top);
        let out = s.cmd(&["status", "--json"]).output().unwrap();
        let text = s.cmd(&["status"]).output().unwrap();
        drop(guard);
        // The cleaner's own 30 s timer may have fired in between: once more.
        if expect > 0 || tries == 3 {
            break (expect, out, text);
        }
    };
    assert!(
        expect > 0,
        "the cleaner was done before the freeze {tries} times"
    );
    util::assert_success(&out);
    let v = util::json_object(&out.stdout);
    let fs = v["file_systems"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"));
    let ours: Vec<&Value> = fs
        .iter()
        .filter(|f| f["mount"] == top.to_str().unwrap())
        .collect();
    assert_eq!(ours.len(), 1, "{v}");
    assert_eq!(ours[0]["fs_type"], "btrfs");
    assert_eq!(
        ours[0]["subvolumes_queued"].as_u64(),
        Some(expect as u64),
        "{v}"
    );
    assert!(
        util::stdout_of(&text).contains("still being freed by its cleaner"),
        "{}",
        util::stdout_of(&text)
    );
    // --wait: back when the cleaner is done (with this one and what was queued before).
    let out = s
        .rm(&["-r", "--wait", "vol/b"])
        .env("XDG_STATE_HOME", util::state_home(&s))
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(!s.exists("vol/b"));
    assert_eq!(
        queued(&top),
        0,
        "--wait returned before btrfs's cleaner was done"
    );
}

#[test]
fn btrfs_and_ext4_images_on_one_disk_get_the_same_profile() {
    let s = scratch!();
    // Both images lie in the same temporary directory's file system, so on the same disk.
    let _b = or_skip!(btrfs(&s, ""));
    let _e = or_skip!(Volume::ext4(&s, "ext", 64 << 20, 256));
    let class = |dir: &str| {
        s.mkdir(format!("{dir}/t/sub"));
        let out = s
            .rm(&["-r", "--json", "--start-pool", &format!("{dir}/t")])
            .output()
            .unwrap();
        util::assert_success(&out);
        let v = json(&out);
        v["profile"]["class"]
            .as_str()
            .unwrap_or_else(|| panic!("{v}"))
            .to_owned()
    };
    // btrfs's st_dev is an anonymous device of its own: the disk is found through the
    // mount's source (the loop device), as ext4's st_dev is that loop device.
    assert_eq!(class("vol"), class("ext"));
}

/// `reap --now ID --wait` of a subvolume in the trash (hidden with a grace window): the file
/// system deletes it whole, and reap returns only when btrfs's cleaner has freed it (and what
/// was queued with it): `status` then shows nothing still being freed.
#[test]
fn reap_wait_waits_for_the_cleaner_of_a_trashed_subvolume() {
    let s = scratch!();
    let _v = or_skip!(btrfs(&s, ""));
    let top = s.path("vol");
    let trash = util::trash_dir(&top);
    let _settle = util::ReaperSettle {
        trash: trash.clone(),
    };
    subvolume(&s, "vol/sv");
    files(&s, "vol/sv", 2_000);
    subvolume(&s, "vol/sv/inner");
    files(&s, "vol/sv/inner", 200);
    let state = util::state_home(&s);
    let out = s
        .rm(&["-r", "--background", "--grace", "1h", "vol/sv"])
        .env("XDG_STATE_HOME", &state)
        .env("RECLAIM_NO_SPAWN", "1")
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(!s.exists("vol/sv"));
    let ids = util::trash_entries(&trash);
    assert_eq!(ids.len(), 1, "{ids:?}");
    // In the trash, in its grace window: still a live subvolume.
    assert_eq!(
        live_subvolumes(&top).len(),
        2,
        "{:?}",
        live_subvolumes(&top)
    );

    let out = s
        .cmd(&["reap", "--now", &ids[0], "--wait", "--json"])
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["entries_freed"], 1, "{v}");
    assert_eq!(
        v["subvolumes_deleted"], 2,
        "deleted whole, nested one first: {v}"
    );
    assert!(v["cleaner_waited_s"].as_f64().is_some(), "{v}");
    assert!(util::trash_entries(&trash).is_empty());
    assert_eq!(live_subvolumes(&top), Vec::<String>::new());
    assert_eq!(
        queued(&top),
        0,
        "reap --wait returned before btrfs's cleaner was done"
    );
    let out = s
        .cmd(&["status", "--json"])
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = util::json_object(&out.stdout);
    let ours: Vec<&Value> = v["file_systems"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .filter(|f| f["mount"] == top.to_str().unwrap())
        .collect();
    assert_eq!(ours.len(), 1, "{v}");
    assert_eq!(ours[0]["subvolumes_queued"].as_u64(), Some(0), "{v}");
    let text = s
        .cmd(&["status"])
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    assert!(
        !util::stdout_of(&text).contains("still being freed"),
        "{}",
        util::stdout_of(&text)
    );

    // Without --wait the summary says the cleaner goes on in the background.
    subvolume(&s, "vol/sv2");
    files(&s, "vol/sv2", 50);
    let out = s
        .rm(&["-r", "--background", "--grace", "1h", "vol/sv2"])
        .env("XDG_STATE_HOME", &state)
        .env("RECLAIM_NO_SPAWN", "1")
        .output()
        .unwrap();
    util::assert_success(&out);
    let ids = util::trash_entries(&trash);
    let out = s
        .cmd(&["reap", "--now", &ids[0]])
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    util::assert_success(&out);
    assert!(
        util::stderr_of(&out).contains("1 subvolume deleted whole (btrfs's cleaner frees it"),
        "{}",
        util::stderr_of(&out)
    );
}
