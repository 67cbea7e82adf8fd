//! End-to-end test of the `netfs` binary: mounts it over a fresh temporary directory
//! (root only; prints "skipped" otherwise) and checks the round-trip model, the NFS-like
//! refusal of rename flags, ownership and kernel permission checks for a non-root
//! caller, the clean unmount on SIGTERM, the mount's type (plain `fuse` without a subtype),
//! listings that shift when entries are removed while they are read, and entries hidden from
//! listings. Touches nothing
//! outside its tempdir.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const RTT: Duration = Duration::from_millis(50);
const USER: &str = "61001";

/// The daemon and its tempdir; on drop (also on a failed assertion) it is stopped,
/// the mount is gone and the tempdir removed.
struct Netfs {
    child: Option<Child>,
    dir: PathBuf,
    back: PathBuf,
    mnt: PathBuf,
}

impl Drop for Netfs {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let t0 = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if mounted(&self.mnt) {
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        }
        if !mounted(&self.mnt) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn mounted(p: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = p.to_string_lossy().replace(' ', "\\040");
    info.lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

fn start() -> Netfs {
    start_with(&["--rtt", "50ms", "--slots", "64"])
}

/// Starts netfs with `args` (besides the backing directory, mount point, stats and ready
/// file).
fn start_with(args: &[&str]) -> Netfs {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let dir = std::env::temp_dir().join(format!("netfs-test.{}.{nanos}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    let mut fs = Netfs {
        child: None,
        back: dir.join("back"),
        mnt: dir.join("mnt"),
        dir,
    };
    for d in [&fs.dir, &fs.back, &fs.mnt] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let ready = fs.dir.join("ready");
    let child = Command::new(env!("CARGO_BIN_EXE_netfs"))
        .arg("--backing")
        .arg(&fs.back)
        .arg("--mount")
        .arg(&fs.mnt)
        .args(args)
        .arg("--stats")
        .arg(fs.dir.join("stats.json"))
        .arg("--ready-file")
        .arg(&ready)
        .spawn()
        .expect("starting netfs");
    fs.child = Some(child);
    let t0 = Instant::now();
    while !ready.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "netfs did not get ready"
        );
        if let Some(st) = fs.child.as_mut().unwrap().try_wait().unwrap() {
            panic!("netfs exited early: {st}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    fs
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t0 = Instant::now();
    let r = f();
    (r, t0.elapsed())
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// Run `cmd args` as uid/gid 61001 without supplementary groups.
fn as_user(args: &[&str]) -> std::process::Output {
    Command::new("setpriv")
        .args([
            &format!("--reuid={USER}"),
            &format!("--regid={USER}"),
            "--clear-groups",
        ])
        .args(args)
        .output()
        .expect("running setpriv (util-linux)")
}

#[test]
fn netfs_end_to_end() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        println!("skipped: needs root and /dev/fuse");
        return;
    }
    let mut fs = start();
    let (back, mnt) = (fs.back.clone(), fs.mnt.clone());
    std::fs::metadata(&mnt).unwrap();

    // A round trip each: stat (LOOKUP), unlink (UNLINK), create (LOOKUP + CREATE).
    std::fs::write(back.join("b"), b"x").unwrap();
    let (m, el) = timed(|| std::fs::metadata(mnt.join("b")));
    assert_eq!(m.unwrap().len(), 1);
    assert!(el >= RTT, "stat of an uncached name took {el:?} < RTT");
    let (_, el) = timed(|| std::fs::metadata(mnt.join("b")).unwrap());
    assert!(
        el < RTT / 2,
        "a stat within the attribute TTL is cached, took {el:?}"
    );
    let (r, el) = timed(|| std::fs::remove_file(mnt.join("b")));
    r.unwrap();
    assert!(el >= RTT, "unlink took {el:?} < RTT");
    assert!(!back.join("b").exists());
    let (r, el) = timed(|| std::fs::write(mnt.join("a"), b"hello"));
    r.unwrap();
    assert!(
        el >= RTT * 2,
        "create (lookup + create) took {el:?} < 2 RTT"
    );
    assert_eq!(std::fs::read(back.join("a")).unwrap(), b"hello");

    // 16 concurrent stats of uncached names overlap: about one RTT, not sixteen.
    for i in 0..16 {
        std::fs::write(back.join(format!("c{i}")), b"").unwrap();
    }
    let barrier = Arc::new(Barrier::new(16));
    let worst = std::thread::scope(|s| {
        let hs: Vec<_> = (0..16)
            .map(|i| {
                let (b, p) = (barrier.clone(), mnt.join(format!("c{i}")));
                s.spawn(move || {
                    b.wait();
                    timed(|| std::fs::metadata(&p).unwrap()).1
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).max().unwrap()
    });
    assert!(worst >= RTT, "{worst:?}");
    assert!(
        worst < RTT * 4,
        "16 concurrent stats took {worst:?}: they should overlap (16 RTT = {:?})",
        RTT * 16
    );

    // Rename flags are refused like the Linux NFS client does; a plain rename works.
    let (from, to) = (cpath(&mnt.join("a")), cpath(&mnt.join("a2")));
    // SAFETY: valid C strings.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    let err = std::io::Error::last_os_error();
    assert_eq!(rc, -1);
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    std::fs::rename(mnt.join("a"), mnt.join("a2")).unwrap();
    assert!(back.join("a2").exists() && !back.join("a").exists());

    // A non-root caller: what it creates is its own; the kernel refuses it a root
    // directory's entries.
    std::fs::create_dir(back.join("pub")).unwrap();
    std::fs::set_permissions(back.join("pub"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let u = mnt.join("pub/u");
    let out = as_user(&["touch", u.to_str().unwrap()]);
    assert!(out.status.success(), "touch as {USER}: {out:?}");
    let md = std::fs::symlink_metadata(back.join("pub/u")).unwrap();
    assert_eq!(
        (md.uid(), md.gid()),
        (61001, 61001),
        "owner in the backing directory"
    );
    std::fs::create_dir(back.join("rootdir")).unwrap();
    std::fs::set_permissions(back.join("rootdir"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(back.join("rootdir/f"), b"").unwrap();
    let f = mnt.join("rootdir/f");
    let out = as_user(&["unlink", f.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "uid {USER} removed a root file: {out:?}"
    );
    assert!(
        stderr.contains("Permission denied"),
        "expected EACCES: {stderr}"
    );
    assert!(back.join("rootdir/f").exists());

    // SIGTERM: unmount and exit 0.
    let mut child = fs.child.take().unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "netfs did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "netfs exited with {status}");
    assert!(!mounted(&mnt), "still mounted after SIGTERM");
    let stats = std::fs::read_to_string(fs.dir.join("stats.json")).unwrap();
    assert!(stats.contains("\"rename_flags\""), "{stats}");
}

fn skip_unless_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0 && Path::new("/dev/fuse").exists();
    if !ok {
        println!("skipped: needs root and /dev/fuse");
    }
    ok
}

/// The type /proc/self/mountinfo gives the mount at `p`.
fn fs_type(p: &Path) -> String {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = p.to_string_lossy().replace(' ', "\\040");
    info.lines()
        .find(|l| l.split(' ').nth(4) == Some(want.as_str()))
        .and_then(|l| l.split(" - ").nth(1))
        .and_then(|t| t.split(' ').next())
        .unwrap_or_default()
        .to_string()
}

/// Reads `dir` through the mount and unlinks every entry as soon as it was read (one
/// `getdents` buffer at a time); returns how many were unlinked.
fn unlink_while_reading(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
        n += 1;
    }
    n
}

#[test]
fn listings_shift_under_removals_when_asked() {
    if !skip_unless_root() {
        return;
    }
    const FILES: usize = 3000;
    for (mode, subtype, shifts) in [
        ("stable", "", false),
        ("index", "acmefs", true),
        ("reorder", "netfs", true),
    ] {
        let fs = start_with(&["--rtt", "0", "--listing", mode, "--subtype", subtype]);
        let want = if subtype.is_empty() {
            "fuse".to_string()
        } else {
            format!("fuse.{subtype}")
        };
        assert_eq!(fs_type(&fs.mnt), want, "{mode}");
        std::fs::create_dir(fs.back.join("d")).unwrap();
        for i in 0..FILES {
            std::fs::write(fs.back.join(format!("d/f{i:05}")), b"").unwrap();
        }
        let unlinked = unlink_while_reading(&fs.mnt.join("d"));
        let left = std::fs::read_dir(fs.back.join("d")).unwrap().count();
        assert_eq!(unlinked + left, FILES, "{mode}");
        if shifts {
            assert!(
                left > 0,
                "{mode}: a listing read while removing skipped nothing"
            );
        } else {
            assert_eq!(left, 0, "{mode}: stable offsets skipped {left} entries");
        }
        // Read again (nothing removed meanwhile), every entry that is left is listed once.
        let mut names: Vec<_> = std::fs::read_dir(fs.mnt.join("d"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), left, "{mode}");
        drop(fs);
    }
    // Hidden entries are never listed, and still keep their directory from being removed.
    let fs = start_with(&["--rtt", "0", "--hide", ".secret"]);
    std::fs::create_dir(fs.back.join("h")).unwrap();
    std::fs::write(fs.back.join("h/.secret-1"), b"").unwrap();
    std::fs::write(fs.back.join("h/plain"), b"").unwrap();
    let listed: Vec<_> = std::fs::read_dir(fs.mnt.join("h"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(listed, vec![std::ffi::OsString::from("plain")]);
    assert!(std::fs::metadata(fs.mnt.join("h/.secret-1")).is_ok());
    std::fs::remove_file(fs.mnt.join("h/plain")).unwrap();
    let err = std::fs::remove_dir(fs.mnt.join("h")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTEMPTY), "{err}");
}
