//! Shared helpers: per-test scratch directories that refuse to touch anything outside
//! themselves, tree builders, snapshots, the `reclaim` command, skips that are said and
//! counted, and volumes and immutable flags that undo themselves even when a test panics.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};

use assert_cmd::Command;

/// Name of the marker file every scratch directory holds at its root.
pub const MARKER: &str = ".reclaim-test-scratch";

/// `reclaim rm ARGS` in `s`'s root as `uid` (and gid `uid`, no supplementary groups), with no
/// config and trashes looked for only below the root; non-option ARGS must lie inside it.
pub fn reclaim_rm_as(s: &Scratch, uid: u32, args: &[&str]) -> Output {
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        s.assert_inside(&s.path(a));
    }
    std::process::Command::new("setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .args(["--clear-groups", "--"])
        .arg(reclaim_bin())
        .arg("rm")
        .args(args)
        .current_dir(s.root())
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The `reclaim` binary cargo built for these tests, or `$RECLAIM_TEST_BIN` if set (to check
/// that the tests catch a deliberately broken implementation; the safety checks are all in
/// this harness, whatever binary runs).
pub fn reclaim_bin() -> OsString {
    std::env::var_os("RECLAIM_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_reclaim").into())
}

/// A bare `reclaim` command: no working directory set, nothing checked. Only for calls that
/// can remove nothing (usage errors, `--help`).
pub fn reclaim() -> Command {
    let mut c = Command::new(reclaim_bin());
    // Hermetic: no /etc/reclaim.toml or ~/.config/reclaim.toml of the machine changes defaults.
    c.env("RECLAIM_CONFIG", "");
    c
}

/// Whether we run as root (needed for mounts, `chattr`, `unshare`).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

// ---------------------------------------------------------------------------------------------
// Skips. A test that cannot run here (not root, a tool missing) ends early, and the harness
// counts it as passed: libtest cannot mark a test ignored at run time. So every skip is said
// (`SKIPPED <test>: <why>` on stderr, shown with --nocapture) and counted: when the run ends, a
// summary on stderr lists every test that skipped itself, in full or in part. Helpers that find
// a test cannot run return `Err(why)`; the test ends itself with `or_skip!` (these macros name
// the function they are written in, so they belong in the test itself, not in a helper).

/// Ends the test here as skipped, saying why: `skip!("no {tool}")`.
macro_rules! skip {
    ($($why:tt)+) => {{
        $crate::util::skipped($crate::util::test_name!(), &format!($($why)+));
        return;
    }};
}
pub(crate) use skip;

/// The `Ok` value of `result`; on `Err(why)` the test ends here as skipped (see `skip!`).
macro_rules! or_skip {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(why) => $crate::util::skip!("{}", why),
        }
    };
}
pub(crate) use or_skip;

/// Ends the test here as skipped unless it runs as root.
macro_rules! require_root {
    () => {
        $crate::util::or_skip!($crate::util::need_root())
    };
}
pub(crate) use require_root;

/// Ok when running as root, else why not.
pub fn need_root() -> Result<(), String> {
    if is_root() {
        Ok(())
    } else {
        Err("needs root".to_string())
    }
}

/// The tests of this run that skipped themselves (in full or in part), with why.
static SKIPPED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// Records that `test` skips itself (or a part: `why` then says which), and says so. Use
/// `skip!`/`or_skip!` to end a test; call this directly for a part that does not run.
pub fn skipped(test: &str, why: &str) {
    let why = why.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    eprintln!("SKIPPED {test}: {why}");
    let mut all = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    all.push((test.to_string(), why));
}

/// Registers `report_skipped` when the test binary is loaded, before libtest's `main`: the
/// summary is said at the end of every run, also of one in which no test skipped itself.
#[used]
#[link_section = ".init_array"]
static REPORT_SKIPPED_AT_EXIT: extern "C" fn() = register_report_skipped;

extern "C" fn register_report_skipped() {
    // SAFETY: registers a plain function, called once by exit(3) at the end of the run.
    unsafe { libc::atexit(report_skipped) };
}

/// At exit: the summary of the skips, on stderr (after libtest's own, which counts them as
/// passed), or the line that none skipped itself.
extern "C" fn report_skipped() {
    let all = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if all.is_empty() {
        let _ = std::io::stderr().write_all(b"\nreclaim tests: no test skipped itself\n");
        return;
    }
    let mut by_test: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (test, why) in all.iter() {
        by_test.entry(test).or_default().push(why);
    }
    let mut text = format!(
        "\nreclaim tests: {} skipped, in full or in part (counted as passed above):\n",
        by_test.len()
    );
    for (test, whys) in &by_test {
        text.push_str(&format!("  {test}: {}\n", whys.join("; ")));
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// The name of the test this is written in, as the harness lists it (`trash::grace_needs_background`):
/// the path of the enclosing function without the crate, closures inside it not counted.
macro_rules! test_name {
    () => {{
        fn f() {}
        let name = std::any::type_name_of_val(&f);
        let name = name.strip_suffix("::f").unwrap_or(name);
        let name = name.trim_end_matches("::{{closure}}");
        name.split_once("::").map_or(name, |(_crate, path)| path)
    }};
}
pub(crate) use test_name;

/// A fresh scratch directory named after the test this is written in.
macro_rules! scratch {
    () => {
        $crate::util::Scratch::new($crate::util::test_name!())
    };
}
pub(crate) use scratch;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary directory of one test, made by `scratch!()` and named after it:
/// `reclaim-test-<TestNameInCamelCase>-XXXXXX` (camel case, so that the words of the name never
/// turn up in lowercase in the messages a test checks, which may hold the absolute path).
/// Everything a test builds or removes lives inside it; every helper checks that, and that
/// the directory still carries the marker this process wrote into it, before it does anything.
pub struct Scratch {
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    token: String,
    test: String,
    /// Whether reclaim keeps its default free-space floor (`keep_default_floor`).
    default_floor: std::sync::atomic::AtomicBool,
}

impl Scratch {
    /// A scratch directory for the test named `test` (see `scratch!()`).
    pub fn new(test: &str) -> Scratch {
        let camel: String = test
            .rsplit("::")
            .next()
            .unwrap_or(test)
            .split('_')
            .flat_map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|first| first.to_ascii_uppercase())
                    .into_iter()
                    .chain(c)
            })
            .collect();
        let dir = tempfile::Builder::new()
            .prefix(&format!("reclaim-test-{camel}-"))
            .tempdir()
            .expect("create tempdir");
        let root = dir.path().canonicalize().expect("canonicalize tempdir");
        let token = format!(
            "{}-{}-{:?}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
        );
        fs::write(root.join(MARKER), &token).expect("write marker");
        Scratch {
            dir: Some(dir),
            root,
            token,
            test: test.to_string(),
            default_floor: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The name of the test this directory belongs to.
    pub fn test(&self) -> &str {
        &self.test
    }

    /// The (canonical) root of the scratch directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn marker_ok(&self) -> bool {
        fs::read(self.root.join(MARKER)).is_ok_and(|t| t == self.token.as_bytes())
    }

    /// Panics unless the scratch directory still carries our marker.
    pub fn assert_marker(&self) {
        assert!(
            self.marker_ok(),
            "scratch {} lost its marker: refusing to go on",
            self.root.display()
        );
    }

    /// `root/rel` after checking that `rel` is a plain relative path (no `..`, not absolute).
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        for c in rel.components() {
            match c {
                Component::Normal(_) | Component::CurDir => {}
                other => panic!(
                    "scratch path {} has component {other:?}: refusing",
                    rel.display()
                ),
            }
        }
        self.assert_marker();
        let p = self.root.join(rel);
        self.assert_inside(&p);
        p
    }

    /// Panics unless `p` (absolute, or relative to the scratch root) lies inside the scratch
    /// directory, both lexically and after resolving every symlink in its existing prefix
    /// except the last component (which `rm` does not follow unless it ends in `/`).
    pub fn assert_inside(&self, p: &Path) {
        self.assert_marker();
        let abs = lexical_normalize(&self.root.join(p));
        assert!(
            abs.starts_with(&self.root),
            "{} is outside scratch {}: refusing",
            p.display(),
            self.root.display()
        );
        // `Path::components` drops a trailing `.`, so look at the bytes.
        let b = p.as_os_str().as_bytes();
        let follow_last = b.ends_with(b"/")
            || [&b"."[..], b".."]
                .iter()
                .any(|d| b == *d || (b.ends_with(d) && b[..b.len() - d.len()].ends_with(b"/")));
        let probe = if follow_last {
            self.root.join(p)
        } else {
            match abs.parent() {
                Some(parent) if abs != self.root => parent.to_path_buf(),
                _ => abs.clone(),
            }
        };
        // Resolve the longest existing prefix of `probe`.
        let mut existing = probe.clone();
        loop {
            if let Ok(real) = existing.canonicalize() {
                assert!(
                    real.starts_with(&self.root),
                    "{} resolves to {} outside scratch {}: refusing",
                    p.display(),
                    real.display(),
                    self.root.display()
                );
                break;
            }
            if !existing.pop() {
                panic!("{} has no existing prefix", p.display());
            }
        }
    }

    pub fn mkdir(&self, rel: impl AsRef<Path>) -> PathBuf {
        let p = self.path(rel);
        fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        p
    }

    fn parent_of(&self, p: &Path) {
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
        }
    }

    pub fn file(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        self.parent_of(&p);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
        f.write_all(contents.as_ref()).unwrap();
        p
    }

    pub fn symlink(&self, rel: impl AsRef<Path>, target: impl AsRef<Path>) -> PathBuf {
        let p = self.path(rel);
        self.parent_of(&p);
        std::os::unix::fs::symlink(target.as_ref(), &p)
            .unwrap_or_else(|e| panic!("symlink {}: {e}", p.display()));
        p
    }

    pub fn fifo(&self, rel: impl AsRef<Path>) -> PathBuf {
        let p = self.path(rel);
        self.parent_of(&p);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap_or_else(|e| panic!("mkfifo {}: {e}", p.display()));
        p
    }

    /// A socket inode (made with mknod, so the path may be longer than `sun_path`).
    pub fn socket(&self, rel: impl AsRef<Path>) -> PathBuf {
        let p = self.path(rel);
        self.parent_of(&p);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &p,
            rustix::fs::FileType::Socket,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap_or_else(|e| panic!("mknod socket {}: {e}", p.display()));
        p
    }

    /// A hard link at `rel` to the existing scratch file `existing`.
    pub fn hardlink(&self, rel: impl AsRef<Path>, existing: impl AsRef<Path>) -> PathBuf {
        let src = self.path(existing);
        let p = self.path(rel);
        self.parent_of(&p);
        fs::hard_link(&src, &p)
            .unwrap_or_else(|e| panic!("link {} {}: {e}", src.display(), p.display()));
        p
    }

    /// Whether `rel` exists (without following a final symlink).
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        fs::symlink_metadata(self.path(rel)).is_ok()
    }

    /// Commands keep reclaim's default free-space floor (the space-pressure tests, on file
    /// systems of their own); otherwise they run with `RECLAIM_MIN_FREE=0`.
    pub fn keep_default_floor(&self) {
        self.default_floor
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// A `reclaim` command running in `root/cwd`, with every path argument of `args` checked to
    /// lie inside the scratch directory. `args` follow the subcommand (e.g. `rm`).
    pub fn cmd_in<S: AsRef<OsStr>>(&self, cwd: impl AsRef<Path>, args: &[S]) -> Command {
        let cwd = self.path(cwd);
        self.check_args(&cwd, args);
        let mut c = Command::new(reclaim_bin());
        // Hermetic (a test may set its own RECLAIM_CONFIG after this): no config file, and
        // only the trashes of file systems mounted in this test's scratch directory.
        c.env("RECLAIM_CONFIG", "");
        c.env("RECLAIM_UNDER", &self.root);
        // `scan`'s calibration cache: in the scratch directory, not the machine's.
        c.env("XDG_CACHE_HOME", self.root.join(".cache"));
        // No free-space floor unless the test is about it: the floor of the machine's own file
        // system (10 GiB on a big one) would decide a test by how full that disk is.
        if !self
            .default_floor
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            c.env("RECLAIM_MIN_FREE", "0");
        }
        c.current_dir(&cwd)
            .args(args)
            .timeout(std::time::Duration::from_secs(120));
        c
    }

    /// Panics unless every path argument of `args` (a subcommand and its arguments), taken
    /// relative to `cwd`, lies inside the scratch directory.
    pub fn check_args<S: AsRef<OsStr>>(&self, cwd: &Path, args: &[S]) {
        let mut after_dashdash = false;
        let mut takes_value = false;
        let mut first = true;
        for a in args {
            let a = a.as_ref();
            if first {
                // The subcommand.
                first = false;
                continue;
            }
            let b = a.as_bytes();
            if takes_value {
                takes_value = false;
                continue;
            }
            if !after_dashdash && b == b"--" {
                after_dashdash = true;
                continue;
            }
            if !after_dashdash && b.starts_with(b"-") && b.len() > 1 {
                takes_value = matches!(b, b"--threads" | b"--fd-budget" | b"--dir" | b"--files");
                continue;
            }
            self.assert_inside(&cwd.join(a));
        }
    }

    /// `reclaim ARGS...` in the scratch root (paths checked).
    pub fn cmd<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        self.cmd_in(".", args)
    }

    /// `reclaim rm ARGS...` in the scratch root (paths checked).
    pub fn rm<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut all: Vec<OsString> = vec!["rm".into()];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.cmd_in(".", &all)
    }

    /// `reclaim rm ARGS...` in `root/cwd` (paths checked).
    pub fn rm_in<S: AsRef<OsStr>>(&self, cwd: impl AsRef<Path>, args: &[S]) -> Command {
        let mut all: Vec<OsString> = vec!["rm".into()];
        all.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self.cmd_in(cwd, &all)
    }

    /// Snapshot of `root/rel`.
    pub fn snapshot(&self, rel: impl AsRef<Path>) -> Snapshot {
        snapshot(&self.path(rel))
    }

    /// A standard "outside" directory next to the targets: files, a subdirectory, a symlink,
    /// a fifo. Returns its path.
    pub fn make_outside(&self, rel: &str) -> PathBuf {
        let p = self.mkdir(rel);
        for i in 0..8 {
            self.file(format!("{rel}/file{i}"), format!("outside content {i}\n"));
        }
        self.file(format!("{rel}/sub/deep/precious"), b"precious\n");
        self.file(format!("{rel}/sub/other"), b"other\n");
        self.symlink(format!("{rel}/sub/link"), "../file0");
        self.fifo(format!("{rel}/fifo"));
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Undo any mount a failed test left under the root (deepest first), then remove the
        // tree. Only ever acts on our own root.
        if !self
            .root
            .starts_with(std::env::temp_dir().canonicalize().unwrap_or_default())
        {
            return;
        }
        let mut mounts = mounts_under(&self.root);
        mounts.sort_by_key(|m| std::cmp::Reverse(m.as_os_str().len()));
        for m in mounts {
            unmount(&m);
        }
        if fs::remove_dir_all(&self.root).is_err() && self.root.exists() {
            let _ = std::process::Command::new("chattr")
                .arg("-R")
                .arg("-i")
                .arg(&self.root)
                .output();
            let _ = std::process::Command::new("rm")
                .arg("-rf")
                .arg("--one-file-system")
                .arg("--")
                .arg(&self.root)
                .output();
        }
        drop(self.dir.take());
    }
}

/// Normalizes `.` and `..` lexically (no symlink resolution).
pub fn lexical_normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Stops a daemon the test started (a FUSE server): SIGTERM, up to `grace` to exit (it
/// unmounts itself), then SIGKILL; reaped either way.
pub fn stop_child(mut child: std::process::Child, grace: std::time::Duration) {
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t0 = std::time::Instant::now();
    while child.try_wait().ok().flatten().is_none() && t0.elapsed() < grace {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Mount points (from /proc/self/mountinfo) strictly below `root`.
pub fn mounts_under(root: &Path) -> Vec<PathBuf> {
    let info = fs::read("/proc/self/mountinfo").unwrap_or_default();
    let mut out = Vec::new();
    for line in info.split(|&b| b == b'\n') {
        let Some(field) = line.split(|&b| b == b' ').nth(4) else {
            continue;
        };
        let p = PathBuf::from(OsString::from_vec(unescape_mountinfo(field)));
        if p.starts_with(root) && p != root {
            out.push(p);
        }
    }
    out
}

fn unescape_mountinfo(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\'
            && i + 3 < field.len()
            && field[i + 1..i + 4]
                .iter()
                .all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (field[i + 1] - b'0') * 64 + (field[i + 2] - b'0') * 8 + (field[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(field[i]);
            i += 1;
        }
    }
    out
}

fn unmount(p: &Path) {
    let ok = std::process::Command::new("umount")
        .arg(p)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(p)
            .output();
    }
}

// ---------------------------------------------------------------------------------------------
// Volumes: every file system a test mounts.

/// A file system of one test, mounted on a directory it makes itself inside the scratch
/// directory: a tmpfs, an ext3, ext4, xfs or btrfs image (sparse, in a temporary directory of
/// the volume's own, loop-mounted), or a bind mount of another scratch path. On drop, also when
/// the test panics, it unmounts what it mounted (lazily if busy), detaches its loop device and
/// removes its image; it never unmounts a mount it did not make, nor detaches a loop device whose
/// backing file is not its image. Err from a constructor: why the volume cannot be had here
/// (not root, no mkfs), for `or_skip!`.
pub struct Volume {
    target: PathBuf,
    /// Our mount's id (the first field of /proc/self/mountinfo).
    mount_id: u64,
    /// The directory holding the image of a loop-mounted volume.
    image_dir: Option<tempfile::TempDir>,
}

/// Runs a setup command; Err (`cannot WHAT: ...`, for a skip) if it did not succeed.
fn run_setup(what: &str, cmd: &mut std::process::Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("cannot {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cannot {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        ));
    }
    Ok(())
}

/// `mount ARGS TARGET`; Err (why, for a skip) if it did not succeed.
fn mount<S: AsRef<OsStr>>(what: &str, args: &[S], target: &Path) -> Result<(), String> {
    run_setup(
        what,
        std::process::Command::new("mount").args(args).arg(target),
    )
}

/// The ids of the mounts at exactly `target`, bottom first.
fn mounts_at(target: &Path) -> Vec<u64> {
    let info = fs::read("/proc/self/mountinfo").unwrap_or_default();
    let mut out = Vec::new();
    for line in info.split(|&b| b == b'\n') {
        let mut fields = line.split(|&b| b == b' ');
        let (Some(id), Some(point)) = (fields.next(), fields.nth(3)) else {
            continue;
        };
        if Path::new(OsStr::from_bytes(&unescape_mountinfo(point))) == target {
            if let Some(id) = std::str::from_utf8(id).ok().and_then(|i| i.parse().ok()) {
                out.push(id);
            }
        }
    }
    out
}

impl Volume {
    /// A fresh tmpfs of 16 MiB on `root/rel`.
    pub fn tmpfs(scratch: &Scratch, rel: impl AsRef<Path>) -> Result<Volume, String> {
        Volume::tmpfs_with(scratch, rel, "size=16m")
    }

    /// A fresh tmpfs with mount `options` (e.g. `size=4m,nr_inodes=8`) on `root/rel`.
    pub fn tmpfs_with(
        scratch: &Scratch,
        rel: impl AsRef<Path>,
        options: &str,
    ) -> Result<Volume, String> {
        Volume::mount(
            scratch,
            rel,
            "mount a tmpfs",
            &["-t", "tmpfs", "-o", options, "reclaim-test"].map(OsString::from),
            None,
        )
    }

    /// A fresh journaled ext4 image of `size` bytes (sparse) with `inodes` inodes of 256 bytes,
    /// loop-mounted on `root/rel`: a file system whose history is the test's alone.
    pub fn ext4(scratch: &Scratch, rel: &str, size: u64, inodes: u64) -> Result<Volume, String> {
        Volume::image(scratch, rel, "mkfs.ext4", size, inodes, "")
    }

    /// As `ext4`, but with 128-byte inodes: no room for creation times (statx gives no
    /// btime), as on file systems made long ago or upgraded from ext3.
    pub fn ext4_without_btime(
        scratch: &Scratch,
        rel: &str,
        size: u64,
        inodes: u64,
    ) -> Result<Volume, String> {
        let inodes = inodes.to_string();
        let args = ["-q", "-F", "-I", "128", "-N", &inodes];
        Volume::image_with(scratch, rel, "mkfs.ext4", &args, size, "")
    }

    /// As `ext4`, mounted with online discard (`-o discard`): freed blocks are discarded as
    /// they are freed (a loop device punches holes in its image).
    pub fn ext4_discard(
        scratch: &Scratch,
        rel: &str,
        size: u64,
        inodes: u64,
    ) -> Result<Volume, String> {
        Volume::image(scratch, rel, "mkfs.ext4", size, inodes, "discard")
    }

    /// As `ext4`, but ext3: block-mapped files, which cost one indirect block per 4 MiB to
    /// free. Keep `size` and `inodes` small: mkfs.ext3 writes its inode tables in full.
    pub fn ext3(scratch: &Scratch, rel: &str, size: u64, inodes: u64) -> Result<Volume, String> {
        Volume::image(scratch, rel, "mkfs.ext3", size, inodes, "")
    }

    /// A fresh btrfs image of `size` bytes (sparse; at least 128 MiB), loop-mounted on
    /// `root/rel` with mount `options` (e.g. `user_subvol_rm_allowed`; "" for none).
    pub fn btrfs(scratch: &Scratch, rel: &str, size: u64, options: &str) -> Result<Volume, String> {
        need_root()?;
        let dir = tempfile::Builder::new()
            .prefix("reclaim-test-image-")
            .tempdir()
            .map_err(|e| format!("cannot make a directory for an image: {e}"))?;
        let image = dir.path().join("btrfs.img");
        fs::File::create(&image)
            .and_then(|f| f.set_len(size))
            .map_err(|e| format!("cannot make {}: {e}", image.display()))?;
        run_setup(
            "run mkfs.btrfs (btrfs-progs)",
            std::process::Command::new("mkfs.btrfs")
                .args(["-q", "-f"])
                .arg(&image),
        )?;
        let mut args = vec![OsString::from("-o")];
        args.push(if options.is_empty() {
            "loop".into()
        } else {
            format!("loop,{options}").into()
        });
        args.push(image.into());
        Volume::mount(scratch, rel, "loop-mount a btrfs image", &args, Some(dir))
    }

    /// `root/src` bind-mounted on `root/rel`, read-only if asked.
    pub fn bind(
        scratch: &Scratch,
        src: &str,
        rel: &str,
        read_only: bool,
    ) -> Result<Volume, String> {
        let source = scratch.path(src);
        let v = Volume::mount(
            scratch,
            rel,
            "bind-mount",
            &[OsString::from("--bind"), source.into_os_string()],
            None,
        )?;
        if read_only {
            mount("remount read-only", &["-o", "remount,bind,ro"], &v.target)?;
        }
        Ok(v)
    }

    /// A fresh xfs image of `size` bytes (sparse; at least 300 MiB, xfs's minimum),
    /// loop-mounted on `root/rel`: reflinks share extents (`cp --reflink`).
    pub fn xfs(scratch: &Scratch, rel: &str, size: u64) -> Result<Volume, String> {
        Volume::image_with(scratch, rel, "mkfs.xfs", &["-q", "-f"], size, "")
    }

    fn image(
        scratch: &Scratch,
        rel: &str,
        mkfs: &str,
        size: u64,
        inodes: u64,
        options: &str,
    ) -> Result<Volume, String> {
        let inodes = inodes.to_string();
        Volume::image_with(
            scratch,
            rel,
            mkfs,
            &["-q", "-F", "-I", "256", "-N", &inodes],
            size,
            options,
        )
    }

    /// An image of `size` bytes made by `mkfs ARGS IMAGE`, loop-mounted on `root/rel` with
    /// mount `options` besides `loop` ("" for none).
    fn image_with(
        scratch: &Scratch,
        rel: &str,
        mkfs: &str,
        mkfs_args: &[&str],
        size: u64,
        options: &str,
    ) -> Result<Volume, String> {
        need_root()?;
        let dir = tempfile::Builder::new()
            .prefix("reclaim-test-image-")
            .tempdir()
            .map_err(|e| format!("cannot make a directory for an image: {e}"))?;
        let image = dir.path().join(format!("{mkfs}.img"));
        fs::File::create(&image)
            .and_then(|f| f.set_len(size))
            .map_err(|e| format!("cannot make {}: {e}", image.display()))?;
        run_setup(
            &format!("run {mkfs}"),
            std::process::Command::new(mkfs).args(mkfs_args).arg(&image),
        )?;
        let options = if options.is_empty() {
            "loop".to_string()
        } else {
            format!("loop,{options}")
        };
        let args = [OsString::from("-o"), OsString::from(options), image.into()];
        Volume::mount(scratch, rel, "loop-mount an image", &args, Some(dir))
    }

    /// Makes the mount point `root/rel` (its parent may exist; it must not), then
    /// `mount ARGS root/rel`.
    fn mount(
        scratch: &Scratch,
        rel: impl AsRef<Path>,
        what: &str,
        args: &[OsString],
        image_dir: Option<tempfile::TempDir>,
    ) -> Result<Volume, String> {
        let rel = rel.as_ref();
        let target = scratch.path(rel);
        assert!(
            fs::symlink_metadata(&target).is_err(),
            "{} exists: a volume mounts only on a directory it makes",
            target.display()
        );
        need_root()?;
        if let Some(parent) = rel.parent() {
            scratch.mkdir(parent);
        }
        fs::create_dir(&target).unwrap_or_else(|e| panic!("mkdir {}: {e}", target.display()));
        mount(what, args, &target)?;
        let mount_id = *mounts_at(&target)
            .last()
            .unwrap_or_else(|| panic!("{} is not in mountinfo after mounting", target.display()));
        Ok(Volume {
            target,
            mount_id,
            image_dir,
        })
    }
}

/// Loop devices whose backing file lies in `dir`.
fn loop_devices_backed_in(dir: &Path) -> Vec<PathBuf> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut out = Vec::new();
    for e in fs::read_dir("/sys/block").into_iter().flatten().flatten() {
        let Ok(backing) = fs::read(e.path().join("loop/backing_file")) else {
            continue;
        };
        if Path::new(OsStr::from_bytes(backing.trim_ascii_end())).starts_with(&dir) {
            out.push(Path::new("/dev").join(e.file_name()));
        }
    }
    out
}

impl Drop for Volume {
    fn drop(&mut self) {
        let here = mounts_at(&self.target);
        match here.last() {
            // Gone already (the test unmounted it).
            _ if !here.contains(&self.mount_id) => {}
            Some(&top) if top == self.mount_id => unmount(&self.target),
            _ => eprintln!(
                "another mount is on top of {}: not unmounting it",
                self.target.display()
            ),
        }
        // A loop device left attached (mount's auto-clear did not happen) is detached if, and
        // only if, its backing file is our image.
        if let Some(dir) = &self.image_dir {
            for dev in loop_devices_backed_in(dir.path()) {
                let _ = std::process::Command::new("losetup")
                    .arg("-d")
                    .arg(dev)
                    .output();
            }
        }
    }
}

/// `chattr +i` on a scratch path, `chattr -i` on drop.
pub struct ImmutableGuard {
    target: PathBuf,
}

impl ImmutableGuard {
    /// Err: why not (for a skip).
    pub fn new(scratch: &Scratch, rel: &str) -> Result<ImmutableGuard, String> {
        need_root()?;
        let target = scratch.path(rel);
        run_setup(
            "chattr +i",
            std::process::Command::new("chattr").arg("+i").arg(&target),
        )?;
        Ok(ImmutableGuard { target })
    }
}

impl Drop for ImmutableGuard {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.target)
            .output();
    }
}

/// What a snapshot records about one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    File { mode: u32, contents: Vec<u8> },
    Dir { mode: u32 },
    Symlink { target: PathBuf },
    Fifo,
    Socket,
    Other { mode: u32 },
}

/// Relative path (root itself is "") to entry, never following symlinks.
pub type Snapshot = BTreeMap<PathBuf, Entry>;

pub fn snapshot(root: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    walk(root, Path::new(""), &mut out);
    out
}

fn walk(base: &Path, rel: &Path, out: &mut Snapshot) {
    let p = base.join(rel);
    let md = fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()));
    let ft = md.file_type();
    let mode = md.permissions().mode();
    let entry = if ft.is_dir() {
        Entry::Dir { mode }
    } else if ft.is_symlink() {
        Entry::Symlink {
            target: fs::read_link(&p).unwrap(),
        }
    } else if ft.is_file() {
        Entry::File {
            mode,
            contents: fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display())),
        }
    } else if ft.is_fifo() {
        Entry::Fifo
    } else if ft.is_socket() {
        Entry::Socket
    } else {
        Entry::Other { mode }
    };
    out.insert(rel.to_path_buf(), entry);
    if ft.is_dir() {
        let mut names: Vec<OsString> = fs::read_dir(&p)
            .unwrap_or_else(|e| panic!("read_dir {}: {e}", p.display()))
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        for n in names {
            walk(base, &rel.join(n), out);
        }
    }
}

/// Panics with a readable diff if two snapshots differ.
pub fn assert_same(what: &str, before: &Snapshot, after: &Snapshot) {
    if before == after {
        return;
    }
    let mut diff = String::new();
    for (k, v) in before {
        match after.get(k) {
            None => diff.push_str(&format!("  gone:    {}\n", k.display())),
            Some(w) if w != v => {
                diff.push_str(&format!("  changed: {} ({v:?} -> {w:?})\n", k.display()))
            }
            _ => {}
        }
    }
    for k in after.keys() {
        if !before.contains_key(k) {
            diff.push_str(&format!("  new:     {}\n", k.display()));
        }
    }
    panic!("{what} changed:\n{diff}");
}

/// `st_blocks * 512` summed over a tree (not following symlinks): (non-directories, all).
pub fn allocated_bytes(root: &Path) -> (u64, u64) {
    fn go(p: &Path, acc: &mut (u64, u64)) {
        let md = fs::symlink_metadata(p).unwrap();
        let b = md.blocks() * 512;
        acc.1 += b;
        if md.is_dir() {
            for e in fs::read_dir(p).unwrap() {
                go(&e.unwrap().path(), acc);
            }
        } else {
            acc.0 += b;
        }
    }
    let mut acc = (0, 0);
    go(root, &mut acc);
    acc
}

/// Counts (non-directories, directories including the root) of a tree.
pub fn count_entries(root: &Path) -> (u64, u64) {
    let snap = snapshot(root);
    let dirs = snap
        .values()
        .filter(|e| matches!(e, Entry::Dir { .. }))
        .count() as u64;
    (snap.len() as u64 - dirs, dirs)
}

/// The `--json` report.
#[derive(Debug, serde::Deserialize)]
pub struct Report {
    pub files: u64,
    pub dirs: u64,
    pub bytes_freed: u64,
    pub elapsed_s: f64,
    pub files_per_s: f64,
    pub errors: Vec<ReportError>,
    pub skipped_mounts: Vec<String>,
    pub dry_run: bool,
}

#[derive(Debug, serde::Deserialize)]
pub struct ReportError {
    pub path: String,
    pub error: String,
}

/// Parses stdout as exactly one JSON object with the documented fields.
pub fn parse_report(stdout: &[u8]) -> Report {
    let text = std::str::from_utf8(stdout).expect("--json output is UTF-8");
    let value: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("stdout is not exactly one JSON value ({e}):\n{text}"));
    assert!(value.is_object(), "JSON output is not an object: {text}");
    serde_json::from_value(value)
        .unwrap_or_else(|e| panic!("JSON report lacks a field ({e}):\n{text}"))
}

pub fn stdout_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts exit status 0, showing stderr otherwise.
#[track_caller]
pub fn assert_success(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr_of(o));
}

pub fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `reclaim ARGS...` in a private mount namespace in which every mount is read-only,
/// the scratch directory too. For the refusal tests that must name `/` (directly or through a
/// symlink): if the refusal were broken, nothing could be removed. `cwd` is relative to the
/// scratch root. Err: why this cannot be set up here (not root, no `unshare`), for a skip.
pub fn run_in_readonly_world<S: AsRef<OsStr>>(
    scratch: &Scratch,
    cwd: &str,
    args: &[S],
) -> Result<Output, String> {
    let out = readonly_world(scratch, cwd, false)?
        .arg(reclaim_bin())
        .args(args)
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    readonly_world_set_up(out)
}

/// The command that runs a program (its arguments follow) in the read-only world of
/// `run_in_readonly_world`, in `root/cwd`, with the scratch directory bind-mounted on itself
/// `writable` or not (for programs that must write, such as `mpirun`: nothing outside the
/// scratch directory can be removed). Check its output with `readonly_world_set_up`. Err: why
/// not (not root), for a skip.
pub fn readonly_world(
    scratch: &Scratch,
    cwd: &str,
    writable: bool,
) -> Result<std::process::Command, String> {
    need_root()?;
    let cwd = scratch.path(cwd);
    // Whether a bind mount of a read-only mount is read-only differs between versions of
    // mount(8): said explicitly.
    const SCRIPT: &str = r#"
set -u
findmnt -rn -o TARGET | sort -u | while IFS= read -r m; do
  mount -o remount,bind,ro "$(printf '%b' "$m")" 2>/dev/null
done
bad=$(awk '{ opt[$5] = $6 } END { for (m in opt) if (opt[m] !~ /^ro(,|$)/) print m }' /proc/self/mountinfo)
if [ -n "$bad" ]; then echo "reclaim-test: still writable: $bad" >&2; exit 99; fi
mount --bind "$RECLAIM_TEST_RW" "$RECLAIM_TEST_RW" || exit 99
mount -o "remount,bind,$RECLAIM_TEST_RW_MODE" "$RECLAIM_TEST_RW" || exit 99
cd "$RECLAIM_TEST_CWD" || exit 99
exec "$@"
"#;
    let mut c = std::process::Command::new("unshare");
    c.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        SCRIPT,
        "sh",
    ])
    .env("RECLAIM_CONFIG", "")
    .env("RECLAIM_TEST_RW", scratch.root())
    .env("RECLAIM_TEST_RW_MODE", if writable { "rw" } else { "ro" })
    .env("RECLAIM_TEST_CWD", &cwd);
    Ok(c)
}

/// The output of a `readonly_world` command; Err (for a skip) if the world could not be set
/// up (exit status 99).
pub fn readonly_world_set_up(out: Output) -> Result<Output, String> {
    if out.status.code() == Some(99) {
        return Err(format!(
            "the read-only namespace cannot be set up: {}",
            stderr_of(&out).trim_end()
        ));
    }
    Ok(out)
}

/// An `OsStr` from raw bytes.
pub fn os(bytes: &[u8]) -> &OsStr {
    OsStr::from_bytes(bytes)
}

// The harness itself: it must refuse, before running anything, every path that is not inside
// its scratch directory.

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_parent_escape() {
    let s = scratch!();
    let _ = s.rm(&["-r", "../"]);
}

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_absolute_path_outside() {
    let s = scratch!();
    let _ = s.rm(&["-r", "--dry-run", "/"]);
}

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_symlink_out_with_trailing_slash() {
    let s = scratch!();
    s.symlink("link", "/");
    let _ = s.rm(&["-r", "link/"]);
}

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_dotdot_through_symlink() {
    let s = scratch!();
    s.symlink("link", "/usr");
    let _ = s.rm(&["-r", "link/.."]);
}

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_builder_path_with_dotdot() {
    let s = scratch!();
    s.file("a/../../escape", "x");
}

#[test]
#[should_panic(expected = "lost its marker")]
fn harness_refuses_scratch_without_marker() {
    let s = scratch!();
    fs::remove_file(s.root().join(MARKER)).unwrap();
    s.file("x", "x");
}

#[test]
#[should_panic(expected = "a volume mounts only on a directory it makes")]
fn harness_volume_refuses_a_mount_point_it_did_not_make() {
    let s = scratch!();
    s.file("vol/x", "x");
    let _ = Volume::tmpfs(&s, "vol");
}

#[test]
fn harness_volume_is_unmounted_and_detached_when_a_test_panics() {
    let s = scratch!();
    let v = or_skip!(Volume::ext4(&s, "vol", 64 << 20, 128));
    let image_dir = v.image_dir.as_ref().unwrap().path().to_path_buf();
    assert_eq!(mounts_at(&s.path("vol")).len(), 1);
    assert_eq!(loop_devices_backed_in(&image_dir).len(), 1);
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _v = v;
        panic!("the test fails");
    }));
    assert!(failed.is_err());
    assert_eq!(mounts_at(&s.path("vol")), Vec::<u64>::new());
    assert_eq!(loop_devices_backed_in(&image_dir), Vec::<PathBuf>::new());
    assert!(!image_dir.exists());
}

// ---------------------------------------------------------------------------------------------
// Trash helpers (trash.rs, crash.rs). A trash lives at the top of the target's mount, so every
// test that hides anything does it on a file system mounted inside its scratch directory.

/// Name of the environment variable that keeps `rm --background` from starting a reaper.
pub const NO_SPAWN: &str = "RECLAIM_NO_SPAWN";

/// A tmpfs on `root/vol` for a test that hides things, and a guard that waits for any reaper
/// of its trash before the tmpfs is unmounted (a tuple drops its first field first).
pub fn trash_vol(scratch: &Scratch) -> Result<(ReaperSettle, Volume), String> {
    trash_vol_with(scratch, "size=16m")
}

/// `trash_vol` with tmpfs mount `options` (e.g. `size=64m` for a tree of many files).
pub fn trash_vol_with(scratch: &Scratch, options: &str) -> Result<(ReaperSettle, Volume), String> {
    let v = Volume::tmpfs_with(scratch, "vol", options)?;
    let settle = ReaperSettle {
        trash: trash_dir(&scratch.path("vol")),
    };
    Ok((settle, v))
}

/// The effective uid of this process.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// `<top>/.reclaim-<euid>`: this process's trash on the file system mounted at `top`.
pub fn trash_dir(top: &Path) -> PathBuf {
    top.join(format!(".reclaim-{}", euid()))
}

/// Names of the entry directories of `trash` (sorted: oldest first), without following
/// symlinks; empty if the trash does not exist.
pub fn trash_entries(trash: &Path) -> Vec<String> {
    let Ok(rd) = fs::read_dir(trash) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Whether `id` looks like `20261122T081500.123456Z-4711-0` (UTC time, pid, counter).
pub fn looks_like_entry_id(id: &str) -> bool {
    let b = id.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let time_ok = b.len() > 23
        && digits(0..8)
        && b[8] == b'T'
        && digits(9..15)
        && b[15] == b'.'
        && digits(16..22)
        && b[22] == b'Z'
        && b[23] == b'-';
    let rest: Vec<&str> = id.get(24..).unwrap_or("").split('-').collect();
    time_ok
        && rest.len() == 2
        && rest
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
}

/// The parsed `meta.json` of entry `id` of `trash`.
pub fn entry_meta(trash: &Path, id: &str) -> serde_json::Value {
    let p = trash.join(id).join("meta.json");
    let text = fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| {
        panic!(
            "{} is not JSON ({e}): {}",
            p.display(),
            String::from_utf8_lossy(&text)
        )
    })
}

/// Whether some process holds a `flock` on `<trash>/lock` (probed with a non-blocking
/// exclusive lock, released at once; false if there is no lock file).
pub fn trash_locked(trash: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(f) = fs::File::open(trash.join("lock")) else {
        return false;
    };
    // SAFETY: flock on a fd we own; the lock goes with the fd.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    rc != 0
}

/// Holds a `flock` on `<trash>/lock` (created if missing) until dropped, as a running reaper
/// would.
pub struct TrashLock {
    _file: fs::File,
}

impl TrashLock {
    pub fn take(trash: &Path) -> TrashLock {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let p = trash.join("lock");
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&p)
            .unwrap_or_else(|e| panic!("open {}: {e}", p.display()));
        // SAFETY: flock on a fd we own.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(
            rc,
            0,
            "flock {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        );
        TrashLock { _file: f }
    }
}

/// Waits up to `timeout` until no reaper holds `<trash>/lock` and, if `empty`, the trash has
/// no entries. Returns whether that happened.
pub fn wait_trash_idle(trash: &Path, timeout: std::time::Duration, empty: bool) -> bool {
    let t0 = std::time::Instant::now();
    loop {
        // The lock is probed only once the entries are gone, so a reaper starting right then
        // does not find it taken with work left.
        if (!empty || trash_entries(trash).is_empty()) && !trash_locked(trash) {
            return true;
        }
        if t0.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Declared after a `Volume` (so dropped before it): on drop, waits up to 60 s
/// until no reaper holds the lock of the trash, so that the volume can be unmounted.
pub struct ReaperSettle {
    pub trash: PathBuf,
}

impl Drop for ReaperSettle {
    fn drop(&mut self) {
        if !wait_trash_idle(&self.trash, std::time::Duration::from_secs(60), false) {
            eprintln!(
                "a reaper still holds {}/lock after 60 s",
                self.trash.display()
            );
        }
    }
}

/// Free bytes of the file system holding `p` (`f_bfree * f_frsize`).
pub fn free_bytes(p: &Path) -> u64 {
    let st = rustix::fs::statvfs(p).unwrap_or_else(|e| panic!("statvfs {}: {e}", p.display()));
    st.f_bfree * st.f_frsize
}

/// Whether the first component of a snapshot key is a trash (`.reclaim-<uid>[.suffix]`, or the
/// first layout's `.reclaim`).
pub fn in_trash(k: &Path) -> bool {
    k.components().next().is_some_and(|c| {
        let b = c.as_os_str().as_bytes();
        b == b".reclaim" || b.starts_with(b".reclaim-")
    })
}

/// Snapshot of `root` without its top-level trashes and what lies under them.
pub fn snapshot_without_trash(root: &Path) -> Snapshot {
    let mut snap = snapshot(root);
    snap.retain(|k, _| !in_trash(k));
    snap
}

/// `snap` (of a directory) without `rel` and everything under it.
pub fn snapshot_without(mut snap: Snapshot, rel: &Path) -> Snapshot {
    snap.retain(|k, _| !k.starts_with(rel));
    snap
}

/// Parses stdout as exactly one JSON object.
pub fn json_object(stdout: &[u8]) -> serde_json::Value {
    let text = std::str::from_utf8(stdout).expect("--json output is UTF-8");
    let value: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("stdout is not exactly one JSON value ({e}):\n{text}"));
    assert!(value.is_object(), "JSON output is not an object: {text}");
    value
}

/// The `reap --json` report, after checking it has every documented field.
pub fn parse_reap_report(stdout: &[u8]) -> serde_json::Value {
    let v = json_object(stdout);
    for k in ["entries_freed", "files", "bytes_freed", "remaining"] {
        assert!(v[k].is_u64(), "reap --json: {k} is not a count: {v}");
    }
    for k in ["errors", "skipped_locked"] {
        assert!(v[k].is_array(), "reap --json: {k} is not an array: {v}");
    }
    v
}

/// Snapshot of `p` whatever it is: `snapshot` of a directory, else the one entry (key "") of
/// a file, symlink or other inode (`snapshot` itself wants a directory).
pub fn snapshot_any(p: &Path) -> Snapshot {
    let md = fs::symlink_metadata(p).unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()));
    let ft = md.file_type();
    if ft.is_dir() {
        return snapshot(p);
    }
    let mode = md.permissions().mode();
    let entry = if ft.is_symlink() {
        Entry::Symlink {
            target: fs::read_link(p).unwrap(),
        }
    } else if ft.is_file() {
        Entry::File {
            mode,
            contents: fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display())),
        }
    } else if ft.is_fifo() {
        Entry::Fifo
    } else if ft.is_socket() {
        Entry::Socket
    } else {
        Entry::Other { mode }
    };
    Snapshot::from([(PathBuf::new(), entry)])
}

/// A state directory inside the scratch directory, for `XDG_STATE_HOME`: where `reclaim`
/// registers trashes that are not at a mount top, instead of the real user's home.
pub fn state_home(scratch: &Scratch) -> PathBuf {
    scratch.mkdir(".state")
}

/// A sysctl set for as long as any holder lives (tests of one process may overlap): the first
/// holder saves the old value and sets the new one, the last puts the old one back, also when
/// a test panics.
pub struct Sysctl {
    name: String,
}

/// Per sysctl: (holders, the value before the first).
static SYSCTLS: std::sync::Mutex<BTreeMap<String, (usize, String)>> =
    std::sync::Mutex::new(BTreeMap::new());

impl Sysctl {
    /// Sets `/proc/sys/<name>` to `value` while the guard lives; None if it cannot be read or
    /// written (not root).
    pub fn set(name: &str, value: &str) -> Option<Sysctl> {
        let path = Path::new("/proc/sys").join(name);
        let mut all = SYSCTLS.lock().unwrap_or_else(|e| e.into_inner());
        match all.get_mut(name) {
            Some((n, _)) => *n += 1,
            None => {
                let old = fs::read_to_string(&path).ok()?;
                fs::write(&path, value).ok()?;
                all.insert(name.to_string(), (1, old.trim().to_string()));
            }
        }
        Some(Sysctl {
            name: name.to_string(),
        })
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let mut all = SYSCTLS.lock().unwrap_or_else(|e| e.into_inner());
        let last = match all.get_mut(&self.name) {
            Some((n, _)) => {
                *n -= 1;
                *n == 0
            }
            None => false,
        };
        if last {
            if let Some((_, old)) = all.remove(&self.name) {
                let _ = fs::write(Path::new("/proc/sys").join(&self.name), old);
            }
        }
    }
}

/// A small deterministic generator (SplitMix64): seeded, so every run builds the same trees
/// and a failing seed can be rerun.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What a terminal of 120 columns shows while `reclaim ARGS` runs in the scratch root
/// (script(1) gives the pty, stty its size), with `RECLAIM_NO_SPAWN=1`; asserts success.
pub fn on_a_terminal(s: &Scratch, args: &str) -> String {
    let typescript = s.path("typescript");
    let cmd = format!(
        "stty cols 120 rows 40; '{}' {args}",
        std::fs::canonicalize(reclaim_bin()).unwrap().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qfec", &cmd])
        .arg(&typescript)
        .current_dir(s.root())
        .env("TERM", "xterm")
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", state_home(s))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned()
}
