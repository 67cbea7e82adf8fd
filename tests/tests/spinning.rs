//! reclaim on a spinning disk, emulated by `slowdisk` (bench/slowdisk: a FUSE file whose
//! requests take a 7200 rpm disk's seek, rotation and transfer time) under a loop device marked
//! rotational, as a real HDD's driver marks it: a tree is removed from one worker and no
//! governor (as `rm -rf`), more workers only where measured to pay, with no probe writes, while
//! an explicit `--max-latency` governs it against the latency measured idle (issues 25, 43).
//!
//! Root only; `slowdisk` is built on first use (as `netfs` is), else the test says it skipped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{self, scratch, Scratch};

/// An ext4 image behind `slowdisk --model hdd-7200`, on a loop device marked rotational,
/// mounted on `root/vol`; all undone on drop (also used by the space pressure tests).
pub(crate) struct SpinningDisk {
    child: Option<Child>,
    fuse: PathBuf,
    pub(crate) vol: PathBuf,
    loop_dev: Option<String>,
}

impl SpinningDisk {
    fn start(s: &Scratch) -> Result<SpinningDisk, String> {
        SpinningDisk::start_sized(s, 256 << 20)
    }

    /// One of `size` bytes (sparse: only what is written takes room).
    pub(crate) fn start_sized(s: &Scratch, size: u64) -> Result<SpinningDisk, String> {
        util::need_root()?;
        let bin = crate::netfs::slowdisk_tool("slowdisk").ok_or(
            "slowdisk could not be built (cargo build --manifest-path bench/slowdisk/Cargo.toml)",
        )?;
        let image = s.path("disk.img");
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(size))
            .map_err(|e| format!("cannot make {}: {e}", image.display()))?;
        // Made on the plain file (quick), then served slowly.
        let made = StdCommand::new("mkfs.ext4")
            .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"])
            .arg(&image)
            .status()
            .map_err(|e| format!("cannot run mkfs.ext4: {e}"))?;
        if !made.success() {
            return Err("mkfs.ext4 failed".into());
        }
        let fuse = s.mkdir("fuse");
        let ready = s.path("ready");
        let child = StdCommand::new(bin)
            .arg("--backing")
            .arg(&image)
            .args(["--model", "hdd-7200", "--ready-file"])
            .arg(&ready)
            .arg(&fuse)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start slowdisk: {e}"))?;
        let mut disk = SpinningDisk {
            child: Some(child),
            fuse,
            vol: s.path("vol"),
            loop_dev: None,
        };
        let t0 = Instant::now();
        while !ready.exists() {
            let exited = disk.child.as_mut().unwrap().try_wait().ok().flatten();
            if t0.elapsed() > Duration::from_secs(20) || exited.is_some() {
                return Err("slowdisk did not mount".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = StdCommand::new("losetup")
            .args(["--direct-io=on", "-f", "--show"])
            .arg(disk.fuse.join("disk.img"))
            .output()
            .map_err(|e| format!("cannot run losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        disk.loop_dev = Some(dev.clone());
        let name = dev.trim_start_matches("/dev/");
        std::fs::write(format!("/sys/block/{name}/queue/rotational"), "1")
            .map_err(|e| format!("cannot mark {dev} rotational: {e}"))?;
        std::fs::create_dir(&disk.vol).map_err(|e| format!("mkdir vol: {e}"))?;
        let mounted = StdCommand::new("mount")
            .args(["-t", "ext4", &dev])
            .arg(&disk.vol)
            .status()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !mounted.success() {
            return Err(format!("cannot mount {dev}"));
        }
        Ok(disk)
    }

    /// A tree of `files` empty files in 10 directories at `vol/rel`, written out.
    fn tree(&self, rel: &str, files: usize) -> PathBuf {
        let root = self.vol.join(rel);
        for i in 0..files {
            let d = root.join(format!("d{}", i % 10));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("f{i}")), b"").unwrap();
        }
        let synced = StdCommand::new("sync").arg("-f").arg(&root).status();
        assert!(synced.is_ok_and(|s| s.success()));
        root
    }
}

impl SpinningDisk {
    /// Mounted again: nothing of it in the caches, its next reads go to the disk.
    fn cold(&self) {
        let dev = self
            .loop_dev
            .as_deref()
            .expect("a mounted disk has its loop device");
        for args in [vec!["umount".as_ref(), self.vol.as_os_str()], {
            let mut m: Vec<&std::ffi::OsStr> = vec!["mount".as_ref(), "-t".as_ref()];
            m.extend(["ext4".as_ref(), dev.as_ref(), self.vol.as_os_str()]);
            m
        }] {
            let ok = StdCommand::new(args[0]).args(&args[1..]).status();
            assert!(ok.is_ok_and(|s| s.success()), "{args:?} failed");
        }
    }
}

impl Drop for SpinningDisk {
    fn drop(&mut self) {
        if util::mounts_under(&self.vol).contains(&self.vol) {
            let _ = StdCommand::new("umount").arg(&self.vol).status();
        }
        if let Some(dev) = self.loop_dev.take() {
            let _ = StdCommand::new("losetup").args(["-d", &dev]).status();
            // The loop device lets go of the FUSE file asynchronously.
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5)
                && StdCommand::new("losetup")
                    .arg("-j")
                    .arg(self.fuse.join("disk.img"))
                    .output()
                    .is_ok_and(|o| !o.stdout.is_empty())
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        if let Some(c) = self.child.take() {
            util::stop_child(c, Duration::from_secs(10));
        }
        if util::mounts_under(&self.fuse).contains(&self.fuse) {
            let _ = StdCommand::new("umount").arg("-l").arg(&self.fuse).status();
        }
    }
}

fn rm_json(s: &Scratch, args: &[&str], target: &Path) -> Value {
    let mut all: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    all.push(target.into());
    let out = s.rm(&all).output().unwrap();
    util::assert_success(&out);
    assert!(!target.exists(), "{} left behind", target.display());
    util::json_object(&out.stdout)
}

#[test]
fn a_spinning_disk_gets_one_worker_and_an_explicit_budget_is_judged_against_it_idle() {
    let s = scratch!();
    let disk = util::or_skip!(SpinningDisk::start(&s));

    // By default: one worker to start, as rm -rf, measured from there, no governor and no
    // probe (the governor's own synchronous probe writes were the harm it added:
    // bench/RESULTS.md, 2026-11-26).
    let t = disk.tree("t", 200);
    let v = rm_json(&s, &["-r", "--json", "--start-pool"], &t);
    let profile = &v["profile"];
    assert_eq!(profile["class"], "rotational", "{v}");
    assert_eq!(profile["governed"], false, "{v}");
    assert_eq!(profile["start"], 1, "{v}");
    let note = profile["note"].as_str().unwrap_or_default();
    assert!(note.contains("one worker to start"), "{v}");
    assert_eq!(v["concurrency"]["start"], 1, "{v}");
    assert_eq!(v["concurrency"]["rule"], "measured", "{v}");
    assert!(v.get("pace").is_none(), "no governor, no probe: {v}");

    // --max-latency given: governed, from one worker, against latencies measured before the
    // workers started (several of them: the idle probe), and the budget honoured as given
    // when the disk idles below it.
    let t = disk.tree("t2", 200);
    let v = rm_json(
        &s,
        &["-r", "--json", "--start-pool", "--max-latency", "5s"],
        &t,
    );
    let pace = &v["pace"];
    assert_eq!(pace["max_latency_ms"].as_f64(), Some(5000.0), "{v}");
    assert_eq!(
        pace["workers_max"], 1,
        "a rotational disk starts with one: {v}"
    );
    let idle = pace["probe_before"]["count"].as_u64().unwrap_or(0);
    assert!(idle >= 3, "the baseline is the idle probe's: {v}");
    assert!(
        pace["probe_before"]["p50_ms"].as_f64().unwrap_or(0.0) >= 8.0,
        "an emulated 7200 rpm disk answers a synchronous write in 8 ms or more: {v}"
    );
}

#[test]
fn a_disk_that_says_it_spins_is_told_by_the_walk_s_first_reads() {
    let s = scratch!();
    let disk = util::or_skip!(SpinningDisk::start(&s));

    // Read cold from the spinning disk on the calling thread, the removal proves big (by its
    // time): one worker to start, the reads' times said.
    let t = disk.tree("t", 400);
    disk.cold();
    let v = rm_json(&s, &["-r", "--json"], &t);
    let profile = &v["profile"];
    assert_eq!(profile["class"], "rotational", "{v}");
    assert_eq!(profile["start"], 1, "{v}");
    assert_eq!(v["concurrency"]["start"], 1, "{v}");
    let ms = profile["first_read_ms"].as_f64().unwrap_or(0.0);
    assert!(ms >= 3.0, "a 7200 rpm disk's cold reads took {ms} ms: {v}");
    let note = profile["note"].as_str().unwrap_or_default();
    assert!(note.contains("directory reads took"), "{v}");
    assert!(v.get("pace").is_none(), "no governor, no probe: {v}");
    drop(disk);

    // A loop device on the scratch's own disk, marked rotational as a virtual disk may be,
    // answers in microseconds: the profile's workers from the first, not governed.
    let vol = util::or_skip!(util::Volume::ext4(&s, "fast", 96 << 20, 30_000));
    mark_rotational(&s.path("fast"));
    for d in 0..12 {
        s.mkdir(format!("fast/t/d{d}"));
        for i in 0..1_000 {
            std::fs::File::create(s.path(format!("fast/t/d{d}/f{i}"))).unwrap();
        }
    }
    let v = rm_json(&s, &["-r", "--json"], &s.path("fast/t"));
    let profile = &v["profile"];
    assert_eq!(profile["class"], "rotational", "{v}");
    let ms = profile["first_read_ms"].as_f64().unwrap_or(f64::MAX);
    assert!(ms < 3.0, "{v}");
    assert!(profile["start"].as_u64() > Some(1), "{v}");
    assert_eq!(profile["start"], profile["workers"], "{v}");
    assert_eq!(v["concurrency"]["start"], profile["start"], "{v}");
    assert_eq!(profile["governed"], false, "{v}");
    let note = profile["note"].as_str().unwrap_or_default();
    assert!(note.contains("started as on an SSD"), "{v}");
    drop(vol);
}

/// The loop device under `dir` (one the test made): its major and minor numbers.
fn loop_device(dir: &Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    assert_eq!(major, 7, "{} is not on a loop device", dir.display());
    (major, minor)
}

/// Marks the block device under `dir` (a loop device the test made) rotational.
fn mark_rotational(dir: &Path) {
    let (major, minor) = loop_device(dir);
    let knob = format!("/sys/dev/block/{major}:{minor}/queue/rotational");
    std::fs::write(&knob, "1").unwrap_or_else(|e| panic!("cannot write {knob}: {e}"));
}
