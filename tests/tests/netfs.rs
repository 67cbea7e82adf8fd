//! reclaim on a network file system, emulated by `netfs` (bench/slowdisk: a FUSE file system
//! that waits a round trip per RPC and, like NFS, rejects rename flags): the engine, the trash
//! (hide, restore, reap without `RENAME_NOREPLACE`), a large file's shrink, `scan`, and a
//! stopped server (a SIGSTOPped daemon) that must not hang `status`.
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
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/slowdisk");
            let find = || {
                ["release", "debug"]
                    .iter()
                    .map(|d| crate_dir.join("target").join(d).join("netfs"))
                    .find(|p| p.exists())
            };
            if let Some(p) = find() {
                return Some(p);
            }
            let built = StdCommand::new(env!("CARGO"))
                .args(["build", "--quiet", "--bin", "netfs", "--manifest-path"])
                .arg(crate_dir.join("Cargo.toml"))
                // Where `find` looks, whatever CARGO_TARGET_DIR says.
                .arg("--target-dir")
                .arg(crate_dir.join("target"))
                .status()
                .is_ok_and(|s| s.success());
            built.then(find).flatten()
        })
        .clone()
}

/// A `netfs` daemon serving `root/back` at `root/vol`; stopped and unmounted on drop (also
/// used by the MPI tests, to slow a removal down).
pub(crate) struct Net {
    child: Option<Child>,
    vol: PathBuf,
}

impl Net {
    /// Starts netfs (RTT `rtt`, mounted as `fuse.nfs` so reclaim sees a network file system).
    /// Err: why not (for a skip).
    pub(crate) fn start(s: &Scratch, rtt: &str) -> Result<Net, String> {
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
            .args([
                "--rtt",
                rtt,
                "--slots",
                "64",
                "--readdirplus",
                "--subtype",
                "nfs",
            ])
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
        if let Some(mut c) = self.child.take() {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let t0 = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(15) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
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
