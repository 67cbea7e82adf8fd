//! reclaim on a network file system, emulated by `netfs` (bench/slowdisk: a FUSE file system
//! that waits a round trip per RPC and, like NFS, rejects rename flags): the engine, the trash
//! (hide, restore, reap without `RENAME_NOREPLACE`), a large file's shrink, `scan`, a stopped
//! server (a SIGSTOPped daemon) that must not hang `status`, a server whose listings shift
//! under removals (nothing may be left), a network file system that shows as plain `fuse` (found
//! by its measured round trip), and the latency probe's share of the requests.
//!
//! Root only. The `netfs` binary is built on first use (`cargo build --manifest-path
//! bench/slowdisk/Cargo.toml --bin netfs`, as `.ci/run` does up front), or named by
//! `RECLAIM_NETFS_BIN`; if that fails each test says it is skipped.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{self, scratch, Scratch};

/// The emulator binary: given, built already, or built now (once per test run).
fn netfs_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RECLAIM_NETFS_BIN") {
        return Some(PathBuf::from(p));
    }
    slowdisk_tool("netfs")
}

/// A binary of bench/slowdisk (`netfs`, `slowdisk`), built now (once per test run and name).
pub(crate) fn slowdisk_tool(name: &'static str) -> Option<PathBuf> {
    static BUILT: std::sync::Mutex<Vec<(&str, Option<PathBuf>)>> =
        std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, bin)) = built.iter().find(|(n, _)| *n == name) {
        return bin.clone();
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/slowdisk");
    // Built every run (a no-op when it is up to date): a binary left from an older
    // checkout lacks the options the tests use, and its mount failed as a skip.
    let ok = StdCommand::new(env!("CARGO"))
        .args(["build", "--quiet", "--bin", name, "--manifest-path"])
        .arg(crate_dir.join("Cargo.toml"))
        // Where the path below says, whatever CARGO_TARGET_DIR says.
        .arg("--target-dir")
        .arg(crate_dir.join("target"))
        .status()
        .is_ok_and(|s| s.success());
    let bin = crate_dir.join("target/debug").join(name);
    let bin = (ok && bin.exists()).then_some(bin);
    built.push((name, bin.clone()));
    bin
}

/// A `netfs` daemon serving `root/back` at `root/vol`; stopped and unmounted on drop (also
/// used by the MPI tests, to slow a removal down).
pub(crate) struct Net {
    child: Option<Child>,
    vol: PathBuf,
    stats: PathBuf,
}

impl Net {
    /// Starts netfs (RTT `rtt`, mounted as `fuse.nfs` so reclaim sees a network file system).
    /// Err: why not (for a skip).
    pub(crate) fn start(s: &Scratch, rtt: &str) -> Result<Net, String> {
        Net::start_with(s, rtt, &["--subtype", "nfs"])
    }

    /// `start` with other arguments for netfs (its subtype, listing mode; `--stats` is
    /// given: see `stats`).
    pub(crate) fn start_with(s: &Scratch, rtt: &str, extra: &[&str]) -> Result<Net, String> {
        util::need_root()?;
        let bin = netfs_bin().ok_or("netfs could not be built (cargo build --manifest-path bench/slowdisk/Cargo.toml --bin netfs)")?;
        let back = s.mkdir("back");
        let vol = s.mkdir("vol");
        fs::set_permissions(&back, fs::Permissions::from_mode(0o1777)).unwrap();
        let ready = s.path("ready");
        let child = StdCommand::new(bin)
            .arg("--backing")
            .arg(&back)
            .arg("--mount")
            .arg(&vol)
            .args(["--rtt", rtt, "--slots", "64", "--readdirplus"])
            .args(extra)
            .arg("--stats")
            .arg(s.path("stats.json"))
            .arg("--ready-file")
            .arg(&ready)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start netfs: {e}"))?;
        let mut net = Net {
            child: Some(child),
            vol,
            stats: s.path("stats.json"),
        };
        let t0 = Instant::now();
        while !ready.exists() {
            if t0.elapsed() > Duration::from_secs(20)
                || net
                    .child
                    .as_mut()
                    .unwrap()
                    .try_wait()
                    .ok()
                    .flatten()
                    .is_some()
            {
                return Err("netfs did not mount".to_string());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(net)
    }

    /// The daemon's counters now: RPCs of each kind (`rpcs` in all).
    fn stats(&self) -> Value {
        let before = fs::metadata(&self.stats).and_then(|m| m.modified()).ok();
        self.signal(libc::SIGUSR1);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            let now = fs::metadata(&self.stats).and_then(|m| m.modified()).ok();
            if now.is_some() && now != before {
                if let Ok(v) = serde_json::from_slice::<Value>(&fs::read(&self.stats).unwrap()) {
                    return v;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("netfs wrote no stats");
    }

    fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        if let Some(c) = self.child.take() {
            util::stop_child(c, Duration::from_secs(15));
        }
        if util::mounts_under(&self.vol).contains(&self.vol) {
            let _ = StdCommand::new("umount").arg("-l").arg(&self.vol).status();
        }
    }
}

fn json(out: &std::process::Output) -> Value {
    util::json_object(&out.stdout)
}

fn tree(s: &Scratch, rel: &str, dirs: usize, files: usize) {
    for d in 0..dirs {
        for f in 0..files {
            s.file(format!("{rel}/d{d}/f{f}"), "x");
        }
    }
}

#[test]
fn engine_removes_a_tree_on_a_network_file_system() {
    let s = scratch!();
    let _net = util::or_skip!(Net::start(&s, "0.2ms"));
    tree(&s, "vol/t", 20, 25);
    s.symlink("vol/t/link", "/");
    let out = s.rm(&["-r", "--json", "vol/t"]).output().unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["files"], 501, "{v}");
    assert_eq!(v["dirs"], 21, "{v}");
    assert_eq!(v["profile"]["class"], "network", "{v}");
    assert_eq!(v["profile"]["fs_type"], "fuse.nfs", "{v}");
    assert!(!s.exists("vol/t") && !s.exists("back/t"));
}

#[test]
fn trash_works_without_rename_flags() {
    let s = scratch!();
    let _net = util::or_skip!(Net::start(&s, "0.2ms"));
    s.file("vol/f", "file\n");
    tree(&s, "vol/t", 3, 5);
    let out = s
        .rm(&[
            "-r",
            "--background",
            "--grace",
            "1h",
            "--json",
            "vol/f",
            "vol/t",
        ])
        .env(util::NO_SPAWN, "1")
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["hidden"].as_array().map(Vec::len), Some(2), "{v}");
    assert!(!s.exists("vol/f") && !s.exists("vol/t"));
    let trash = util::trash_dir(&s.path("vol"));
    assert_eq!(util::trash_entries(&trash).len(), 2);
    // Restore (no rename flags: the name is taken atomically first, never clobbered).
    let f = s.path("vol/f").to_string_lossy().into_owned();
    util::assert_success(&s.cmd(&["restore", &f]).output().unwrap());
    assert_eq!(fs::read(s.path("vol/f")).unwrap(), b"file\n");
    s.file("vol/t", "taken\n");
    let t = s.path("vol/t").to_string_lossy().into_owned();
    let out = s.cmd(&["restore", &t]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    assert_eq!(fs::read(s.path("vol/t")).unwrap(), b"taken\n");
    fs::remove_file(s.path("vol/t")).unwrap();
    util::assert_success(&s.cmd(&["restore", &t]).output().unwrap());
    assert_eq!(fs::read(s.path("vol/t/d0/f0")).unwrap(), b"x");
    assert!(util::trash_entries(&trash).is_empty());
    // Without a grace window the reaper claims (a plain rename inside the entry) and frees.
    let out = s
        .rm(&["-r", "--background", "vol/f", "vol/t"])
        .env(util::NO_SPAWN, "1")
        .output()
        .unwrap();
    util::assert_success(&out);
    let tr = trash.to_string_lossy().into_owned();
    let out = s.cmd(&["reap", "--json", "--trash", &tr]).output().unwrap();
    util::assert_success(&out);
    assert_eq!(json(&out)["entries_freed"], 2);
    assert!(util::trash_entries(&trash).is_empty());
    assert!(fs::read_dir(s.path("back")).unwrap().all(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".reclaim-")));
}

#[test]
fn a_large_file_is_freed_gently_on_a_network_file_system() {
    let s = scratch!();
    let _net = util::or_skip!(Net::start(&s, "0.2ms"));
    // Made in the backing directory (no round trips), seen through the mount.
    let f = fs::File::create(s.path("back/big")).unwrap();
    rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, 96 << 20).unwrap();
    drop(f);
    let out = s
        .rm(&["--json", "--rate", "256M", "vol/big"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json(&out);
    let g = &v["gentle"][0];
    assert_eq!(g["path"], "vol/big", "{v}");
    assert!(!s.exists("vol/big") && !s.exists("back/big"));
    // Shrunk in steps, or unlinked whole with the reason (no lease on this file system).
    assert!(
        g["steps"].as_u64() >= Some(1) || g["unlinked_whole"].is_string(),
        "{v}"
    );
    assert!(util::trash_entries(&util::trash_dir(&s.path("vol"))).is_empty());
}

#[test]
fn scan_counts_a_network_file_system() {
    let s = scratch!();
    let _net = util::or_skip!(Net::start(&s, "0.2ms"));
    tree(&s, "vol/t", 10, 30);
    let out = s
        .cmd(&["scan", "--json", "--no-estimate", "vol/t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["files"], 300, "{v}");
    assert_eq!(v["dirs"], 11, "{v}");
    assert_eq!(v["profile"]["class"], "network", "{v}");
    assert_eq!(v["threads"], 64, "{v}");
}

#[test]
fn a_stopped_server_delays_status_by_a_bounded_time() {
    let s = scratch!();
    let net = util::or_skip!(Net::start(&s, "0.2ms"));
    s.file("vol/f", "f\n");
    let out = s
        .rm(&["--background", "--grace", "1h", "vol/f"])
        .env(util::NO_SPAWN, "1")
        .output()
        .unwrap();
    util::assert_success(&out);
    // The server stops answering (kill -STOP of the daemon).
    net.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    let out = s
        .cmd(&["status", "--json"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let took = t0.elapsed();
    net.signal(libc::SIGCONT);
    assert!(
        took < Duration::from_secs(5),
        "status took {took:?} with a stopped server"
    );
    let v = json(&out);
    let unreachable = v["unreachable"].as_array().cloned().unwrap_or_default();
    assert!(
        unreachable
            .iter()
            .any(|u| u["path"].as_str().is_some_and(|p| p.ends_with("/vol"))),
        "the stopped mount is named: {v}"
    );
    // Answering again: the entry is there and can be restored.
    let f = s.path("vol/f").to_string_lossy().into_owned();
    util::assert_success(&s.cmd(&["restore", &f]).output().unwrap());
}

/// RPCs of kind `op` counted in `stats` (0 if none).
fn rpcs_of(stats: &Value, op: &str) -> u64 {
    stats["ops"][op]["count"].as_u64().unwrap_or(0)
}

#[test]
fn nothing_is_left_when_the_listing_shifts_under_removals() {
    // Servers whose directory cookies are positions (or whose order changes) skip entries
    // when names are removed while a directory is read: its rmdir then finds it not empty.
    for mode in ["index", "reorder"] {
        let s = scratch!();
        let net = util::or_skip!(Net::start_with(
            &s,
            "0.1ms",
            &["--subtype", "nfs", "--listing", mode]
        ));
        // Made on the server's side; one large directory and a tree of large ones. The large
        // one's names are long, so its listing takes several `getdents` pieces whatever the
        // piece size the measured round trip gives (at most 256 KiB: 3,000 short names fit
        // in one, and a listing read whole before any unlink never shifts).
        let long = "x".repeat(200);
        for i in 0..3000 {
            s.file(format!("back/t/big/f{i:05}{long}"), "");
        }
        for d in 0..3 {
            for i in 0..800 {
                s.file(format!("back/t/d{d}/g{i:04}"), "");
            }
        }
        let before = net.stats();
        // Streamed from the first (a removal that starts small reads its first directories
        // whole, and a listing read whole before any unlink never shifts).
        let out = s
            .rm(&["-r", "--json", "--start-pool", "vol/t"])
            .output()
            .unwrap();
        util::assert_success(&out);
        let v = json(&out);
        assert_eq!(v["files"], 5400, "{mode}: {v}");
        assert_eq!(v["dirs"], 5, "{mode}: {v}");
        assert!(!s.exists("back/t"), "{mode}: something was left");
        // The listings did shift: some rmdir found its directory not empty, and the
        // directory was listed again.
        let after = net.stats();
        let rmdirs = rpcs_of(&after, "rmdir") - rpcs_of(&before, "rmdir");
        assert!(
            rmdirs > 5,
            "{mode}: no directory was listed again ({rmdirs} rmdirs)"
        );
        drop(net);
    }
}

#[test]
fn a_plain_fuse_mount_with_network_round_trips_is_taken_for_a_network() {
    // Most FUSE network file systems show as plain `fuse` (or a subtype nobody listed): the
    // measured metadata round trip says what they are.
    for subtype in ["", "acmefs"] {
        let s = scratch!();
        let _net = util::or_skip!(Net::start_with(&s, "0.5ms", &["--subtype", subtype]));
        tree(&s, "vol/t", 8, 40);
        let out = s.rm(&["-r", "--json", "vol/t"]).output().unwrap();
        util::assert_success(&out);
        let v = json(&out);
        assert_eq!(v["files"], 320, "{v}");
        let want = if subtype.is_empty() {
            "fuse".to_string()
        } else {
            format!("fuse.{subtype}")
        };
        assert_eq!(v["profile"]["fs_type"], want.as_str(), "{v}");
        assert_eq!(v["profile"]["class"], "network", "{v}");
        assert!(
            v["profile"]["round_trip_ms"].as_f64() >= Some(0.4),
            "the round trip was measured: {v}"
        );
        assert!(
            v["profile"]["note"]
                .as_str()
                .is_some_and(|n| n.contains("round trip")),
            "{v}"
        );
        let c = &v["concurrency"];
        assert_eq!(c["rule"], "measured", "{v}");
        assert_eq!(c["start"], 8, "{v}");
        assert!(c["why"].as_str().is_some_and(|w| !w.is_empty()), "{v}");
        assert!(!s.exists("back/t"));
    }
}

#[test]
fn the_latency_probe_is_a_small_share_of_the_requests() {
    let s = scratch!();
    let net = util::or_skip!(Net::start(&s, "0.2ms"));
    for d in 0..20 {
        for i in 0..150 {
            s.file(format!("back/t/d{d}/f{i}"), "");
        }
    }
    let before = net.stats();
    let out = s.rm(&["-r", "--json", "vol/t"]).output().unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["files"], 3000, "{v}");
    // Governed by default on a network file system: the probe ran.
    let probes = v["pace"]["probe_before"]["count"].as_u64().unwrap_or(0)
        + v["pace"]["probe_during"]["count"].as_u64().unwrap_or(0);
    assert!(probes > 0, "{v}");
    let after = net.stats();
    let all = after["rpcs"].as_u64().unwrap() - before["rpcs"].as_u64().unwrap();
    let probe = ["write", "fsync"]
        .iter()
        .map(|op| rpcs_of(&after, op) - rpcs_of(&before, op))
        .sum::<u64>();
    assert!(
        probe * 50 <= all,
        "the probe's writes and syncs were {probe} of {all} requests (more than 2%)"
    );
}

#[test]
fn a_directory_that_stays_not_empty_is_named_after_a_few_listings() {
    // A server that never lists some entries (SMB's access-based enumeration hides what the
    // user may not read): the directory is listed again a few times, then named, with the
    // reason; the rest of the tree goes.
    let s = scratch!();
    let net = util::or_skip!(Net::start_with(
        &s,
        "0.1ms",
        &["--subtype", "nfs", "--hide", ".unlisted"]
    ));
    tree(&s, "back/t", 3, 30);
    s.file("back/t/d1/.unlisted", "");
    let before = net.stats();
    let out = s.rm(&["-r", "--json", "vol/t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let v = json(&out);
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{v}");
    assert_eq!(errors[0]["path"], "vol/t/d1", "{v}");
    assert_eq!(errors[0]["error"], "Directory not empty", "{v}");
    assert!(util::stderr_of(&out).contains("'vol/t/d1': Directory not empty"));
    assert!(!s.exists("back/t/d0") && !s.exists("back/t/d2"));
    assert!(s.exists("back/t/d1/.unlisted") && !s.exists("back/t/d1/f0"));
    // Its rmdir was tried once, then after each of the listings again (bounded), and t's
    // never (it keeps d1).
    let after = net.stats();
    let rmdirs = rpcs_of(&after, "rmdir") - rpcs_of(&before, "rmdir");
    assert_eq!(
        rmdirs,
        2 + 1 + 3,
        "d0, d2, d1 once and listed again 3 times"
    );
}

/// The requests of each kind `run` sends to `net` (and the total).
fn requests(net: &Net, run: impl FnOnce()) -> Value {
    let before = net.stats();
    run();
    let after = net.stats();
    let mut d = serde_json::Map::new();
    for (op, v) in after["ops"].as_object().unwrap() {
        let n = v["count"].as_u64().unwrap_or(0) - rpcs_of(&before, op);
        if v["rpc"] == true && n > 0 {
            d.insert(op.clone(), n.into());
        }
    }
    let all = after["rpcs"].as_u64().unwrap() - before["rpcs"].as_u64().unwrap();
    d.insert("all".into(), all.into());
    Value::Object(d)
}

#[test]
fn a_client_that_keeps_no_names_gets_no_request_more_than_rm_rf() {
    // Entries that time out at once (NFS `lookupcache=none`, a FUSE daemon's entry timeout of
    // 0): a name looked up ahead of its unlink, or stated in a small directory, is looked up
    // again by the unlink. Measured, those are left out: reclaim sends no more requests per
    // file than GNU rm -rf on the same tree, big phase and small, large directories and small
    // ones. Where names are kept (netfs's default), they are looked up ahead as before.
    let s = scratch!();
    let net = util::or_skip!(Net::start_with(
        &s,
        "0.2ms",
        &["--subtype", "nfs", "--attr-ttl", "0"]
    ));
    for (dirs, files) in [(6, 150), (8, 20)] {
        tree(&s, "back/a", dirs, files);
        let peer = requests(&net, || {
            let out = StdCommand::new("rm")
                .arg("-rf")
                .arg(s.path("vol/a"))
                .output()
                .unwrap();
            util::assert_success(&out);
        });
        assert!(!s.exists("back/a"));
        for (name, start) in [("b", "--start-pool"), ("c", "-r")] {
            tree(&s, &format!("back/{name}"), dirs, files);
            let mut v = Value::Null;
            let ours = requests(&net, || {
                let out = s
                    .rm(&["-r", "--json", start, &format!("vol/{name}")])
                    .output()
                    .unwrap();
                util::assert_success(&out);
                v = json(&out);
            });
            assert!(!s.exists(format!("back/{name}")));
            if start == "--start-pool" {
                assert_eq!(v["profile"]["names_cached"], false, "{v}");
                assert_eq!(v["profile"]["stat_small_dirs"], false, "{v}");
            }
            // Lookups and all requests: at most GNU's (a few of the profile's own lookups
            // and the probe's writes aside).
            let n = (dirs * files) as u64;
            for kind in ["lookup", "all"] {
                let (ours_n, peer_n) = (ours[kind].as_u64().unwrap(), peer[kind].as_u64().unwrap());
                assert!(
                    ours_n <= peer_n + n / 50 + 16,
                    "{kind} ({dirs}x{files}, {start}): reclaim {ours_n}, rm -rf {peer_n}: \
                     {ours} against {peer}"
                );
            }
        }
    }
    drop(net);

    // Names kept: measured so.
    let s = scratch!();
    let _net = util::or_skip!(Net::start(&s, "0.2ms"));
    tree(&s, "vol/t", 2, 100);
    let out = s
        .rm(&["-r", "--json", "--start-pool", "vol/t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["profile"]["names_cached"], true, "{v}");
}

#[test]
fn one_directory_is_not_probed_for_nothing() {
    // The governor acts by holding workers back; in one directory the client serializes the
    // unlinks and one worker is at work whatever it does: its probe writes (a write and a
    // sync each) would be requests for nothing there. A tree is still probed.
    let s = scratch!();
    let net = util::or_skip!(Net::start(&s, "0.2ms"));
    s.mkdir("back/flat");
    for i in 0..1500 {
        fs::write(s.path(format!("back/flat/f{i}")), "").unwrap();
    }
    let ours = requests(&net, || {
        let out = s
            .rm(&["-r", "--json", "--start-pool", "vol/flat"])
            .output()
            .unwrap();
        util::assert_success(&out);
    });
    let probe = ours["write"].as_u64().unwrap_or(0) + ours["fsync"].as_u64().unwrap_or(0);
    assert!(probe <= 4, "one directory was probed: {ours}");
}

#[test]
fn the_latency_probe_never_writes_inside_the_tree_it_paces() {
    // FUSE has no O_TMPFILE here: the probe's file is created by name and unlinked at once. In
    // the tree being removed the walk could meet it in that moment, remove it and count it as
    // the user's (5,401 files of 5,400), and the probe then stopped ("No such file"). It is
    // made beside the tree, in the directory the walk never lists.
    if StdCommand::new("strace").arg("-V").output().is_err() {
        util::skip!("no strace");
    }
    let s = scratch!();
    let _net = util::or_skip!(Net::start(&s, "0.1ms"));
    tree(&s, "vol/t", 4, 200);
    let trace = s.path("strace.out");
    let out = StdCommand::new("strace")
        .args(["-f", "-qq", "-y", "-e", "trace=openat,unlinkat", "-o"])
        .arg(&trace)
        .arg(util::reclaim_bin())
        .args([
            "rm",
            "-r",
            "--json",
            "--start-pool",
            "--max-latency",
            "50ms",
        ])
        .arg(s.path("vol/t"))
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .env("RECLAIM_MIN_FREE", "0")
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["files"], 800, "{v}");
    assert!(v["pace"]["probe_error"].is_null(), "{v}");
    let text = fs::read_to_string(&trace).unwrap();
    let probes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("openat(") && l.contains(".reclaim-probe."))
        .collect();
    assert!(!probes.is_empty(), "no probe file was made: {text}");
    let vol = s.path("vol").display().to_string();
    for l in probes {
        assert!(
            l.contains(&format!("<{vol}>")),
            "made elsewhere than {vol}: {l}"
        );
    }
}
