//! Trust boundaries (issues 11 and 20, docs/TRUST.md): what a hostile local user, root's reaper
//! service and interruptions must never achieve. Each test reproduces one finding of issue 11
//! or 20 with real uids (61001 the victim, 61002 the attacker, 61003 a third user; no passwd
//! entries, run with `setpriv`) on a tmpfs or a loop image (ext3, ext4, xfs, btrfs) mounted
//! inside the test's scratch directory, whose top is world-writable and sticky like `/tmp`.
//! The tests describe the behaviour of the trust model in docs/TRUST.md; most fail on the code
//! before their fix. Those of issue 20 are at the end, one per finding.
//!
//! Root only (mounts, `setpriv`, `mknod`, `chattr`); skipped, and said so, otherwise. Every
//! command runs under a deadline: one that does not finish in time has hung (on a FIFO, a
//! lock), and the test fails saying so. Every process a test started (also detached reapers)
//! is ended by its pid before the volume is unmounted.
//!
//! The trash layout is `<top>/.reclaim-<uid>[.<suffix>]` after the fix and `<top>/.reclaim/<uid>`
//! before it; `find_trash` accepts both. Tests that are not about the layout pre-create the old
//! shared `.reclaim` (root, 0755) with a 0700 directory per user, so that the old binary, whose
//! shared `.reclaim` can be owned by whoever comes first (finding 6), gets far enough to show
//! the finding under test. A fixed binary reads that layout but puts new entries in its own.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{lchown, symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::util::{self, scratch, Scratch, Volume};

const VICTIM: u32 = 61001;
const ATTACKER: u32 = 61002;
const THIRD: u32 = 61003;
const ROOT: u32 = 0;
const MIB: u64 = 1 << 20;
/// Generous: a command that takes longer than this has hung.
const HANG: Duration = Duration::from_secs(30);
/// Entry ids older than any real one (a reaper meets them first).
fn old_id(group: u32, n: u32) -> String {
    format!("20000101T000000.000000Z-{group}-{n}")
}
/// Entry ids newer than any real one (restore by path prefers the newest).
fn future_id(n: u32) -> String {
    format!("29991231T235959.999999Z-1-{n}")
}

// ---------------------------------------------------------------------------------------------
// Volumes and users.

#[derive(Clone, Copy)]
enum Vol {
    Tmpfs,
    /// A tmpfs with room for almost nothing (the file system is full at once).
    TinyTmpfs,
    /// ext4: inode numbers are reused, statx gives a birth time (256-byte inodes).
    Ext4,
    /// ext3: block-mapped files, which the gentle shrinker frees in steps.
    Ext3,
    /// xfs and btrfs: reflinks share extents (`cp --reflink=always`).
    Xfs,
    Btrfs,
}

impl Vol {
    /// This kind of volume on `root/rel`, with 256-byte inodes on ext3/ext4 (statx birth
    /// times).
    fn mount(self, s: &Scratch, rel: &str) -> Result<Volume, String> {
        match self {
            Vol::Tmpfs => Volume::tmpfs_with(s, rel, "size=64m"),
            Vol::TinyTmpfs => Volume::tmpfs_with(s, rel, "size=256k,nr_inodes=64"),
            Vol::Ext4 => Volume::ext4(s, rel, 256 * MIB, 1024),
            Vol::Ext3 => Volume::ext3(s, rel, 512 * MIB, 256),
            Vol::Xfs => Volume::xfs(s, rel, 320 * MIB),
            Vol::Btrfs => Volume::btrfs(s, rel, 256 * MIB, ""),
        }
    }
}

fn run_ok(what: &str, c: &mut Command) -> bool {
    match c.output() {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            eprintln!("{what} failed: {}", String::from_utf8_lossy(&o.stderr));
            false
        }
        Err(e) => {
            eprintln!("{what} failed: {e}");
            false
        }
    }
}

/// Tests that make root's commands hang on the old code (a FIFO where root reads) run alone:
/// root's `status` lists every trash on the machine, so it would hang in the other tests too.
static TURNS: RwLock<()> = RwLock::new(());

enum Turn {
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
}

/// One test's world: a scratch directory (mode 0711, so the other uids reach inside), a volume
/// mounted on `<scratch>/vol` with mode 1777, and a private home per uid.
struct World {
    // Dropped in this order, after `Drop::drop` ended every process of the test.
    _mount: Volume,
    s: Scratch,
    top: PathBuf,
    _turn: Turn,
}

impl World {
    /// The world of the test of `s` (made by `scratch!()`).
    fn new(s: Scratch, vol: Vol) -> Result<World, String> {
        Self::make(s, vol, false)
    }

    /// A world for a test that must not run beside the others (see `TURNS`).
    fn alone(s: Scratch, vol: Vol) -> Result<World, String> {
        Self::make(s, vol, true)
    }

    /// Err: why the test cannot run here (for a skip).
    fn make(s: Scratch, vol: Vol, alone: bool) -> Result<World, String> {
        util::need_root()?;
        let turn = if alone {
            Turn::Alone(TURNS.write().unwrap_or_else(|e| e.into_inner()))
        } else {
            Turn::Shared(TURNS.read().unwrap_or_else(|e| e.into_inner()))
        };
        chmod(s.root(), 0o711);
        let mount = vol.mount(&s, "vol")?;
        let top = s.path("vol");
        chmod(&top, 0o1777);
        chmod(&s.mkdir("home"), 0o755);
        // The machine's index of trashes below mount tops (`RECLAIM_UNDER/var/tmp`), as
        // /var/tmp is on every machine: root's, sticky, writable by all.
        chmod(&s.mkdir("var/tmp"), 0o1777);
        for uid in [ROOT, VICTIM, ATTACKER, THIRD] {
            let h = s.mkdir(format!("home/{uid}"));
            own(&h, uid);
            chmod(&h, 0o700);
        }
        let w = World {
            _mount: mount,
            s,
            top,
            _turn: turn,
        };
        let probe = w.tool(VICTIM, "true", Vec::new());
        if !probe.status.success() {
            return Err(format!(
                "cannot run commands as uid {VICTIM}: {}",
                util::stderr_of(&probe)
            ));
        }
        Ok(w)
    }

    /// `<top>/rel`.
    fn p(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.s.path(Path::new("vol").join(rel))
    }

    fn home(&self, uid: u32) -> PathBuf {
        self.s.path(format!("home/{uid}"))
    }

    /// The shared trash parent of the old layout (root, 0755) with a 0700 trash for each of
    /// `uids` (see the module comment).
    fn old_layout(&self, uids: &[u32]) {
        let dot = self.s.mkdir("vol/.reclaim");
        chmod(&dot, 0o755);
        for &u in uids {
            let t = self.s.mkdir(format!("vol/.reclaim/{u}"));
            own(&t, u);
            chmod(&t, 0o700);
        }
    }

    /// A directory `<top>/rel` owned by `owner`.
    fn dir(&self, rel: impl AsRef<Path>, owner: u32, mode: u32) -> PathBuf {
        let p = self.p(rel);
        fs::create_dir(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        own(&p, owner);
        chmod(&p, mode);
        p
    }

    /// A regular file `<top>/rel` owned by `owner`.
    fn file(
        &self,
        rel: impl AsRef<Path>,
        owner: u32,
        mode: u32,
        content: impl AsRef<[u8]>,
    ) -> PathBuf {
        let p = self.p(rel);
        fs::write(&p, content).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
        own(&p, owner);
        chmod(&p, mode);
        p
    }

    /// `reclaim ARGS` as `who` (see `Run`).
    fn reclaim(&self, who: u32, args: Vec<OsString>) -> Run<'_> {
        Run {
            w: self,
            who,
            args,
            envs: Vec::new(),
            cwd: self.s.root().to_path_buf(),
            spawn_reapers: false,
            unset: Vec::new(),
            prefix: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// Another program (`ln`, `mv`, `flock`, ...) as `who`, with the same path checks.
    fn tool_cmd(&self, who: u32, prog: &str, args: Vec<OsString>) -> Command {
        self.tool_cmd_in(who, &[], prog, args)
    }

    /// `tool_cmd` with the supplementary `groups`.
    fn tool_cmd_in(&self, who: u32, groups: &[u32], prog: &str, args: Vec<OsString>) -> Command {
        for a in &args {
            if !a.as_bytes().starts_with(b"-") {
                self.s.assert_inside(&self.s.root().join(a));
            }
        }
        let mut c = as_user_in(who, groups, prog);
        c.args(&args)
            .current_dir(self.s.root())
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", self.home(who))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn tool(&self, who: u32, prog: &str, args: Vec<OsString>) -> Output {
        let what = format!("{prog} {args:?} as uid {who}");
        let mut p = Proc::spawn(self.tool_cmd(who, prog, args), what);
        p.finish(HANG)
    }

    /// `tool`, which must succeed.
    #[track_caller]
    fn tool_ok(&self, who: u32, prog: &str, args: Vec<OsString>) {
        let what = format!("{prog} {args:?} as uid {who}");
        let o = self.tool(who, prog, args);
        assert!(o.status.success(), "{what}: {}", util::stderr_of(&o));
    }

    /// The trash of `uid` on this volume (panics if there is none).
    #[track_caller]
    fn trash(&self, uid: u32) -> PathBuf {
        find_trash(&self.top, uid).unwrap_or_else(|| {
            panic!(
                "uid {uid} has no trash at {}: {:?}",
                self.top.display(),
                list(&self.top)
            )
        })
    }
}

impl Drop for World {
    fn drop(&mut self) {
        end_processes_of(self.s.root());
    }
}

/// A command that runs `prog` as `who` (root: directly; others: `setpriv` with their uid and
/// gid and the supplementary `groups`, none: cleared).
fn as_user_in(who: u32, groups: &[u32], prog: impl AsRef<OsStr>) -> Command {
    if who == ROOT {
        Command::new(prog)
    } else {
        let mut c = Command::new("setpriv");
        c.arg(format!("--reuid={who}"))
            .arg(format!("--regid={who}"));
        if groups.is_empty() {
            c.arg("--clear-groups");
        } else {
            let list: Vec<String> = groups.iter().map(u32::to_string).collect();
            c.arg(format!("--groups={}", list.join(",")));
        }
        c.arg("--").arg(prog);
        c
    }
}

fn gid_of(uid: u32) -> u32 {
    uid
}

#[track_caller]
fn own(p: &Path, uid: u32) {
    lchown(p, Some(uid), Some(gid_of(uid)))
        .unwrap_or_else(|e| panic!("chown {}: {e}", p.display()));
}

#[track_caller]
fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", p.display()));
}

fn list(dir: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| Some(e.ok()?.file_name())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Arguments from anything path- or string-like.
macro_rules! args {
    ($($a:expr),* $(,)?) => { vec![$(OsString::from(AsRef::<OsStr>::as_ref(&$a))),*] };
}

/// `reclaim` as one user: no config file (`RECLAIM_CONFIG=`), its own `HOME` and
/// `XDG_STATE_HOME` inside the scratch directory, `RECLAIM_NO_SPAWN=1` unless `spawning()`.
/// Every argument that does not start with `-` is checked to lie inside the scratch directory
/// (as a path relative to the working directory).
struct Run<'w> {
    w: &'w World,
    who: u32,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    cwd: PathBuf,
    spawn_reapers: bool,
    /// Variables of the usual environment left out.
    unset: Vec<&'static str>,
    /// A program `reclaim` runs under (`prlimit ... --`).
    prefix: Vec<OsString>,
    /// Supplementary groups of the user (none: cleared).
    groups: Vec<u32>,
}

impl Run<'_> {
    fn env(mut self, k: &str, v: impl AsRef<OsStr>) -> Self {
        self.envs.push((k.into(), v.as_ref().to_owned()));
        self
    }

    /// Runs `reclaim` under `prefix` (e.g. `prlimit --nofile=1024:1024 --`).
    fn under(mut self, prefix: &[&str]) -> Self {
        self.prefix = prefix.iter().map(OsString::from).collect();
        self
    }

    /// With these supplementary groups.
    fn groups(mut self, groups: &[u32]) -> Self {
        self.groups = groups.to_vec();
        self
    }

    /// Leaves `k` out of the environment (`HOME`, `XDG_STATE_HOME`, `RECLAIM_CONFIG`, ...).
    fn unset(mut self, k: &'static str) -> Self {
        self.unset.push(k);
        self
    }

    fn cwd(mut self, p: &Path) -> Self {
        self.cwd = p.to_path_buf();
        self
    }

    /// Lets `rm --background` start detached reapers.
    fn spawning(mut self) -> Self {
        self.spawn_reapers = true;
        self
    }

    fn describe(&self) -> String {
        format!("`reclaim {:?}` as uid {}", self.args, self.who)
    }

    fn command(&self) -> Command {
        self.w.s.assert_inside(&self.cwd);
        for a in &self.args {
            if !a.as_bytes().starts_with(b"-") {
                self.w.s.assert_inside(&self.cwd.join(a));
            }
        }
        let home = self.w.home(self.who);
        let mut c = match self.prefix.split_first() {
            None => as_user_in(self.who, &self.groups, util::reclaim_bin()),
            Some((prog, rest)) => {
                let mut c = as_user_in(self.who, &self.groups, prog);
                c.args(rest).arg(util::reclaim_bin());
                c
            }
        };
        c.args(&self.args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", &home)
            .env("XDG_STATE_HOME", home.join("state"))
            .env("RECLAIM_CONFIG", "")
            // Only this test's file systems: another test's trashes are not ours to reap.
            .env("RECLAIM_UNDER", self.w.s.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !self.spawn_reapers {
            c.env(util::NO_SPAWN, "1");
        }
        for (k, v) in &self.envs {
            c.env(k, v);
        }
        for k in &self.unset {
            c.env_remove(k);
        }
        c
    }

    fn spawn(&self) -> Proc {
        Proc::spawn(self.command(), self.describe())
    }

    /// Runs it to the end; panics ("hung") if it takes longer than `HANG`.
    fn output(&self) -> Output {
        self.spawn().finish(HANG)
    }

    fn output_within(&self, limit: Duration) -> Output {
        self.spawn().finish(limit)
    }

    /// `output`, which must exit 0.
    #[track_caller]
    fn ok(&self) -> Output {
        let o = self.output();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{} failed ({}): {}",
            self.describe(),
            o.status,
            util::stderr_of(&o)
        );
        o
    }
}

type Buf = Arc<Mutex<(Vec<u8>, bool)>>;

/// Reads `r` to its end on a thread of its own.
fn drain(mut r: impl Read + Send + 'static) -> Buf {
    let buf: Buf = Arc::default();
    let b = buf.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match r.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => b.lock().unwrap().0.extend_from_slice(&chunk[..n]),
            }
        }
        b.lock().unwrap().1 = true;
    });
    buf
}

/// What `b` read (waiting a moment for its end: a grandchild may hold the pipe).
fn taken(b: &Buf) -> Vec<u8> {
    let t0 = Instant::now();
    while !b.lock().unwrap().1 && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    b.lock().unwrap().0.clone()
}

/// A child process, killed (by its pid) if still running when dropped.
struct Proc {
    child: Child,
    what: String,
    out: Buf,
    err: Buf,
}

impl Proc {
    fn spawn(mut c: Command, what: String) -> Proc {
        let mut child = c
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let out = drain(child.stdout.take().unwrap());
        let err = drain(child.stderr.take().unwrap());
        Proc {
            child,
            what,
            out,
            err,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) with the pid of our own child.
        unsafe { libc::kill(self.pid(), sig) };
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.exited() {
                return Some(st);
            }
            if t0.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn collect(&self, status: ExitStatus) -> Output {
        Output {
            status,
            stdout: taken(&self.out),
            stderr: taken(&self.err),
        }
    }

    /// Waits for the end; panics ("hung") after `limit`.
    fn finish(&mut self, limit: Duration) -> Output {
        match self.wait_exit(limit) {
            Some(st) => self.collect(st),
            None => {
                let so_far = String::from_utf8_lossy(&self.err.lock().unwrap().0).into_owned();
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "hung: {} did not finish in {limit:?}; its stderr so far:\n{so_far}",
                    self.what
                );
            }
        }
    }

    /// Kills it (a watcher) and returns what it printed.
    fn stop(&mut self) -> Output {
        let _ = self.child.kill();
        let st = self.child.wait().unwrap();
        self.collect(st)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Kills (SIGKILL) a process this test started indirectly (a detached reaper) when dropped.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of a reaper this test started.
        unsafe { libc::kill(self.0, libc::SIGKILL) };
    }
}

/// Pids of the processes this test started, directly or not (detached reapers): those whose
/// command line names a path inside `root`, or whose cwd is there. `root` is the test's own
/// scratch directory (a fresh random name), so nothing else can match. (Not open fds: root's
/// `status` of another test opens every trash on the machine for a moment.)
fn processes_of(root: &Path) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut pids = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let base = e.path();
        let inside = |p: &Path| p.starts_with(root);
        let cmdline = fs::read(base.join("cmdline")).unwrap_or_default();
        let in_cmd = cmdline
            .split(|&b| b == 0)
            .any(|a| inside(Path::new(OsStr::from_bytes(a))));
        let in_cwd = fs::read_link(base.join("cwd")).is_ok_and(|p| inside(&p));
        if in_cmd || in_cwd {
            pids.push(pid);
        }
    }
    pids
}

/// Ends (SIGKILL, by pid) every process `processes_of(root)` finds, and waits for them.
fn end_processes_of(root: &Path) {
    for _ in 0..5 {
        let pids = processes_of(root);
        if pids.is_empty() {
            return;
        }
        for &pid in &pids {
            // SAFETY: kill(2) on a pid found above, one this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5)
            && pids
                .iter()
                .any(|p| fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| !c.is_empty()))
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Polls `f` every 10 ms until it returns Some; panics with `what` after `limit`.
#[track_caller]
fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

// ---------------------------------------------------------------------------------------------
// Trashes and entries.

/// The trash of `uid` at `top`: the first (in name order) directory named `.reclaim-<uid>` or
/// `.reclaim-<uid>.*` that is owned by uid, mode 0700, on the same file system; else the old
/// layout's `<top>/.reclaim/<uid>` (a directory owned by uid).
fn find_trash(top: &Path, uid: u32) -> Option<PathBuf> {
    find_new_trash(top, uid).or_else(|| {
        let old = top.join(".reclaim").join(uid.to_string());
        match fs::symlink_metadata(&old) {
            Ok(m) if m.is_dir() && m.uid() == uid => Some(old),
            _ => None,
        }
    })
}

/// `uid`'s trash of the current layout only (`.reclaim-<uid>[.<suffix>]`), as a running
/// `reclaim` makes it.
fn find_new_trash(top: &Path, uid: u32) -> Option<PathBuf> {
    let dev = fs::metadata(top).ok()?.dev();
    let base = format!(".reclaim-{uid}");
    let dotted = format!("{base}.");
    let names: Vec<OsString> = list(top)
        .into_iter()
        .filter(|n| {
            let b = n.as_bytes();
            b == base.as_bytes() || b.starts_with(dotted.as_bytes())
        })
        .collect();
    for n in names {
        let p = top.join(&n);
        if let Ok(m) = fs::symlink_metadata(&p) {
            if m.is_dir() && m.uid() == uid && m.mode() & 0o7777 == 0o700 && m.dev() == dev {
                return Some(p);
            }
        }
    }
    None
}

/// Entry directories of a trash (names starting with a digit), oldest first.
fn entries(trash: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(trash)
        .map(|rd| {
            rd.filter_map(|e| {
                let e = e.ok()?;
                let n = e.file_name().to_string_lossy().into_owned();
                (e.file_type().ok()?.is_dir() && n.starts_with(|c: char| c.is_ascii_digit()))
                    .then_some(n)
            })
            .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[track_caller]
fn meta_of(entry: &Path) -> Value {
    let p = entry.join("meta.json");
    let text = fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", p.display()))
}

/// The entry of `trash` whose meta.json names `original`.
#[track_caller]
fn entry_for(trash: &Path, original: &Path) -> String {
    let want = original.to_string_lossy();
    entries(trash)
        .into_iter()
        .find(|id| meta_of(&trash.join(id))["original"].as_str() == Some(&want))
        .unwrap_or_else(|| {
            panic!(
                "no entry for {} in {}: {:?}",
                original.display(),
                trash.display(),
                entries(trash)
            )
        })
}

/// A forged entry directory `<trash>/<id>` (mode 0700, owned by `owner`), as its owner makes it.
fn forge_entry(trash: &Path, id: &str, owner: u32) -> PathBuf {
    let e = trash.join(id);
    fs::create_dir(&e).unwrap_or_else(|err| panic!("mkdir {}: {err}", e.display()));
    own(&e, owner);
    chmod(&e, 0o700);
    e
}

/// Writes `v` as `<entry>/meta.json`, owned by `owner` (mode 0600).
fn write_meta(entry: &Path, v: &Value, owner: u32) {
    let p = entry.join("meta.json");
    let _ = fs::remove_file(&p);
    fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    own(&p, owner);
    chmod(&p, 0o600);
}

/// What can stand where a trash file is expected.
#[derive(Clone, Debug)]
enum Node {
    Fifo,
    /// `mknod c 1 3` (a /dev/null).
    CharDev,
    Symlink(PathBuf),
    File(Vec<u8>),
    Dir,
}

/// Makes `node` at `p`, owned by `owner`.
fn make(p: &Path, node: &Node, owner: u32) {
    use rustix::fs::{mknodat, FileType, Mode, CWD};
    match node {
        Node::Fifo => mknodat(CWD, p, FileType::Fifo, Mode::from_raw_mode(0o600), 0)
            .unwrap_or_else(|e| panic!("mkfifo {}: {e}", p.display())),
        Node::CharDev => mknodat(
            CWD,
            p,
            FileType::CharacterDevice,
            Mode::from_raw_mode(0o600),
            rustix::fs::makedev(1, 3),
        )
        .unwrap_or_else(|e| panic!("mknod {}: {e}", p.display())),
        Node::Symlink(t) => symlink(t, p).unwrap_or_else(|e| panic!("ln -s {}: {e}", p.display())),
        Node::File(c) => fs::write(p, c).unwrap_or_else(|e| panic!("write {}: {e}", p.display())),
        Node::Dir => fs::create_dir(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display())),
    }
    own(p, owner);
}

/// Removes whatever `p` is (not following a symlink).
fn remove_any(p: &Path) {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(p).unwrap(),
        Ok(_) => fs::remove_file(p).unwrap(),
        Err(_) => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Status.

/// `reclaim status --json` as `who`: exit 0 and one object.
#[track_caller]
fn status_json(w: &World, who: u32) -> Value {
    let out = w.reclaim(who, args!["status", "--json"]).ok();
    util::json_object(&out.stdout)
}

/// The object of `trash` in a status report.
fn trash_in<'v>(v: &'v Value, trash: &Path) -> Option<&'v Value> {
    v["trashes"]
        .as_array()?
        .iter()
        .find(|t| t["trash"].as_str().map(Path::new) == Some(trash))
}

/// The status item with entry id `id`, in any trash.
fn item_in<'v>(v: &'v Value, id: &str) -> Option<&'v Value> {
    v["trashes"]
        .as_array()?
        .iter()
        .flat_map(|t| t["items"].as_array().into_iter().flatten())
        .find(|i| i["id"] == id)
}

#[track_caller]
fn assert_damaged(v: &Value, id: &str, what: &str) {
    let i = item_in(v, id).unwrap_or_else(|| panic!("{what}: status does not list {id}: {v}"));
    assert_eq!(i["state"], "damaged", "{what}: {i}");
    assert!(
        i["damage"].as_str().is_some_and(|d| !d.is_empty()),
        "{what}: no \"damage\" reason: {i}"
    );
}

// ---------------------------------------------------------------------------------------------
// Effects: fingerprints of files that must survive, snapshots of everything else.

/// What must not change about a file: inode, owner, mode, size, mtime, content.
#[derive(Debug, PartialEq, Eq)]
struct Print {
    ino: u64,
    uid: u32,
    mode: u32,
    len: u64,
    mtime: (i64, i64),
    content: String,
}

#[track_caller]
fn print_of(p: &Path) -> Print {
    let m = fs::symlink_metadata(p).unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()));
    Print {
        ino: m.ino(),
        uid: m.uid(),
        mode: m.mode(),
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        content: if m.is_file() {
            String::from_utf8_lossy(&fs::read(p).unwrap()).into_owned()
        } else {
            String::new()
        },
    }
}

#[track_caller]
fn assert_unchanged(p: &Path, before: &Print, what: &str) {
    let now = fs::symlink_metadata(p)
        .map(|_| print_of(p))
        .unwrap_or_else(|e| panic!("{what}: {} is gone ({e})", p.display()));
    assert_eq!(&now, before, "{what}: {} changed", p.display());
}

/// Walks `top` (not following symlinks) for inode `ino`.
fn find_ino(top: &Path, ino: u64) -> Option<(PathBuf, fs::Metadata)> {
    let m = fs::symlink_metadata(top).ok()?;
    if m.ino() == ino {
        return Some((top.to_path_buf(), m));
    }
    if m.is_dir() {
        for e in fs::read_dir(top).into_iter().flatten().flatten() {
            if let Some(hit) = find_ino(&e.path(), ino) {
                return Some(hit);
            }
        }
    }
    None
}

/// `find_ino` for the test's fingerprinted file, which must still be there, unchanged.
#[track_caller]
fn assert_survives(top: &Path, before: &Print, what: &str) -> PathBuf {
    let (p, _) = find_ino(top, before.ino)
        .unwrap_or_else(|| panic!("{what}: inode {} was removed", before.ino));
    assert_unchanged(&p, before, what);
    p
}

type Snap = BTreeMap<PathBuf, String>;

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Every entry under `top` except those under `skip`: type, owner, mode; files also size,
/// mtime and content (or a hash; files over 1 MiB: inode instead), symlinks their target.
/// Directory times are left out (they change when a sibling trash is made).
fn snap(top: &Path, skip: &[PathBuf]) -> Snap {
    fn go(base: &Path, p: &Path, skip: &[PathBuf], out: &mut Snap) {
        if skip.iter().any(|s| p.starts_with(s)) {
            return;
        }
        let Ok(m) = fs::symlink_metadata(p) else {
            return;
        };
        let ft = m.file_type();
        let own = format!(
            "mode={:o} uid={} gid={}",
            m.mode() & 0o7777,
            m.uid(),
            m.gid()
        );
        let d = if ft.is_dir() {
            format!("dir {own}")
        } else if ft.is_symlink() {
            format!("symlink -> {:?} {own}", fs::read_link(p).ok())
        } else if ft.is_file() {
            let body = if m.len() > MIB {
                format!("ino={}", m.ino())
            } else {
                let c = fs::read(p).unwrap_or_default();
                if c.len() <= 64 {
                    format!("{:?}", String::from_utf8_lossy(&c))
                } else {
                    format!("fnv={:x}", fnv(&c))
                }
            };
            format!(
                "file {own} len={} mtime={}.{:09} {body}",
                m.len(),
                m.mtime(),
                m.mtime_nsec()
            )
        } else if ft.is_fifo() {
            format!("fifo {own}")
        } else if ft.is_char_device() || ft.is_block_device() {
            format!("device {:x} {own}", m.rdev())
        } else {
            format!("other {own}")
        };
        out.insert(p.strip_prefix(base).unwrap().to_path_buf(), d);
        if ft.is_dir() {
            for n in list(p) {
                go(base, &p.join(n), skip, out);
            }
        }
    }
    let mut out = Snap::new();
    go(top, top, skip, &mut out);
    out
}

/// The top-level names of `top` that are trashes (or squat a trash's name): `.reclaim*`, but
/// not the hidden names of shrinks (`.reclaim-shrink.*`).
fn trash_names(top: &Path) -> Vec<PathBuf> {
    list(top)
        .into_iter()
        .filter(|n| {
            let b = n.as_bytes();
            b.starts_with(b".reclaim") && !b.starts_with(b".reclaim-shrink.")
        })
        .map(|n| top.join(n))
        .collect()
}

/// `snap` of `top` without any trash.
fn snap_outside_trashes(top: &Path) -> Snap {
    snap(top, &trash_names(top))
}

/// `snap` without `rel` and what is under it.
fn without(mut s: Snap, rel: &str) -> Snap {
    s.retain(|k, _| !k.starts_with(rel));
    s
}

#[track_caller]
fn assert_same_snap(what: &str, before: &Snap, after: &Snap) {
    if before == after {
        return;
    }
    let mut diff = String::new();
    for (k, v) in before {
        match after.get(k) {
            None => diff.push_str(&format!("  gone:    {} ({v})\n", k.display())),
            Some(w) if w != v => {
                diff.push_str(&format!("  changed: {} ({v} -> {w})\n", k.display()))
            }
            _ => {}
        }
    }
    for (k, v) in after {
        if !before.contains_key(k) {
            diff.push_str(&format!("  new:     {} ({v})\n", k.display()));
        }
    }
    panic!("{what} changed:\n{diff}");
}

fn stderr_lines(o: &Output) -> Vec<String> {
    util::stderr_of(o)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Lines of stderr starting with `reclaim: interrupted`.
fn interrupted_lines(o: &Output) -> Vec<String> {
    stderr_lines(o)
        .into_iter()
        .filter(|l| l.starts_with("reclaim: interrupted"))
        .collect()
}

#[track_caller]
fn assert_exit(o: &Output, code: i32, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}: exit {} (expected {code}); stderr:\n{}",
        o.status,
        util::stderr_of(o)
    );
}

/// A big file `<top>/rel` of `len` written bytes (block-mapped on ext3: shrunk in steps),
/// synced, owned by `owner`.
struct Big {
    ino: u64,
    size: u64,
    allocated: u64,
}

fn written(w: &World, rel: &str, len: u64, owner: u32) -> Big {
    let p = w.p(rel);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
        .unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
    let chunk: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8 + 1).collect();
    let mut off = 0;
    while off < len {
        let n = MIB.min(len - off);
        f.write_all(&chunk[..n as usize]).unwrap();
        off += n;
    }
    f.sync_all().unwrap();
    drop(f);
    own(&p, owner);
    chmod(&p, 0o644);
    let m = fs::symlink_metadata(&p).unwrap();
    Big {
        ino: m.ino(),
        size: m.len(),
        allocated: m.blocks() * 512,
    }
}

/// Waits until the shrinker has cut `big` (wherever it now is on the volume).
fn wait_shrinking(w: &World, p: &mut Proc, big: &Big) {
    let t0 = Instant::now();
    loop {
        if find_ino(&w.top, big.ino).is_some_and(|(_, m)| m.len() < big.size) {
            return;
        }
        if let Some(st) = p.exited() {
            let o = p.collect(st);
            panic!(
                "{} ended ({st}) before it shrank the file: {}",
                p.what,
                util::stderr_of(&o)
            );
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{} did not start shrinking in 30 s",
            p.what
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Regular files under `p` (0 if it is gone).
fn count_files(p: &Path) -> usize {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| count_files(&e.path()))
            .sum(),
        Ok(m) if m.is_file() => 1,
        _ => 0,
    }
}

/// Names starting with `.reclaim-shrink.` in `dir`.
fn shrink_names(dir: &Path) -> Vec<OsString> {
    list(dir)
        .into_iter()
        .filter(|n| n.as_bytes().starts_with(b".reclaim-shrink."))
        .collect()
}

/// Clears the immutable flag of inode `ino` on drop, wherever on the volume it went.
struct Unfreeze {
    top: PathBuf,
    ino: u64,
}

impl Drop for Unfreeze {
    fn drop(&mut self) {
        if let Some((p, _)) = find_ino(&self.top, self.ino) {
            let _ = Command::new("chattr").arg("-i").arg(p).output();
        }
    }
}

fn chattr_i(p: &Path, top: &Path) -> Result<Unfreeze, String> {
    let ino = fs::symlink_metadata(p)
        .map_err(|e| format!("lstat {}: {e}", p.display()))?
        .ino();
    let guard = Unfreeze {
        top: top.to_path_buf(),
        ino,
    };
    run_ok("chattr +i", Command::new("chattr").arg("+i").arg(p))
        .then_some(guard)
        .ok_or_else(|| "no chattr +i".to_string())
}

// ---------------------------------------------------------------------------------------------
// 1. Nothing in a trash can make a root command wait forever.

#[test]
fn fifo_meta_never_hangs_root_commands() {
    let w = util::or_skip!(World::alone(scratch!(), Vol::Tmpfs));
    w.old_layout(&[ROOT, VICTIM, ATTACKER]);
    w.dir("v", VICTIM, 0o755);
    let vfile = w.file("v/vfile", VICTIM, 0o644, "victim's file\n");
    w.dir("r", ROOT, 0o755);
    let rfile = w.file("r/rfile", ROOT, 0o644, "root's file\n");
    let root_fifo = w.p("r/rootfifo");
    make(&root_fifo, &Node::Fifo, ROOT);
    w.dir("a", ATTACKER, 0o755);
    w.file("a/afile", ATTACKER, 0o644, "a\n");
    w.file("a/afile2", ATTACKER, 0o644, "a2\n");
    w.dir("backups", ROOT, 0o755);
    w.file("backups/b1", ROOT, 0o644, "b1\n");
    w.file("backups/b2", ROOT, 0o644, "b2\n");
    let before = snap_outside_trashes(&w.top);

    w.reclaim(VICTIM, args!["rm", "--background", "--grace", "1h", vfile])
        .ok();
    w.reclaim(ROOT, args!["rm", "--background", "--grace", "1h", rfile])
        .ok();
    w.reclaim(ATTACKER, args!["rm", "--background", w.p("a/afile")])
        .ok();
    let vt = w.trash(VICTIM);
    let victim_id = entry_for(&vt, &vfile);
    let t = w.trash(ATTACKER);
    assert_eq!(entries(&t).len(), 1, "{:?}", entries(&t));

    // The attacker's own trash: an entry whose meta.json is a FIFO, and one whose meta.json is
    // a symlink to a FIFO of root's (following it would block too). Both sort first.
    let fifo_entry = forge_entry(&t, &old_id(1, 0), ATTACKER);
    make(&fifo_entry.join("meta.json"), &Node::Fifo, ATTACKER);
    make(
        &fifo_entry.join("data"),
        &Node::File(b"x\n".to_vec()),
        ATTACKER,
    );
    let link_entry = forge_entry(&t, &old_id(1, 1), ATTACKER);
    make(
        &link_entry.join("meta.json"),
        &Node::Symlink(root_fifo.clone()),
        ATTACKER,
    );
    make(
        &link_entry.join("data"),
        &Node::File(b"y\n".to_vec()),
        ATTACKER,
    );

    // status, both forms.
    let st = status_json(&w, ROOT);
    let vi = item_in(&st, &victim_id).unwrap_or_else(|| panic!("no victim entry: {st}"));
    assert_eq!(vi["state"], "grace", "{vi}");
    assert_damaged(&st, &old_id(1, 0), "meta.json is a FIFO");
    assert_damaged(&st, &old_id(1, 1), "meta.json is a symlink to a FIFO");
    w.reclaim(ROOT, args!["status"]).ok();

    // restore: root's own entry by path, the victim's by id (done as the victim).
    w.reclaim(ROOT, args!["restore", w.p("r/rfile")]).ok();
    assert_eq!(fs::read(w.p("r/rfile")).unwrap(), b"root's file\n");
    w.reclaim(ROOT, args!["restore", victim_id]).ok();
    assert_eq!(fs::read(w.p("v/vfile")).unwrap(), b"victim's file\n");
    assert_eq!(fs::symlink_metadata(w.p("v/vfile")).unwrap().uid(), VICTIM);

    // prune, which counts what every trash holds.
    w.reclaim(
        ROOT,
        args![
            "prune",
            "--dry-run",
            "--keep-free",
            "1%",
            "--keep-last",
            "1",
            w.p("backups")
        ],
    )
    .ok();

    // reap --once: frees the attacker's good entry despite the bad ones.
    let out = w
        .reclaim(ROOT, args!["reap", "--once", "--json", "--trash", t])
        .output();
    util::json_object(&out.stdout);
    let left: Vec<String> = entries(&t)
        .into_iter()
        .filter(|e| !e.starts_with("2000"))
        .collect();
    assert!(left.is_empty(), "reap --once left the good entry: {left:?}");

    // reap --watch: frees an entry hidden while it runs.
    let mut watcher = w
        .reclaim(ROOT, args!["reap", "--watch", "--trash", t])
        .spawn();
    w.reclaim(ATTACKER, args!["rm", "--background", w.p("a/afile2")])
        .ok();
    let t0 = Instant::now();
    while entries(&t).iter().any(|e| !e.starts_with("2000")) {
        assert!(
            watcher.exited().is_none(),
            "reap --watch ended: {}",
            util::stderr_of(&watcher.stop())
        );
        assert!(
            t0.elapsed() < HANG,
            "hung: reap --watch did not free a new entry in {HANG:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    watcher.stop();

    // reaper.json a FIFO, while the attacker holds the trash's lock (a reaper seems to run).
    // (The attacker's own lock file: it may replace whatever is there, its trash is its own.)
    let lock = t.join("lock");
    if !fs::symlink_metadata(&lock).is_ok_and(|m| m.is_file() && m.uid() == ATTACKER) {
        remove_any(&lock);
        make(&lock, &Node::File(Vec::new()), ATTACKER);
        chmod(&lock, 0o600);
    }
    let mut holder = Proc::spawn(
        w.tool_cmd(
            ATTACKER,
            "flock",
            args!["--exclusive", lock, "sleep", "600"],
        ),
        "flock as the attacker".into(),
    );
    wait_for("the attacker's flock", Duration::from_secs(10), || {
        if let Some(st) = holder.exited() {
            panic!(
                "flock ended ({st}): {}",
                util::stderr_of(&holder.collect(st))
            );
        }
        util::trash_locked(&t).then_some(())
    });
    remove_any(&t.join("reaper.json"));
    make(&t.join("reaper.json"), &Node::Fifo, ATTACKER);
    status_json(&w, ROOT);
    w.reclaim(ROOT, args!["status"]).ok();
    // Root's plain `reap` waits for a reaper at work, but not for a lock the attacker holds
    // with something else (for as long as it likes): it says so and leaves.
    let o = w
        .reclaim(ROOT, args!["reap", "--trash", t])
        .output_within(Duration::from_secs(30));
    let err = util::stderr_of(&o);
    assert!(
        err.contains("not waiting for") && err.contains("not reclaim"),
        "root's reap does not say why it left the trash:\n{err}"
    );
    holder.stop();

    // Nothing outside the trashes changed but what was asked: the attacker's files are freed.
    let expected = without(without(before, "a/afile"), "a/afile2");
    assert_same_snap("the volume", &expected, &snap_outside_trashes(&w.top));
}

/// The variants: `data` or `reaping` of an entry, or the trash's `lock`, is a FIFO, a symlink
/// to a root file or directory, or a device node. Root's reaper and status neither wait on
/// them nor reach through them.
#[test]
fn wrong_type_lock_data_or_reaping_never_hangs_or_reaches_root_files() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[ATTACKER]);
    w.dir("r", ROOT, 0o755);
    let secret = w.file("r/secret", ROOT, 0o644, "root's secret\n");
    w.dir("r/sub", ROOT, 0o755);
    w.file("r/sub/keep", ROOT, 0o644, "keep\n");
    make(&w.p("r/fifo"), &Node::Fifo, ROOT);
    w.dir("a", ATTACKER, 0o755);
    for i in 0..5 {
        w.file(format!("a/f{i}"), ATTACKER, 0o644, format!("f{i}\n"));
    }
    w.reclaim(ATTACKER, args!["rm", "--background", w.p("a/f0")])
        .ok();
    let t = w.trash(ATTACKER);
    let legit = entries(&t);
    let template = meta_of(&t.join(&legit[0]));

    let kinds = [
        Node::Fifo,
        Node::Symlink(secret.clone()),
        Node::Symlink(w.p("r")),
        Node::CharDev,
    ];
    let mut n = 0;
    for inner in ["data", "reaping"] {
        for k in &kinds {
            let id = old_id(2, n);
            n += 1;
            let e = forge_entry(&t, &id, ATTACKER);
            let mut m = template.clone();
            m["id"] = id.clone().into();
            write_meta(&e, &m, ATTACKER);
            make(&e.join(inner), k, ATTACKER);
        }
    }
    let secret_print = print_of(&secret);
    let outside = snap(&w.top, std::slice::from_ref(&t));

    let out = w
        .reclaim(ROOT, args!["reap", "--json", "--trash", t])
        .output();
    util::json_object(&out.stdout);
    assert!(
        !t.join(&legit[0]).exists(),
        "the good entry was not freed: {}",
        util::stderr_of(&out)
    );
    status_json(&w, ROOT);
    assert_unchanged(&secret, &secret_print, "root's file");
    assert_same_snap(
        "outside the attacker's trash",
        &outside,
        &snap(&w.top, std::slice::from_ref(&t)),
    );

    // The trash's lock.
    for (i, k) in [Node::Fifo, Node::Symlink(secret.clone()), Node::CharDev]
        .iter()
        .enumerate()
    {
        let lock = t.join("lock");
        remove_any(&lock);
        make(&lock, k, ATTACKER);
        w.reclaim(
            ATTACKER,
            args!["rm", "--background", w.p(format!("a/f{}", i + 1))],
        )
        .ok();
        let outside = snap(&w.top, std::slice::from_ref(&t));
        let out = w
            .reclaim(ROOT, args!["reap", "--once", "--json", "--trash", t])
            .output();
        util::json_object(&out.stdout);
        status_json(&w, ROOT);
        w.reclaim(ROOT, args!["status"]).ok();
        assert_unchanged(&secret, &secret_print, &format!("lock is {k:?}"));
        assert_same_snap(
            &format!("outside the attacker's trash (lock is {k:?})"),
            &outside,
            &snap(&w.top, std::slice::from_ref(&t)),
        );
    }
}

/// More variants: a meta.json of 1 GiB (sparse), owned by another uid, a device node, or a
/// symlink. Each makes its entry "damaged": listed as such, never restored, never freed.
#[test]
fn oversized_or_foreign_meta_json_marks_the_entry_damaged() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[ATTACKER]);
    w.dir("r", ROOT, 0o755);
    w.dir("r/etc", ROOT, 0o755);
    w.file("r/etc/conf", ROOT, 0o644, "root's conf\n");
    make(&w.p("r/fifo"), &Node::Fifo, ROOT);
    w.dir("a", ATTACKER, 0o755);
    w.file("a/f0", ATTACKER, 0o644, "f0\n");
    w.reclaim(
        ATTACKER,
        args!["rm", "--background", "--grace", "1h", w.p("a/f0")],
    )
    .ok();
    let t = w.trash(ATTACKER);
    let template = meta_of(&t.join(&entries(&t)[0]));
    // A record naming a path in root's directory, as a forger would write it.
    let etc = fs::metadata(w.p("r/etc")).unwrap();
    let conf2 = w.p("r/etc/conf2");
    let mut forged = template.clone();
    forged["original"] = conf2.to_str().unwrap().into();
    forged["parent_dev"] = etc.dev().into();
    forged["parent_ino"] = etc.ino().into();

    let ids: Vec<String> = (0..4).map(|n| old_id(3, n)).collect();
    for (n, id) in ids.iter().enumerate() {
        let e = forge_entry(&t, id, ATTACKER);
        let mut m = forged.clone();
        m["id"] = id.clone().into();
        // Due now: only being damaged keeps the reaper off it.
        m["grace_until_unix"] = Value::Null;
        let meta = e.join("meta.json");
        match n {
            0 => {
                // 1 GiB, sparse: valid JSON at the start, then zeros.
                write_meta(&e, &m, ATTACKER);
                fs::OpenOptions::new()
                    .write(true)
                    .open(&meta)
                    .unwrap()
                    .set_len(1 << 30)
                    .unwrap();
            }
            1 => write_meta(&e, &m, THIRD),
            2 => make(&meta, &Node::CharDev, ATTACKER),
            _ => make(&meta, &Node::Symlink(w.p("r/fifo")), ATTACKER),
        }
        make(
            &e.join("data"),
            &Node::File(b"planted\n".to_vec()),
            ATTACKER,
        );
    }
    let outside = snap(&w.top, std::slice::from_ref(&t));

    let st = status_json(&w, ROOT);
    for (id, what) in ids.iter().zip([
        "a 1 GiB meta.json",
        "a meta.json owned by another uid",
        "a device node as meta.json",
        "a symlink as meta.json",
    ]) {
        assert_damaged(&st, id, what);
    }
    // Never restored: not by the path it names, not by its id.
    let o = w.reclaim(ROOT, args!["restore", conf2]).output();
    assert_exit(&o, 1, "root restores the path a damaged entry names");
    let o = w.reclaim(ROOT, args!["restore", ids[1]]).output();
    assert_exit(&o, 1, "root restores a damaged entry by id");
    assert!(!conf2.exists(), "a damaged entry was restored");
    // Skipped by the reaper, not freed.
    let out = w
        .reclaim(ROOT, args!["reap", "--once", "--json", "--trash", t])
        .output();
    util::json_object(&out.stdout);
    for id in &ids {
        assert_eq!(
            fs::read(t.join(id).join("data")).ok().as_deref(),
            Some(&b"planted\n"[..]),
            "damaged entry {id} was not skipped: {}",
            util::stderr_of(&out)
        );
    }
    assert_same_snap(
        "outside the attacker's trash",
        &outside,
        &snap(&w.top, std::slice::from_ref(&t)),
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Root's reaper removes exactly what the user could remove.

#[test]
fn root_reaper_removes_only_what_the_user_could() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[ATTACKER]);
    w.dir("proj", ATTACKER, 0o755);
    w.file("proj/own1", ATTACKER, 0o644, "own1\n");
    w.dir("proj/sub", ATTACKER, 0o755);
    w.file("proj/sub/own2", ATTACKER, 0o644, "own2\n");
    // Root put a directory of its own into the user's project; the user cannot empty it.
    w.dir("proj/root-owned", ROOT, 0o755);
    let keep = w.file("proj/root-owned/keep", ROOT, 0o644, "root's, keep me\n");
    let keep_print = print_of(&keep);
    let own_inos: Vec<u64> = ["proj/own1", "proj/sub/own2"]
        .iter()
        .map(|r| fs::symlink_metadata(w.p(r)).unwrap().ino())
        .collect();
    let o = w
        .reclaim(ATTACKER, args!["rm", "-r", "--background", w.p("proj")])
        .output();
    assert_survives(&w.top, &keep_print, "the user's rm --background");
    assert_exit(&o, 0, "the user hides proj");
    assert!(!w.p("proj").exists());
    let t = w.trash(ATTACKER);
    let outside = snap(&w.top, std::slice::from_ref(&t));

    let out = w
        .reclaim(ROOT, args!["reap", "--once", "--json", "--trash", t])
        .output();
    let where_now = assert_survives(&w.top, &keep_print, "root's reaper");
    assert!(where_now.starts_with(&t), "{}", where_now.display());
    assert_exit(&out, 1, "root's reap of what the user cannot remove");
    for ino in own_inos {
        assert!(
            find_ino(&w.top, ino).is_none(),
            "the user's own file {ino} was not freed"
        );
    }
    assert_same_snap(
        "outside the attacker's trash",
        &outside,
        &snap(&w.top, std::slice::from_ref(&t)),
    );
}

/// The attacker renames and swaps entries while root's reaper is busy with an older one: a
/// `data` swapped for a symlink to a root directory, a directory holding root's files moved in
/// as `data`, a subdirectory of the tree being freed swapped for a symlink.
#[test]
fn entries_swapped_while_root_reaps_never_reach_root_files() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[ATTACKER]);
    w.dir("rootdir", ROOT, 0o755);
    w.file("rootdir/x", ROOT, 0o644, "x\n");
    w.dir("rootdir/sub", ROOT, 0o755);
    w.file("rootdir/sub/z", ROOT, 0o644, "z\n");
    w.dir("a", ATTACKER, 0o755);
    // The slow entry: 1000 files freed at 50 a second.
    w.dir("a/slow", ATTACKER, 0o755);
    for d in 0..10 {
        w.dir(format!("a/slow/d{d}"), ATTACKER, 0o755);
        for f in 0..100 {
            w.file(format!("a/slow/d{d}/f{f}"), ATTACKER, 0o644, "");
        }
    }
    for name in ["b", "c"] {
        w.dir(format!("a/{name}"), ATTACKER, 0o755);
        w.file(
            format!("a/{name}/inner"),
            ATTACKER,
            0o644,
            format!("{name}\n"),
        );
    }
    w.dir("proj", ATTACKER, 0o755);
    w.dir("proj/root-owned", ROOT, 0o755);
    let keep = w.file("proj/root-owned/keep", ROOT, 0o644, "root's, keep me\n");
    let keep_print = print_of(&keep);
    w.reclaim(
        ATTACKER,
        args!["rm", "-r", "--background", "--iops", "50", w.p("a/slow")],
    )
    .ok();
    std::thread::sleep(Duration::from_millis(5));
    w.reclaim(
        ATTACKER,
        args!["rm", "-r", "--background", w.p("a/b"), w.p("a/c")],
    )
    .ok();
    let t = w.trash(ATTACKER);
    let slow = t.join(entry_for(&t, &w.p("a/slow")));
    let b = t.join(entry_for(&t, &w.p("a/b")));
    let c = t.join(entry_for(&t, &w.p("a/c")));
    let rootdir = snap(&w.p("rootdir"), &[]);

    let mut reaper = w.reclaim(ROOT, args!["reap", "--trash", t]).spawn();
    wait_for("the slow entry claimed", HANG, || {
        fs::symlink_metadata(slow.join("reaping")).ok()
    });
    // As the attacker (its own trash, its own directories).
    let mv = |from: &Path, to: &Path| w.tool_ok(ATTACKER, "mv", args!["-T", from, to]);
    let ln_s = |target: &Path, at: &Path| w.tool_ok(ATTACKER, "ln", args!["-s", target, at]);
    mv(&b.join("data"), &w.p("a/b-away"));
    ln_s(&w.p("rootdir"), &b.join("data"));
    mv(&c.join("data"), &w.p("a/c-away"));
    mv(&w.p("proj"), &c.join("data"));
    let d9 = slow.join("reaping/d9");
    if d9.exists() {
        mv(&d9, &w.p("a/d9-away"));
        ln_s(&w.p("rootdir"), &d9);
    }
    // (d9-away may still lose files through a descriptor the reaper opened before the move:
    // the attacker's own files, which it could remove itself.)
    let moved = snap(&w.p("a"), &[w.p("a/d9-away")]);

    reaper.finish(Duration::from_secs(120));
    assert_same_snap("root's directory", &rootdir, &snap(&w.p("rootdir"), &[]));
    assert_survives(&w.top, &keep_print, "root's file moved into an entry");
    assert_same_snap(
        "what the attacker moved away",
        &moved,
        &snap(&w.p("a"), &[w.p("a/d9-away")]),
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Restore by path only considers the caller's own entries.

#[test]
fn forged_entry_is_never_restored_by_path() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[ROOT, ATTACKER]);
    w.dir("srv", ROOT, 0o755);
    w.dir("srv/x", ROOT, 0o755);
    w.dir("srv/x/etc", ROOT, 0o755);
    let conf = w.file("srv/x/etc/app.conf", ROOT, 0o600, "root's config\n");
    let etc_before = snap(&w.p("srv"), &[]);
    w.reclaim(ROOT, args!["rm", "--background", "--grace", "1d", conf])
        .ok();
    let rt = w.trash(ROOT);
    let root_meta = meta_of(&rt.join(entry_for(&rt, &conf)));

    w.dir("a", ATTACKER, 0o755);
    w.file("a/evil", ATTACKER, 0o644, "attacker's config\n");
    w.reclaim(
        ATTACKER,
        args!["rm", "--background", "--grace", "1d", w.p("a/evil")],
    )
    .ok();
    let t = w.trash(ATTACKER);
    // The best forgery: root's own record (everything about the parent right), newer ids.
    let e1 = entry_for(&t, &w.p("a/evil"));
    let mut m = root_meta.clone();
    m["id"] = e1.clone().into();
    m["uid"] = ATTACKER.into();
    write_meta(&t.join(&e1), &m, ATTACKER);
    let e2 = future_id(0);
    let d2 = forge_entry(&t, &e2, ATTACKER);
    let mut m = root_meta.clone();
    m["id"] = e2.clone().into();
    write_meta(&d2, &m, ATTACKER); // claims uid 0
    make(
        &d2.join("data"),
        &Node::File(b"attacker's, uid 0\n".to_vec()),
        ATTACKER,
    );
    let e3 = future_id(1);
    let d3 = forge_entry(&t, &e3, ATTACKER);
    let new_conf = w.p("srv/x/etc/new.conf");
    let mut m = root_meta.clone();
    m["id"] = e3.clone().into();
    m["original"] = new_conf.to_str().unwrap().into();
    m["uid"] = ATTACKER.into();
    write_meta(&d3, &m, ATTACKER);
    make(
        &d3.join("data"),
        &Node::File(b"planted\n".to_vec()),
        ATTACKER,
    );

    // By id: root may name another user's entry, and then acts as that user (who cannot
    // write root's directory), or the record and the trash disagree on the owner.
    for id in [&e2, &e1, &e3] {
        let o = w.reclaim(ROOT, args!["restore", id]).output();
        assert_exit(&o, 1, &format!("root restores forged entry {id}"));
        assert!(!conf.exists(), "forged entry {id} was restored as app.conf");
        assert!(!new_conf.exists(), "forged entry {id} planted new.conf");
    }
    // By path: root's own entry, never the attacker's newer ones.
    let o = w.reclaim(ROOT, args!["restore", new_conf]).output();
    assert_exit(&o, 1, "root restores a path only the attacker hid");
    assert!(!new_conf.exists(), "a forged entry planted new.conf");
    w.reclaim(ROOT, args!["restore", conf]).ok();
    assert_same_snap("root's directory", &etc_before, &snap(&w.p("srv"), &[]));
}

/// A batch entry (`prune`'s: many paths of one directory) forged by another user with root's
/// own record of root's directory (its path and lineage right) and a list naming a new name in
/// it: root restoring it by ID acts as that user, who cannot write there; by path, root never
/// looks at another user's entries. Root's own batch restores.
#[test]
fn forged_batch_entry_never_plants_a_file_in_roots_directory() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.dir("srv", ROOT, 0o755);
    w.dir("srv/x", ROOT, 0o755);
    let old = std::time::SystemTime::now() - Duration::from_secs(86_400);
    for n in ["old1", "old2"] {
        let f = w.file(format!("srv/x/{n}"), ROOT, 0o600, format!("root's {n}\n"));
        fs::File::open(&f).unwrap().set_modified(old).unwrap();
    }
    w.file("srv/x/newest", ROOT, 0o600, "root's newest\n");
    w.reclaim(ROOT, args!["prune", "--keep-last", "1", w.p("srv/x")])
        .ok();
    let rt = w.trash(ROOT);
    let root_id = entry_for(&rt, &w.p("srv/x"));
    let root_meta = meta_of(&rt.join(&root_id));
    assert_eq!(root_meta["kind"], "batch");
    let before = snap(&w.p("srv"), &[]);

    w.dir("a", ATTACKER, 0o755);
    w.file("a/x", ATTACKER, 0o644, "x\n");
    w.reclaim(
        ATTACKER,
        args!["rm", "--background", "--grace", "1d", w.p("a/x")],
    )
    .ok();
    let t = w.trash(ATTACKER);
    let id = future_id(7);
    let e = forge_entry(&t, &id, ATTACKER);
    let mut m = root_meta.clone();
    m["id"] = id.clone().into();
    m["uid"] = ATTACKER.into();
    m["held"] = 1.into();
    write_meta(&e, &m, ATTACKER);
    let list = e.join("held.json");
    fs::write(
        &list,
        r#"{"items":[{"slot":0,"name":"planted","kind":"file","files":1}]}"#,
    )
    .unwrap();
    own(&list, ATTACKER);
    chmod(&list, 0o600);
    let data = e.join("data");
    fs::create_dir(&data).unwrap();
    own(&data, ATTACKER);
    chmod(&data, 0o700);
    make(
        &data.join("0"),
        &Node::File(b"attacker's\n".to_vec()),
        ATTACKER,
    );

    let planted = w.p("srv/x/planted");
    let o = w.reclaim(ROOT, args!["restore", id]).output();
    assert_exit(&o, 1, "root restores a forged batch by its ID");
    // As the attacker, who may not write there.
    assert!(
        util::stderr_of(&o).contains("planted' (entry")
            && util::stderr_of(&o).contains("Permission denied"),
        "{}",
        util::stderr_of(&o)
    );
    assert!(
        !planted.exists(),
        "a forged batch planted a file in root's directory"
    );
    let o = w.reclaim(ROOT, args!["restore", planted]).output();
    assert_exit(
        &o,
        1,
        "root restores a path only the attacker's batch names",
    );
    assert!(!planted.exists(), "a forged batch planted a file by path");
    assert_same_snap("root's directory", &before, &snap(&w.p("srv"), &[]));
    // Root's own batch puts its two files back.
    w.reclaim(ROOT, args!["restore", root_id]).ok();
    assert_eq!(fs::read(w.p("srv/x/old1")).unwrap(), b"root's old1\n");
    assert_eq!(fs::read(w.p("srv/x/old2")).unwrap(), b"root's old2\n");
}

// ---------------------------------------------------------------------------------------------
// 4. The original directory is the same one only if its birth time (or generation) matches.

#[test]
fn restore_refuses_a_parent_whose_inode_was_reused() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext4));
    w.old_layout(&[VICTIM]);
    w.dir("shared", ROOT, 0o1777);
    let vd = w.dir("shared/vd", VICTIM, 0o755);
    let f = w.file("shared/vd/f", VICTIM, 0o600, "victim's secret\n");
    let old_ino = fs::metadata(&vd).unwrap().ino();
    w.reclaim(VICTIM, args!["rm", "--background", "--grace", "1h", f])
        .ok();
    let vt = w.trash(VICTIM);
    let id = entry_for(&vt, &f);
    w.tool_ok(VICTIM, "rmdir", args![vd]);
    // The attacker makes `shared/vd` again until ext4 hands out the same inode number.
    let mut reused = false;
    for n in 0..200 {
        w.tool_ok(ATTACKER, "mkdir", args!["-m", "0777", vd]);
        chmod(&vd, 0o777);
        if fs::metadata(&vd).unwrap().ino() == old_ino {
            reused = true;
            break;
        }
        // Keep that inode taken, try again.
        w.tool_ok(
            ATTACKER,
            "mv",
            args!["-T", vd, w.p(format!("shared/pad{n}"))],
        );
    }
    if !reused {
        util::skip!("ext4 did not reuse inode {old_ino}");
    }
    for arg in [f.as_os_str(), OsStr::new(&id)] {
        let o = w.reclaim(VICTIM, args!["restore", arg]).output();
        assert_exit(
            &o,
            1,
            &format!("restore {arg:?} into a directory that was replaced"),
        );
        let err = util::stderr_of(&o);
        assert!(err.contains("is gone or was replaced"), "{err}");
        assert_eq!(
            list(&vd),
            Vec::<OsString>::new(),
            "the secret went into the new vd"
        );
        assert_eq!(
            fs::read(vt.join(&id).join("data")).unwrap(),
            b"victim's secret\n"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 5. State files are never opened for writing if someone else made them first.

#[test]
fn hard_linked_state_file_is_never_overwritten() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let _sysctl = util::or_skip!(util::Sysctl::set("fs/protected_hardlinks", "0")
        .ok_or("cannot set the sysctl fs/protected_hardlinks"));
    w.old_layout(&[ATTACKER]);
    w.dir("r", ROOT, 0o755);
    w.dir("a", ATTACKER, 0o755);
    w.file("a/f", ATTACKER, 0o644, "f\n");
    // An entry that fails (root's directory inside): the reaper records the failure.
    w.dir("a/proj", ATTACKER, 0o755);
    w.dir("a/proj/root-owned", ROOT, 0o755);
    w.file("a/proj/root-owned/keep", ROOT, 0o644, "keep\n");
    w.reclaim(
        ATTACKER,
        args!["rm", "-r", "--background", w.p("a/f"), w.p("a/proj")],
    )
    .ok();
    let t = w.trash(ATTACKER);
    let proj = t.join(entry_for(&t, &w.p("a/proj")));
    // Each name a hard link to a root file of its own, made by the attacker.
    let mut n = 0;
    let mut link = |at: &Path| -> (PathBuf, Print) {
        n += 1;
        let root_file = w.file(
            format!("r/state{n}"),
            ROOT,
            0o644,
            format!("root's file {n}\n"),
        );
        remove_any(at);
        w.tool_ok(ATTACKER, "ln", args![root_file, at]);
        let pr = print_of(&root_file);
        (root_file, pr)
    };
    let check = |prints: &[(PathBuf, Print)], what: &str| {
        for (p, pr) in prints {
            assert_unchanged(p, pr, what);
        }
    };
    // First the names a reaper writes (temporary files, the log), so the trash stays usable
    // and the writes happen.
    let mut prints: Vec<(PathBuf, Print)> = [
        t.join("reaper.json.tmp"),
        t.join("failed.json.tmp"),
        t.join("reaper.log"),
        proj.join("failed.json.tmp"),
    ]
    .iter()
    .map(|at| link(at))
    .collect();
    w.reclaim(ROOT, args!["reap", "--trash", t]).output();
    check(&prints, "root's reap");
    status_json(&w, ROOT);
    let mut watcher = w
        .reclaim(ROOT, args!["reap", "--watch", "--trash", t])
        .spawn();
    std::thread::sleep(Duration::from_secs(3));
    watcher.stop();
    check(&prints, "root's reap --watch");
    // Then the names it reads and replaces, and the lock (the trash may then be refused).
    for (i, at) in [
        t.join("reaper.json"),
        t.join("failed.json"),
        proj.join("failed.json"),
        t.join("lock"),
    ]
    .into_iter()
    .enumerate()
    {
        w.file(format!("a/g{i}"), ATTACKER, 0o644, "g\n");
        w.reclaim(
            ATTACKER,
            args!["rm", "--background", w.p(format!("a/g{i}"))],
        )
        .ok();
        prints.push(link(&at));
        w.reclaim(ROOT, args!["reap", "--once", "--trash", t])
            .output();
        status_json(&w, ROOT);
        check(
            &prints,
            &format!("root's reap with {} hard-linked", at.display()),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 6. A grace window is never silently dropped.

#[test]
fn squatted_trash_name_does_not_drop_the_grace_window() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    // Squatted by the attacker before the victim ever hid anything: the old shared parent
    // (with the victim's name in it pointing elsewhere), a decoy with a trash-like suffix.
    w.dir("adir", ATTACKER, 0o777);
    w.dir("adir2", ATTACKER, 0o777);
    w.dir(".reclaim", ATTACKER, 0o700);
    make(
        &w.p(format!(".reclaim/{VICTIM}")),
        &Node::Symlink(w.p("adir2")),
        ATTACKER,
    );
    w.dir(format!(".reclaim-{VICTIM}.00000000"), ATTACKER, 0o700);
    w.dir("v", VICTIM, 0o755);
    let squat = w.p(format!(".reclaim-{VICTIM}"));
    let cases: [(&str, Node, u32, u32); 5] = [
        ("a symlink", Node::Symlink(w.p("adir")), ATTACKER, 0),
        (
            "a regular file",
            Node::File(b"squat\n".to_vec()),
            ATTACKER,
            0o644,
        ),
        ("another user's directory", Node::Dir, ATTACKER, 0o700),
        ("a FIFO", Node::Fifo, ATTACKER, 0o644),
        (
            "the user's directory, open to others",
            Node::Dir,
            VICTIM,
            0o777,
        ),
    ];
    for (i, (what, node, owner, mode)) in cases.iter().enumerate() {
        remove_any(&squat);
        if let Some(old) = find_trash(&w.top, VICTIM) {
            remove_any(&old);
        }
        make(&squat, node, *owner);
        if *mode != 0 {
            chmod(&squat, *mode);
        }
        let squatted = snap(&w.top, &[w.p("v")]);
        let f = w.file(format!("v/f{i}"), VICTIM, 0o644, format!("victim's {i}\n"));
        let o = w
            .reclaim(VICTIM, args!["rm", "--background", "--grace", "1h", f])
            .output();
        assert_exit(&o, 0, &format!("{what}: rm --background --grace"));
        assert!(!f.exists(), "{what}: not hidden");
        let t = find_trash(&w.top, VICTIM).unwrap_or_else(|| {
            panic!("{what}: the victim has no trash: the file is gone for good")
        });
        assert_ne!(t, squat, "{what}");
        let id = entry_for(&t, &f);
        assert_eq!(
            fs::read(t.join(&id).join("data")).unwrap(),
            format!("victim's {i}\n").as_bytes(),
            "{what}"
        );
        w.reclaim(VICTIM, args!["restore", f]).ok();
        assert_eq!(
            fs::read(&f).unwrap(),
            format!("victim's {i}\n").as_bytes(),
            "{what}"
        );
        assert_same_snap(
            &format!("{what}: the squatted names"),
            &squatted,
            &snap(&w.top, &[w.p("v"), t.clone()]),
        );
    }
}

/// Where no trash can take the target (the file system is full), `--grace` refuses instead of
/// removing it now; without `--grace` the foreground fallback stays.
#[test]
fn grace_that_cannot_be_honoured_refuses_the_removal() {
    let w = util::or_skip!(World::new(scratch!(), Vol::TinyTmpfs));
    w.dir("v", VICTIM, 0o755);
    let f = w.file("v/f", VICTIM, 0o644, "victim's file\n");
    let f_print = print_of(&f);
    // Fill the blocks, then the inodes.
    {
        let mut filler = fs::File::create(w.p("filler")).unwrap();
        let chunk = vec![1u8; 4096];
        while filler.write_all(&chunk).is_ok() {}
        while filler.write_all(&[1u8]).is_ok() {}
    }
    for n in 0.. {
        if fs::File::create(w.p(format!("inode{n}"))).is_err() {
            break;
        }
    }
    let o = w
        .reclaim(VICTIM, args!["rm", "--background", "--grace", "1h", f])
        .output();
    assert_exit(&o, 1, "rm --background --grace on a full file system");
    assert_unchanged(&f, &f_print, "the target of a refused removal");
    let lines = stderr_lines(&o);
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(lines[0].contains(f.to_str().unwrap()), "{lines:?}");
    // Without a grace window: removed now, with a note.
    let o = w.reclaim(VICTIM, args!["rm", "--background", f]).output();
    assert_exit(&o, 0, "rm --background (no grace) on a full file system");
    assert!(!f.exists(), "not removed in the foreground");
    let lines = stderr_lines(&o);
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
}

// ---------------------------------------------------------------------------------------------
// 7, 8. Hidden shrink names: never blocked, and nobody else's touched.

#[test]
fn pre_created_shrink_name_does_not_block_removal() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext3));
    w.old_layout(&[VICTIM]);
    let big = written(&w, "big", 96 * MIB, VICTIM);
    let squat = w.file(
        format!(".reclaim-shrink.{:x}", big.ino),
        ATTACKER,
        0o644,
        "attacker's\n",
    );
    let squat_print = print_of(&squat);
    let before = without(snap_outside_trashes(&w.top), "big");
    let free0 = util::free_bytes(&w.top);
    let o = w
        .reclaim(VICTIM, args!["rm", w.p("big")])
        .output_within(Duration::from_secs(120));
    assert_exit(
        &o,
        0,
        "rm of a big file whose hidden name another user took",
    );
    assert!(!w.p("big").exists());
    assert_unchanged(&squat, &squat_print, "the attacker's file");
    assert_eq!(
        shrink_names(&w.top),
        vec![squat.file_name().unwrap().to_owned()]
    );
    wait_for("the space back (a journal commit)", HANG, || {
        (util::free_bytes(&w.top) + MIB >= free0 + big.allocated).then_some(())
    });
    if let Some(t) = find_trash(&w.top, VICTIM) {
        assert_eq!(entries(&t), Vec::<String>::new(), "left in the trash");
    }
    assert_same_snap("the volume", &before, &snap_outside_trashes(&w.top));
}

#[test]
fn foreign_shrink_leftovers_are_left_alone() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext3));
    w.old_layout(&[ROOT, VICTIM]);
    written(&w, "rbig", 96 * MIB, ROOT);
    written(&w, "vbig", 96 * MIB, VICTIM);
    w.file(
        ".reclaim-shrink.1234",
        ATTACKER,
        0o644,
        "attacker's notes\n",
    );
    w.file(
        ".reclaim-shrink.5678",
        ROOT,
        0o644,
        "root's, not reclaim's\n",
    );
    // The victim's own big file under a name that looks like a leftover of reclaim's (its own
    // inode, as the old naming had it), which reclaim did not make.
    let own = written(&w, "own", 70 * MIB, VICTIM);
    fs::rename(w.p("own"), w.p(format!(".reclaim-shrink.{:x}", own.ino))).unwrap();
    let before = snap_outside_trashes(&w.top);
    let o = w
        .reclaim(ROOT, args!["rm", "-v", w.p("rbig")])
        .output_within(Duration::from_secs(120));
    assert_same_snap(
        "the volume after root's rm",
        &without(before.clone(), "rbig"),
        &snap_outside_trashes(&w.top),
    );
    assert_exit(&o, 0, "root's rm of a big file");
    let said = format!("{}{}", util::stdout_of(&o), util::stderr_of(&o));
    assert!(
        !said.contains(".reclaim-shrink"),
        "root's rm -v names other shrink names:\n{said}"
    );
    let o = w
        .reclaim(VICTIM, args!["rm", "-v", w.p("vbig")])
        .output_within(Duration::from_secs(120));
    assert_same_snap(
        "the volume after the victim's rm",
        &without(without(before, "rbig"), "vbig"),
        &snap_outside_trashes(&w.top),
    );
    assert_exit(&o, 0, "the victim's rm of a big file");
    let said = format!("{}{}", util::stdout_of(&o), util::stderr_of(&o));
    assert!(
        !said.contains(".reclaim-shrink"),
        "the victim's rm -v names other shrink names:\n{said}"
    );
}

// ---------------------------------------------------------------------------------------------
// 9. Interruptions stop at a consistent point, say so, and leave nothing stranded.

#[test]
fn sigint_during_foreground_shrink_hands_the_rest_to_the_trash() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext3));
    w.old_layout(&[VICTIM]);
    w.file("neighbour", ROOT, 0o644, "stays\n");
    for (round, spawn) in [("no reaper started", false), ("its reaper", true)] {
        let free0 = util::free_bytes(&w.top);
        let before = snap_outside_trashes(&w.top);
        let big = written(&w, "big", 96 * MIB, VICTIM);
        let path = w.p("big");
        let mut run = w.reclaim(VICTIM, args!["rm", "--rate", "8M", path]);
        if spawn {
            run = run.spawning();
        }
        let mut p = run.spawn();
        wait_shrinking(&w, &mut p, &big);
        p.signal(libc::SIGINT);
        let o = p.finish(HANG);
        assert_exit(&o, 130, &format!("{round}: SIGINT during a shrink"));
        assert_eq!(
            interrupted_lines(&o).len(),
            1,
            "{round}: {}",
            util::stderr_of(&o)
        );
        assert_eq!(shrink_names(&w.top), Vec::<OsString>::new(), "{round}");
        let t = w.trash(VICTIM);
        if !spawn {
            let (at, _) = find_ino(&w.top, big.ino).expect("the rest of the file");
            assert!(
                at.starts_with(&t),
                "{round}: the rest is at {}",
                at.display()
            );
            let st = status_json(&w, VICTIM);
            let items = trash_in(&st, &t)
                .and_then(|x| x["items"].as_array().cloned())
                .unwrap_or_default();
            assert!(
                items
                    .iter()
                    .any(|i| i["original"] == path.to_str().unwrap() && i["state"] == "reaping"),
                "{round}: status does not list the interrupted shrink: {st}"
            );
            w.reclaim(VICTIM, args!["reap", "--trash", t])
                .output_within(Duration::from_secs(120));
        }
        wait_for(
            &format!("{round}: the rest freed"),
            Duration::from_secs(120),
            || (entries(&t).is_empty() && util::free_bytes(&w.top) + MIB >= free0).then_some(()),
        );
        assert!(
            find_ino(&w.top, big.ino).is_none_or(|(_, m)| m.len() <= MIB),
            "{round}: the big file is still there"
        );
        assert_same_snap(round, &before, &snap_outside_trashes(&w.top));
    }
}

/// `kill -9` during a foreground shrink, then the same command again: it finds what is left
/// in the trash and finishes it.
#[test]
fn rerun_after_kill_9_during_shrink_finishes_it() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext3));
    w.old_layout(&[VICTIM]);
    let before = snap_outside_trashes(&w.top);
    let free0 = util::free_bytes(&w.top);
    let big = written(&w, "big", 96 * MIB, VICTIM);
    let mut p = w
        .reclaim(VICTIM, args!["rm", "--rate", "8M", w.p("big")])
        .spawn();
    wait_shrinking(&w, &mut p, &big);
    p.signal(libc::SIGKILL);
    p.finish(HANG);
    let o = w
        .reclaim(VICTIM, args!["rm", w.p("big")])
        .output_within(Duration::from_secs(120));
    assert_exit(&o, 0, "rm again after kill -9");
    assert!(
        find_ino(&w.top, big.ino).is_none_or(|(_, m)| m.len() <= MIB),
        "the big file is still there"
    );
    wait_for("the space back (a journal commit)", HANG, || {
        (util::free_bytes(&w.top) + MIB >= free0).then_some(())
    });
    assert_eq!(shrink_names(&w.top), Vec::<OsString>::new());
    if let Some(t) = find_trash(&w.top, VICTIM) {
        assert_eq!(entries(&t), Vec::<String>::new(), "left in the trash");
    }
    assert_same_snap("the volume", &before, &snap_outside_trashes(&w.top));
}

#[test]
fn sigint_during_wait_leaves_entries_to_a_reaper() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[VICTIM]);
    w.file("neighbour", ROOT, 0o644, "stays\n");
    let before = snap_outside_trashes(&w.top);
    w.dir("tree", VICTIM, 0o755);
    for d in 0..8 {
        w.dir(format!("tree/d{d}"), VICTIM, 0o755);
        for f in 0..100 {
            w.file(format!("tree/d{d}/f{f}"), VICTIM, 0o644, "f\n");
        }
    }
    let mut p = w
        .reclaim(
            VICTIM,
            args!["rm", "-r", "--wait", "--iops", "100", w.p("tree")],
        )
        .spawning()
        .spawn();
    let t = wait_for("the trash", HANG, || find_new_trash(&w.top, VICTIM));
    wait_for("the entry being freed", HANG, || {
        let e = entries(&t).into_iter().next()?;
        let reaping = t.join(e).join("reaping");
        (reaping.exists() && count_files(&reaping) < 800).then_some(())
    });
    p.signal(libc::SIGINT);
    let o = p.finish(HANG);
    assert_exit(&o, 130, "SIGINT during --wait");
    assert_eq!(interrupted_lines(&o).len(), 1, "{}", util::stderr_of(&o));
    assert!(!w.p("tree").exists());
    wait_for(
        "a reaper to free the interrupted entry",
        Duration::from_secs(60),
        || entries(&t).is_empty().then_some(()),
    );
    assert_same_snap("the volume", &before, &snap_outside_trashes(&w.top));
}

#[test]
fn sigint_during_rm_r_reports_and_exits_130() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    for (name, sig, code) in [
        ("SIGINT", libc::SIGINT, 130),
        ("SIGTERM", libc::SIGTERM, 143),
        ("SIGHUP", libc::SIGHUP, 129),
    ] {
        let tree = w.dir(name, ROOT, 0o755);
        for d in 0..5 {
            w.dir(format!("{name}/d{d}"), ROOT, 0o755);
            for f in 0..200 {
                w.file(format!("{name}/d{d}/f{f}"), ROOT, 0o644, "f\n");
            }
        }
        let mut p = w
            .reclaim(ROOT, args!["rm", "-r", "--iops", "200", tree])
            .spawn();
        wait_for(&format!("{name}: a first removal"), HANG, || {
            (count_files(&tree) < 1000).then_some(())
        });
        p.signal(sig);
        let o = p.finish(HANG);
        assert_exit(&o, code, &format!("{name} during rm -r"));
        assert_eq!(
            interrupted_lines(&o).len(),
            1,
            "{name}: {}",
            util::stderr_of(&o)
        );
        // A consistent point: what is left is whole.
        for (k, v) in snap(&tree, &[]) {
            if v.starts_with("file") {
                assert!(v.ends_with("\"f\\n\""), "{name}: {} is {v}", k.display());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 10. An entry that cannot be freed is shown as failed, by its inner path, and retried slowly.

#[test]
fn stuck_entry_is_reported_with_inner_path_and_backs_off() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[VICTIM]);
    let proj = w.dir("proj", VICTIM, 0o755);
    w.file("proj/own", VICTIM, 0o644, "own\n");
    w.dir("proj/imm", VICTIM, 0o755);
    let imm = w.file("proj/imm/file", VICTIM, 0o644, "immutable\n");
    w.dir("proj/root-owned", ROOT, 0o755);
    let keep = w.file("proj/root-owned/keep", ROOT, 0o644, "root's\n");
    let keep_print = print_of(&keep);
    let _unfreeze = util::or_skip!(chattr_i(&imm, &w.top));
    w.reclaim(VICTIM, args!["rm", "-r", "--background", proj])
        .ok();
    assert!(!proj.exists());
    let t = w.trash(VICTIM);
    let p_keep = format!("{}/root-owned/keep", proj.display());
    let p_imm = format!("{}/imm/file", proj.display());

    let o = w.reclaim(VICTIM, args!["reap", "--trash", t]).output();
    assert_exit(&o, 1, "reap of a stuck entry");
    let err = util::stderr_of(&o);
    assert!(err.contains(&p_keep), "reap does not name {p_keep}:\n{err}");

    let failure = |st: &Value| -> Value {
        let items = trash_in(st, &t)
            .and_then(|x| x["items"].as_array().cloned())
            .unwrap_or_default();
        let i = items
            .into_iter()
            .find(|i| i["original"] == proj.to_str().unwrap())
            .unwrap_or_else(|| panic!("status does not list the stuck entry: {st}"));
        assert_eq!(i["state"], "failed", "{i}");
        i["failure"].clone()
    };
    let f = failure(&status_json(&w, VICTIM));
    let attempts0 = f["attempts"]
        .as_u64()
        .unwrap_or_else(|| panic!("attempts: {f}"));
    assert!(attempts0 >= 1, "{f}");
    let next = f["next_attempt_unix"]
        .as_f64()
        .unwrap_or_else(|| panic!("next_attempt_unix: {f}"));
    let now = now_unix();
    assert!(now - 60.0 < next && next < now + 30.0 * 86_400.0, "{f}");
    let errors = f["errors"].as_array().cloned().unwrap_or_default();
    for (p, why) in [
        (&p_keep, "Permission denied"),
        (&p_imm, "Operation not permitted"),
    ] {
        assert!(
            errors
                .iter()
                .any(|e| e["path"] == p.as_str()
                    && e["error"].as_str().is_some_and(|x| x.contains(why))),
            "no error {p}: {why} in {f}"
        );
    }
    let human = util::stdout_of(&w.reclaim(VICTIM, args!["status"]).ok());
    assert!(!human.contains("frees it"), "{human}");

    // Backs off: over 8 s, a few attempts at most, each logged once.
    let mut watcher = w
        .reclaim(VICTIM, args!["reap", "--watch", "--trash", t])
        .spawn();
    std::thread::sleep(Duration::from_secs(8));
    let out = watcher.stop();
    let attempts1 = failure(&status_json(&w, VICTIM))["attempts"]
        .as_u64()
        .unwrap();
    let logged = util::stderr_of(&out)
        .lines()
        .filter(|l| l.contains("root-owned/keep"))
        .count() as u64;
    let delta = attempts1.saturating_sub(attempts0);
    assert!(delta <= 4, "{delta} attempts in 8 s: no back-off");
    assert!(
        logged <= delta + 1,
        "{logged} log lines for {delta} attempts:\n{}",
        util::stderr_of(&out)
    );
    assert_survives(&w.top, &keep_print, "root's file in the stuck entry");
}

// ---------------------------------------------------------------------------------------------
// 11. The smaller ones.

#[test]
fn out_of_range_durations_are_usage_errors() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    const D: &str = "99999999999999999999d";
    const S: &str = "99999999999999999999T";
    let f = w.file("f", ROOT, 0o644, "f\n");
    w.dir("p", ROOT, 0o755);
    w.file("p/a", ROOT, 0o644, "a\n");
    w.file("p/b", ROOT, 0o644, "b\n");
    let before = snap_outside_trashes(&w.top);
    let cfg = |name: &str, body: &str| {
        let p = w.s.path(format!("home/{name}.toml"));
        fs::write(&p, body).unwrap();
        p
    };
    let no_trash = w.p("no-trash");
    type Case = (
        &'static str,
        Vec<OsString>,
        Option<(&'static str, OsString)>,
    );
    let cases: Vec<Case> = vec![
        (
            "--grace",
            args!["rm", "--background", "--grace", D, f],
            None,
        ),
        ("--max-latency", args!["rm", "--max-latency", D, f], None),
        ("--rate", args!["rm", "--rate", S, f], None),
        (
            "prune --older-than",
            args!["prune", "--older-than", D, w.p("p")],
            None,
        ),
        (
            "reap --max-latency",
            args!["reap", "--once", "--trash", no_trash, "--max-latency", D],
            None,
        ),
        (
            "config grace",
            args!["rm", "--background", f],
            Some((
                "RECLAIM_CONFIG",
                cfg("grace", &format!("[rm]\ngrace = \"{D}\"\n")).into(),
            )),
        ),
        (
            "config max_latency",
            args!["rm", f],
            Some((
                "RECLAIM_CONFIG",
                cfg("lat", &format!("[rm]\nmax_latency = \"{D}\"\n")).into(),
            )),
        ),
        (
            "config rate",
            args!["rm", f],
            Some((
                "RECLAIM_CONFIG",
                cfg("rate", &format!("[rm]\nrate = \"{S}\"\n")).into(),
            )),
        ),
        (
            "RECLAIM_MAX_LATENCY",
            args!["rm", f],
            Some(("RECLAIM_MAX_LATENCY", D.into())),
        ),
        (
            "RECLAIM_RATE",
            args!["rm", f],
            Some(("RECLAIM_RATE", S.into())),
        ),
    ];
    for (what, a, env) in cases {
        let mut r = w.reclaim(ROOT, a);
        if let Some((k, v)) = &env {
            r = r.env(k, v);
        }
        let o = r.output();
        assert_exit(&o, 2, what);
        let err = util::stderr_of(&o);
        assert!(!err.contains("panicked"), "{what}: {err}");
        let lines: Vec<String> = stderr_lines(&o)
            .into_iter()
            .filter(|l| !l.starts_with("For more information"))
            .collect();
        assert_eq!(lines.len(), 1, "{what}: one line, not {lines:?}");
        assert_same_snap(what, &before, &snap_outside_trashes(&w.top));
    }
}

#[test]
fn zero_iops_from_config_or_environment_is_a_usage_error() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let f = w.file("f", ROOT, 0o644, "f\n");
    let cfg = w.s.path("home/iops.toml");
    fs::write(&cfg, "[rm]\niops = 0\n").unwrap();
    for (what, r) in [
        ("--iops 0", w.reclaim(ROOT, args!["rm", "--iops", "0", f])),
        (
            "config iops = 0",
            w.reclaim(ROOT, args!["rm", f]).env("RECLAIM_CONFIG", &cfg),
        ),
        (
            "RECLAIM_IOPS=0",
            w.reclaim(ROOT, args!["rm", f]).env("RECLAIM_IOPS", "0"),
        ),
    ] {
        let o = r.output();
        assert_exit(&o, 2, what);
        assert_eq!(fs::read(&f).unwrap(), b"f\n", "{what} removed the file");
    }
}

/// `{"error": ...}` or `{"errors": [...]}`, not empty.
#[track_caller]
fn assert_json_failure(o: &Output, what: &str) -> Value {
    assert_ne!(o.status.code(), Some(0), "{what}: succeeded");
    let v = util::json_object(&o.stdout);
    let has_error = v["error"].as_str().is_some_and(|e| !e.is_empty())
        || v["errors"].as_array().is_some_and(|a| !a.is_empty());
    assert!(has_error, "{what}: no error in {v}");
    v
}

#[test]
fn json_output_stays_one_object_on_failure() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[VICTIM]);
    w.dir("not-a-trash", ROOT, 0o700);
    let o = w
        .reclaim(ROOT, args!["reap", "--json", "--trash", w.p("not-a-trash")])
        .output();
    assert_json_failure(&o, "reap --json of a directory that is no trash");
    let o = w
        .reclaim(ROOT, args!["reap", "--json", "--trash", w.p("missing")])
        .output();
    assert_json_failure(&o, "reap --json of a missing trash");
    // An entry that cannot be freed.
    w.dir("proj", VICTIM, 0o755);
    w.dir("proj/root-owned", ROOT, 0o755);
    w.file("proj/root-owned/keep", ROOT, 0o644, "keep\n");
    w.reclaim(VICTIM, args!["rm", "-r", "--background", w.p("proj")])
        .ok();
    let t = w.trash(VICTIM);
    let o = w
        .reclaim(VICTIM, args!["reap", "--json", "--trash", t])
        .output();
    assert_json_failure(&o, "reap --json of a stuck entry");
    // prune: a plan that would remove everything is refused; a directory that is missing.
    w.dir("q", ROOT, 0o755);
    w.file("q/a", ROOT, 0o644, "a\n");
    w.file("q/b", ROOT, 0o644, "b\n");
    let q = snap(&w.p("q"), &[]);
    let o = w
        .reclaim(ROOT, args!["prune", "--json", "--keep-last", "0", w.p("q")])
        .output();
    assert_json_failure(&o, "prune --json of a plan that empties the directory");
    assert_same_snap("q", &q, &snap(&w.p("q"), &[]));
    let o = w
        .reclaim(
            ROOT,
            args!["prune", "--json", "--keep-last", "1", w.p("missing")],
        )
        .output();
    assert_json_failure(&o, "prune --json of a missing directory");
}

#[test]
fn waiting_reaper_holds_nothing_on_the_mount() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[VICTIM]);
    w.dir("v", VICTIM, 0o755);
    let f = w.file("v/f", VICTIM, 0o644, "f\n");
    // From inside the volume: the reaper must not keep this as its cwd either.
    w.reclaim(VICTIM, args!["rm", "--background", "--grace", "1h", f])
        .cwd(&w.top)
        .spawning()
        .ok();
    let t = w.trash(VICTIM);
    let pid = wait_for("status showing a waiting reaper", HANG, || {
        let st = status_json(&w, VICTIM);
        let r = trash_in(&st, &t)?["reaper"].clone();
        (r["state"] == "waiting").then(|| r["pid"].as_u64())?
    });
    let _end = KillOnDrop(pid as i32);
    let dev = fs::metadata(&w.top).unwrap().dev();
    let on_vol = |p: PathBuf| fs::metadata(&p).is_ok_and(|m| m.dev() == dev);
    let base = PathBuf::from(format!("/proc/{pid}"));
    let mut held: Vec<String> = Vec::new();
    for name in ["cwd", "root"] {
        if on_vol(base.join(name)) {
            held.push(format!(
                "{name} -> {:?}",
                fs::read_link(base.join(name)).ok()
            ));
        }
    }
    for e in fs::read_dir(base.join("fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if on_vol(e.path()) {
            held.push(format!(
                "fd {:?} -> {:?}",
                e.file_name(),
                fs::read_link(e.path()).ok()
            ));
        }
    }
    assert!(held.is_empty(), "the waiting reaper {pid} holds {held:?}");
    let o = Command::new("umount").arg(&w.top).output().unwrap();
    assert!(
        o.status.success(),
        "umount while the reaper waits: {}",
        util::stderr_of(&o)
    );
}

#[test]
fn user_recorded_sizes_never_overflow_status() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[ATTACKER]);
    w.dir("a", ATTACKER, 0o755);
    w.dir("a/d0", ATTACKER, 0o755);
    w.dir("backups", ROOT, 0o755);
    w.file("backups/b1", ROOT, 0o644, "b1\n");
    w.file("backups/b2", ROOT, 0o644, "b2\n");
    w.reclaim(
        ATTACKER,
        args!["rm", "-r", "--background", "--grace", "1h", w.p("a/d0")],
    )
    .ok();
    let t = w.trash(ATTACKER);
    let template = meta_of(&t.join(&entries(&t)[0]));
    for (n, (alloc, files)) in [(u64::MAX, u64::MAX), (4, 2), (u64::MAX - 1, 7)]
        .into_iter()
        .enumerate()
    {
        let id = old_id(4, n as u32);
        let e = forge_entry(&t, &id, ATTACKER);
        let mut m = template.clone();
        m["id"] = id.clone().into();
        m["kind"] = "dir".into();
        m["allocated"] = alloc.into();
        m["files"] = files.into();
        write_meta(&e, &m, ATTACKER);
        make(&e.join("data"), &Node::Dir, ATTACKER);
    }
    for who in [ROOT, ATTACKER] {
        let st = status_json(&w, who);
        let tr = trash_in(&st, &t).unwrap_or_else(|| panic!("no attacker trash: {st}"));
        let items = tr["items"].as_array().cloned().unwrap_or_default();
        for (k, field) in [("pending_bytes", "allocated"), ("pending_files", "files")] {
            let v = tr[k]
                .as_u64()
                .unwrap_or_else(|| panic!("{k} is not a count: {tr}"));
            let listed: Vec<u64> = items.iter().filter_map(|i| i[field].as_u64()).collect();
            let sum = listed.iter().copied().fold(0u64, u64::saturating_add);
            assert_eq!(v, sum, "{k} is not the (saturated) sum of the items: {tr}");
            let max = listed.iter().copied().max().unwrap_or(0);
            assert!(v >= max, "{k} wrapped: {tr}");
        }
        let human = util::stdout_of(&w.reclaim(who, args!["status"]).ok());
        assert!(!human.contains(" 3 B pending"), "{human}");
    }
    w.reclaim(
        ROOT,
        args![
            "prune",
            "--dry-run",
            "--keep-free",
            "1%",
            "--keep-last",
            "1",
            w.p("backups")
        ],
    )
    .ok();
}

#[test]
fn odd_names_are_quoted_like_gnu_rm() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.old_layout(&[ROOT]);
    let names: [&[u8]; 3] = [b"a\nb", b"\xff", b"it's"];
    for n in names {
        w.file(OsStr::from_bytes(n), ROOT, 0o644, "x\n");
    }
    let mut a = args!["rm", "-v", "--"];
    a.extend(names.iter().map(|n| OsString::from_vec(n.to_vec())));
    let o = w.reclaim(ROOT, a).cwd(&w.top).ok();
    let said = format!("{}{}", util::stdout_of(&o), util::stderr_of(&o));
    let lines: Vec<&str> = said.lines().collect();
    for want in [
        "removed 'a'$'\\n''b'",
        "removed ''$'\\377'",
        "removed \"it's\"",
    ] {
        assert!(lines.contains(&want), "no line {want:?} in:\n{said}");
    }
    let o = w
        .reclaim(ROOT, vec![OsString::from("rm"), OsString::from("gone\nx")])
        .cwd(&w.top)
        .output();
    assert_exit(&o, 1, "rm of a missing name with a newline");
    assert_eq!(
        stderr_lines(&o),
        ["reclaim: cannot remove 'gone'$'\\n''x': No such file or directory"]
    );

    // Hidden: JSON keeps the exact bytes, status quotes them.
    w.file("c\nd", ROOT, 0o644, "cd\n");
    w.file(OsStr::from_bytes(b"\xfe"), ROOT, 0o644, "fe\n");
    let o = w
        .reclaim(
            ROOT,
            vec![
                "rm".into(),
                "--background".into(),
                "--grace".into(),
                "1h".into(),
                "--json".into(),
                "--".into(),
                "c\nd".into(),
                OsString::from_vec(b"\xfe".to_vec()),
            ],
        )
        .cwd(&w.top)
        .ok();
    let v = util::json_object(&o.stdout);
    let hidden = v["hidden"].as_array().cloned().unwrap_or_default();
    assert_eq!(hidden.len(), 2, "{v}");
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    assert!(
        hidden[1]["path_hex"]
            .as_str()
            .is_some_and(|h| h.ends_with("fe")),
        "no path_hex for a name that is not UTF-8: {v}"
    );
    assert!(hidden[0].get("path_hex").is_none_or(Value::is_null), "{v}");
    let top = w.top.to_str().unwrap();
    let st = status_json(&w, ROOT);
    let rt = w.trash(ROOT);
    let items = trash_in(&st, &rt)
        .and_then(|x| x["items"].as_array().cloned())
        .unwrap_or_default();
    let fe_path = [w.top.as_os_str().as_bytes(), b"/\xfe"].concat();
    assert!(
        items.iter().any(|i| i["original_hex"] == hex(&fe_path)),
        "no original_hex for the \\xfe entry: {st}"
    );
    let cd = format!("{top}/c\nd");
    assert!(
        items
            .iter()
            .any(|i| i["original"] == cd.as_str()
                && i.get("original_hex").is_none_or(Value::is_null)),
        "the c\\nd entry: {st}"
    );
    let human = util::stdout_of(&w.reclaim(ROOT, args!["status"]).ok());
    for want in [format!("'{top}/c'$'\\n''d'"), format!("'{top}/'$'\\376'")] {
        assert!(human.contains(&want), "status lacks {want}:\n{human}");
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 20 (trust boundaries, round 3): decoys, a careless root, shared group directories. Each
// test below reproduces one finding of issue 20 and failed on the code before its fix.

/// Finding 1: `reclaim man DIR` as root, into a directory a user can write, where that user
/// planted a symlink to a root file, a FIFO and a hard link to another root file under page
/// names: root's files are untouched, nothing hangs, every page is a fresh file of root's.
#[test]
fn man_pages_never_write_through_planted_names() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let hardlinks = util::Sysctl::set("fs/protected_hardlinks", "0");
    w.dir("r", ROOT, 0o755);
    let conf = w.file("r/some.conf", ROOT, 0o644, "root's configuration\n");
    let other = w.file("r/other.conf", ROOT, 0o644, "root's other file\n");
    let (conf_print, other_print) = (print_of(&conf), print_of(&other));
    let dir = w.dir("man", ATTACKER, 0o755);
    w.tool_ok(ATTACKER, "ln", args!["-s", conf, dir.join("reclaim-rm.1")]);
    w.tool_ok(ATTACKER, "mkfifo", args![dir.join("reclaim-scan.1")]);
    if hardlinks.is_some() {
        w.tool_ok(ATTACKER, "ln", args![other, dir.join("reclaim-status.1")]);
    } else {
        util::skipped(
            util::test_name!(),
            "the hard link part: no fs.protected_hardlinks=0",
        );
    }
    let o = w
        .reclaim(ROOT, args!["man", dir])
        .output_within(Duration::from_secs(20));
    assert_unchanged(&conf, &conf_print, "root's file behind a planted symlink");
    assert_unchanged(
        &other,
        &other_print,
        "root's file behind a planted hard link",
    );
    assert_exit(
        &o,
        0,
        "root's `reclaim man` into a directory with planted names",
    );
    for page in [
        "reclaim.1",
        "reclaim-rm.1",
        "reclaim-scan.1",
        "reclaim-status.1",
    ] {
        let p = dir.join(page);
        let m = fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(
            m.is_file() && m.uid() == ROOT && m.nlink() == 1,
            "{} is not a fresh file of root's: {m:?}",
            p.display()
        );
        let text = fs::read_to_string(&p).unwrap();
        assert!(
            text.contains(".SH NAME"),
            "{} is not a man page",
            p.display()
        );
    }
    let odd: Vec<OsString> = list(&dir)
        .into_iter()
        .filter(|n| !n.as_bytes().ends_with(b".1"))
        .collect();
    assert!(odd.is_empty(), "left behind in {}: {odd:?}", dir.display());
}

/// Finding 5: root with a user's HOME (`sudo -E`, `su` without `-`). The user planted a
/// symlink to a root file where root writes its trash registry's temporary file, then FIFOs
/// where root reads the registry and the configuration: root's file is untouched, nothing
/// hangs, and root says once that it does not use that HOME.
#[test]
fn root_with_a_users_home_reads_and_writes_nothing_there() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext4));
    w.dir("r", ROOT, 0o755);
    let target = w.file("r/target", ROOT, 0o644, "root's file\n");
    let target_print = print_of(&target);
    w.dir("sub", ROOT, 0o755);
    w.file("sub/f", ROOT, 0o644, "root's file to remove\n");
    // Root's trash cannot be at the top: it goes below, and is registered in the state
    // directory of the HOME it was given.
    let _frozen = util::or_skip!(chattr_i(&w.top, &w.top));
    let home = w.home(ATTACKER);
    let state = home.join(".local/state/reclaim");
    w.tool_ok(ATTACKER, "mkdir", args!["-p", state]);
    w.tool_ok(
        ATTACKER,
        "ln",
        args!["-s", target, state.join("trashes.tmp")],
    );
    let careless = |args: Vec<OsString>| {
        w.reclaim(ROOT, args)
            .env("HOME", &home)
            .unset("XDG_STATE_HOME")
            .unset("RECLAIM_CONFIG")
    };
    let said = |o: &Output| {
        stderr_lines(o)
            .iter()
            .filter(|l| l.contains(&*home.to_string_lossy()))
            .count()
    };
    let o = careless(args!["rm", "--background", w.p("sub/f")]).output();
    assert_unchanged(&target, &target_print, "root's file behind trashes.tmp");
    assert_exit(&o, 0, "root's rm --background with the attacker's HOME");
    assert!(!w.p("sub/f").exists());
    assert_eq!(said(&o), 1, "said once: {}", util::stderr_of(&o));
    // The registry, then the configuration, a FIFO.
    w.tool_ok(ATTACKER, "mkfifo", args![state.join("trashes")]);
    let o = careless(args!["status"]).output_within(Duration::from_secs(20));
    assert_exit(&o, 0, "root's status with a FIFO for a registry");
    assert_eq!(said(&o), 1, "said once: {}", util::stderr_of(&o));
    w.tool_ok(ATTACKER, "mkdir", args!["-p", home.join(".config")]);
    w.tool_ok(ATTACKER, "mkfifo", args![home.join(".config/reclaim.toml")]);
    let o = careless(args!["status"]).output_within(Duration::from_secs(20));
    assert_exit(&o, 0, "root's status with a FIFO for a configuration");
    assert_eq!(said(&o), 1, "said once: {}", util::stderr_of(&o));
    let o = careless(args!["reap", "--once"]).output_within(Duration::from_secs(20));
    assert_exit(&o, 0, "root's reap with the attacker's HOME");
    assert_unchanged(&target, &target_print, "root's file behind trashes.tmp");
}

/// The attacker of `bench_works_only_in_its_own_scratch_directory`: once a `reclaim-bench-*`
/// directory in D holds two trees (the bench's workloads, about to be removed), it is renamed
/// away and a symlink to the victim's directory takes its name.
const BENCH_SWAPPER: &str = "import os, stat, sys, time\n\
    d, target, end = sys.argv[1], sys.argv[2], time.time() + float(sys.argv[3])\n\
    while time.time() < end:\n\
    \x20   for n in os.listdir(d):\n\
    \x20       p = os.path.join(d, n)\n\
    \x20       try:\n\
    \x20           st = os.lstat(p)\n\
    \x20           if n.startswith('reclaim-bench-') and stat.S_ISDIR(st.st_mode) and st.st_nlink >= 4:\n\
    \x20               os.rename(p, os.path.join(d, 'taken-' + n))\n\
    \x20               os.symlink(target, p)\n\
    \x20               print('swapped', n, flush=True)\n\
    \x20       except OSError:\n\
    \x20           pass\n";

/// Finding 6: root's `bench --dir D`, D a user's directory: that user swaps the bench's
/// scratch directory for a symlink to a third user's directory holding names like the
/// bench's trees. Nothing of theirs is touched: root's bench works in its own directory only,
/// or refuses D.
#[test]
fn bench_works_only_in_its_own_scratch_directory() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let d = w.dir("benchdir", ATTACKER, 0o755);
    let v = w.dir("v", VICTIM, 0o755);
    for r in 0..3 {
        for m in ["rm", "reclaim"] {
            w.dir(format!("v/run{r}-{m}"), VICTIM, 0o755);
            w.file(
                format!("v/run{r}-{m}/keep"),
                VICTIM,
                0o644,
                "the victim's\n",
            );
        }
    }
    let before = snap(&v, &[]);
    let script = w.s.path("swapper.py");
    fs::write(&script, BENCH_SWAPPER).unwrap();
    chmod(&script, 0o644);
    let mut swapper = Proc::spawn(
        w.tool_cmd(ATTACKER, "python3", args![script, d, v, "60"]),
        "the swapper".into(),
    );
    let o = w
        .reclaim(
            ROOT,
            args!["bench", "--dir", d, "--files", "300", "--runs", "3", "--shape", "flat"],
        )
        .output_within(Duration::from_secs(60));
    let swaps = swapper.stop();
    eprintln!(
        "bench: {}\n{}{}\nswapper: {}",
        o.status,
        util::stdout_of(&o),
        util::stderr_of(&o),
        util::stdout_of(&swaps)
    );
    assert_same_snap("the victim's directory", &before, &snap(&v, &[]));
    // Its own scratch directory, wherever it went, is gone.
    let left: Vec<OsString> = list(&d)
        .into_iter()
        .filter(|n| {
            let p = d.join(n);
            fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir() && m.uid() == ROOT)
                && list(&p).iter().any(|c| c.as_bytes().starts_with(b"run"))
        })
        .collect();
    assert!(
        left.is_empty(),
        "the bench left trees in {}: {left:?}",
        d.display()
    );
}

/// A group the victim and the attacker share (a project directory's group).
const PROJ: u32 = 61010;

/// Finding 2: a trash is only made where no other user can take it away. The top is root's
/// (0755); `shared` is a group directory (root:proj 2775) where the victim and the attacker,
/// both in the group, may write, but not in a sticky directory. Whatever the victim's
/// `rm --background --grace 1h` does, its promise holds: it refuses (the file stays), or the
/// file is restorable after the other member renamed away every trash of the victim's it can
/// and squatted the names. In a sticky directory the trash may be made, and holds.
#[test]
fn a_trash_is_never_placed_where_another_user_can_take_it_away() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    chmod(&w.top, 0o755);
    let group = |p: &Path, owner: u32| {
        lchown(p, Some(owner), Some(PROJ)).unwrap();
        chmod(p, 0o2775);
    };
    let shared = w.dir("shared", ROOT, 0o755);
    group(&shared, ROOT);
    let proj = w.dir("shared/proj", VICTIM, 0o755);
    group(&proj, VICTIM);
    let report = w.file(
        "shared/proj/report.txt",
        VICTIM,
        0o644,
        "the victim's report\n",
    );
    let drop = w.dir("drop", ROOT, 0o1777);
    let note = w.file("drop/note.txt", VICTIM, 0o644, "the victim's note\n");

    let hide = |p: &Path| {
        w.reclaim(VICTIM, args!["rm", "--background", "--grace", "1h", p])
            .groups(&[PROJ])
            .output()
    };
    // The other member takes away every trash of the victim's it can reach, and squats.
    let take_away = || {
        for dir in [&w.top, &shared, &proj, &drop] {
            for n in list(dir) {
                if !n
                    .as_bytes()
                    .starts_with(format!(".reclaim-{VICTIM}").as_bytes())
                {
                    continue;
                }
                let from = dir.join(&n);
                let mut to = OsString::from("stolen");
                to.push(&n);
                let mv = Proc::spawn(
                    w.tool_cmd_in(ATTACKER, &[PROJ], "mv", args![from, dir.join(to)]),
                    "mv as the attacker".into(),
                )
                .finish(HANG);
                if mv.status.success() {
                    w.tool(ATTACKER, "mkdir", args![from]);
                }
            }
        }
    };
    let o = hide(&report);
    if o.status.success() {
        take_away();
        let r = w
            .reclaim(VICTIM, args!["restore", report])
            .groups(&[PROJ])
            .output();
        assert_exit(&r, 0, "the victim's restore after the other member's move");
        assert_eq!(fs::read(&report).unwrap(), b"the victim's report\n");
    } else {
        assert_exit(&o, 1, "rm --background --grace in a shared group directory");
        assert_eq!(fs::read(&report).unwrap(), b"the victim's report\n");
        let err = util::stderr_of(&o);
        assert!(
            err.contains("report.txt") && err.contains("restorable"),
            "no line naming the path and why: {err}"
        );
    }
    // A sticky directory of root's: the trash may be made there, and nobody takes it away.
    let o = hide(&note);
    assert_exit(&o, 0, "rm --background --grace in a sticky directory");
    take_away();
    w.reclaim(VICTIM, args!["restore", note])
        .groups(&[PROJ])
        .ok();
    assert_eq!(fs::read(&note).unwrap(), b"the victim's note\n");
    // A trash found later is the one registered by its identity, not by its name: another
    // directory of the victim's in its place is not taken for it.
    let t = find_trash(&drop, VICTIM).expect("the victim's trash in the sticky directory");
    fs::rename(&t, drop.join("moved-away")).unwrap();
    fs::create_dir(&t).unwrap();
    own(&t, VICTIM);
    chmod(&t, 0o700);
    let st = status_json(&w, VICTIM);
    assert!(trash_in(&st, &t).is_none(), "{st}");
    let said = st["unusable"].as_array().into_iter().flatten().any(|u| {
        u["path"].as_str() == Some(&*t.to_string_lossy())
            && u["reason"]
                .as_str()
                .is_some_and(|r| r.contains("registered"))
    });
    assert!(
        said,
        "status does not say why it passed over {}: {st}",
        t.display()
    );
}

/// A user who may not write the top of a file system gets a trash below it (in a directory of
/// their own). Root's `status`, `reap` and `reap --watch` find it (through the machine's index
/// in `/var/tmp`, here `<scratch>/var/tmp`) and free it as that user.
#[test]
fn root_sees_and_frees_a_users_trash_below_the_mount_top() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext4));
    chmod(&w.top, 0o755);
    w.dir("u", VICTIM, 0o755);
    for d in ["u/data", "u/data2"] {
        w.dir(d, VICTIM, 0o755);
        for i in 0..200 {
            w.file(format!("{d}/f{i}"), VICTIM, 0o644, "x");
        }
    }
    w.reclaim(
        VICTIM,
        args!["rm", "-r", "--background", "--grace", "1h", w.p("u/data")],
    )
    .ok();
    let t = find_trash(&w.p("u"), VICTIM).expect("the victim's trash below the top");
    assert!(find_trash(&w.top, VICTIM).is_none(), "{:?}", list(&w.top));
    let st = status_json(&w, ROOT);
    let tr = trash_in(&st, &t).unwrap_or_else(|| panic!("root's status misses {t:?}: {st}"));
    assert_eq!(tr["entries"], 1, "{st}");
    let text = w.reclaim(ROOT, args!["status"]).ok();
    let out = util::stdout_of(&text);
    assert!(
        out.contains(&*t.to_string_lossy()) && !out.contains("nothing pending"),
        "{out}"
    );
    // Root's reap frees it (as the victim: the files are the victim's).
    w.reclaim(ROOT, args!["reap", "--now", "--all"]).ok();
    assert!(entries(&t).is_empty(), "{:?}", entries(&t));
    // Root's service frees the next one (no grace, no reaper of the victim's own).
    w.reclaim(VICTIM, args!["rm", "-r", "--background", w.p("u/data2")])
        .ok();
    assert_eq!(entries(&t).len(), 1);
    let mut watch = w.reclaim(ROOT, args!["reap", "--watch"]).spawn();
    wait_for(
        "root's reap --watch to free the entry below the top",
        HANG,
        || entries(&t).is_empty().then_some(()),
    );
    watch.signal(libc::SIGTERM);
    let st = watch
        .wait_exit(Duration::from_secs(15))
        .expect("reap --watch stops on SIGTERM");
    assert_exit(&watch.collect(st), 0, "reap --watch");
    assert!(!w.p("u/data2").exists());
}

/// A user's first `--background --grace` on a full file system whose top the user may not
/// write: the trash below the top cannot be made (`mkdirat` = ENOSPC), and that is what is
/// said, once for all the paths, which stay (not "no writable directory for a trash").
#[test]
fn a_users_first_trash_on_a_full_file_system_says_no_space() {
    let w = util::or_skip!(World::new(scratch!(), Vol::TinyTmpfs));
    chmod(&w.top, 0o755);
    w.dir("u", VICTIM, 0o755);
    for i in 0..3 {
        w.file(format!("u/f{i}"), VICTIM, 0o644, "mine\n");
    }
    // The victim uses up the inodes.
    let filled = w.tool(
        VICTIM,
        "sh",
        args![
            "-c",
            format!(
                "i=0; while touch {}/fill$i 2>/dev/null; do i=$((i+1)); done",
                w.p("u").display()
            )
        ],
    );
    assert!(filled.status.success(), "{}", util::stderr_of(&filled));
    let o = w
        .reclaim(
            VICTIM,
            args![
                "rm",
                "--background",
                "--grace",
                "1h",
                w.p("u/f0"),
                w.p("u/f1"),
                w.p("u/f2")
            ],
        )
        .output();
    assert_exit(&o, 1, "rm --background --grace on a full file system");
    let err = util::stderr_of(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("No space left on device")
            && err.contains(&format!(".reclaim-{VICTIM}"))
            && err.contains("3 paths")
            && !err.contains("no writable directory"),
        "{err}"
    );
    for i in 0..3 {
        assert!(w.p(format!("u/f{i}")).exists());
    }
}

/// The index is written by users where anyone may add a file: the attacker plants a FIFO under
/// the victim's index name, and records of its own naming the victim's trash, a trash of its
/// own reached through a symbolic link and a root directory. Root's commands never hang, take
/// none of these for a trash of the attacker's, and still find the victim's trash (recorded
/// under another name).
#[test]
fn a_forged_or_squatted_index_never_misleads_root() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    chmod(&w.top, 0o755);
    let index = w.s.path("var/tmp");
    w.tool_ok(
        ATTACKER,
        "mkfifo",
        args![index.join(format!(".reclaim-trashes-{VICTIM}"))],
    );
    w.dir("u", VICTIM, 0o755);
    w.file("u/f", VICTIM, 0o644, "the victim's\n");
    w.reclaim(
        VICTIM,
        args!["rm", "--background", "--grace", "1h", w.p("u/f")],
    )
    .ok();
    let victims = find_trash(&w.p("u"), VICTIM).expect("the victim's trash below the top");
    // The attacker's own trash-like directory, and a symbolic link on the way to it.
    w.dir("a", ATTACKER, 0o755);
    w.dir("a/real", ATTACKER, 0o755);
    w.dir(format!("a/real/.reclaim-{ATTACKER}"), ATTACKER, 0o700);
    w.tool_ok(ATTACKER, "ln", args!["-s", "real", w.p("a/link")]);
    w.dir("rootdir", ROOT, 0o755);
    let line = |p: &Path| {
        let hex: String = p
            .as_os_str()
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let md = fs::symlink_metadata(p).ok();
        format!(
            "{{\"path_hex\":\"{hex}\",\"lineage\":{{\"dev\":{},\"ino\":{},\"uid\":{}}}}}\n",
            md.as_ref().map_or(0, |m| m.dev()),
            md.as_ref().map_or(0, |m| m.ino()),
            md.as_ref().map_or(0, |m| m.uid())
        )
    };
    let forged = [
        line(&victims),
        line(&w.p(format!("a/link/.reclaim-{ATTACKER}"))),
        line(&w.p("rootdir")),
    ]
    .concat();
    let planted = w.s.path(format!("forged-{ATTACKER}"));
    fs::write(&planted, forged).unwrap();
    own(&planted, ATTACKER);
    w.tool_ok(
        ATTACKER,
        "cp",
        args![planted, index.join(format!(".reclaim-trashes-{ATTACKER}"))],
    );
    let st = w
        .reclaim(ROOT, args!["status", "--json"])
        .output_within(Duration::from_secs(20));
    assert_exit(&st, 0, "root's status");
    let st = util::json_object(&st.stdout);
    let found: Vec<&str> = st["trashes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["trash"].as_str())
        .collect();
    assert!(
        found.contains(&&*victims.to_string_lossy()),
        "root misses the victim's trash: {st}"
    );
    assert_eq!(
        found.len(),
        1,
        "root took a forged record for a trash: {st}"
    );
    let reasons = st["unusable"].to_string();
    assert!(
        reasons.contains("symbolic link") && reasons.contains("not a trash of uid"),
        "{reasons}"
    );
    // Root's reap never acts in what the records name but the victim's trash, as the victim.
    w.reclaim(ROOT, args!["reap", "--now", "--all"])
        .output_within(Duration::from_secs(20));
    assert!(entries(&victims).is_empty());
    assert!(w.p("rootdir").is_dir() && w.p(format!("a/real/.reclaim-{ATTACKER}")).is_dir());
}

/// Runs the Python `code` (written as `<scratch>/<name>.py`) as `who` with `args`; it must
/// succeed.
#[track_caller]
fn python_ok(w: &World, who: u32, name: &str, code: &str, args: Vec<OsString>) -> Output {
    let script = w.s.path(format!("{name}.py"));
    fs::write(&script, code).unwrap();
    chmod(&script, 0o644);
    let mut all = args![script];
    all.extend(args);
    let o = w.tool(who, "python3", all);
    assert!(
        o.status.success(),
        "{name}.py as uid {who}: {}",
        util::stderr_of(&o)
    );
    o
}

/// Makes `n` directories `<dir>/<prefix><i>` (mode 0700) as `who`: decoys that look like
/// trashes.
fn decoys(w: &World, who: u32, dir: &Path, prefix: &str, n: u32) {
    const MAKE: &str = "import os, sys\n\
        d, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n\
        for i in range(n):\n    os.mkdir(os.path.join(d, '%s%d' % (prefix, i)), 0o700)\n";
    python_ok(w, who, "decoys", MAKE, args![dir, prefix, n.to_string()]);
}

/// Finding 3: 2,000 empty trashes of the attacker's own at the top (sorted between the
/// victim's and the third user's). Root's `status` and `reap --once`, with 1,024 fds, still
/// see every other trash: the third user's entry is listed and freed, the victim's (in its
/// grace window) listed and kept; nothing fails for want of fds; the attacker's trashes
/// beyond a few are skipped, and said so in one line.
#[test]
fn decoy_trashes_never_blind_root_to_the_others() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.dir("v", VICTIM, 0o755);
    w.dir("t", THIRD, 0o755);
    let vf = w.file("v/kept", VICTIM, 0o644, "the victim's, restorable\n");
    let tf = w.file("t/gone", THIRD, 0o644, "the third user's\n");
    w.reclaim(VICTIM, args!["rm", "--background", "--grace", "1h", vf])
        .ok();
    w.reclaim(THIRD, args!["rm", "--background", tf]).ok();
    let (vt, tt) = (w.trash(VICTIM), w.trash(THIRD));
    let vid = entry_for(&vt, &vf);
    let tid = entries(&tt)[0].clone();
    decoys(&w, ATTACKER, &w.top, &format!(".reclaim-{ATTACKER}."), 2000);
    let limited = ["prlimit", "--nofile=1024:1024", "--"];

    let o = w
        .reclaim(ROOT, args!["status", "--json"])
        .under(&limited)
        .output();
    let st = util::json_object(&o.stdout);
    let errors = st["errors"].as_array().cloned().unwrap_or_default();
    assert!(
        errors.is_empty(),
        "root's status --json among decoys: {} errors, the first {:?}",
        errors.len(),
        errors.first()
    );
    assert_exit(&o, 0, "root's status --json among decoys");
    assert!(
        item_in(&st, &vid).is_some(),
        "the victim's entry is not listed"
    );
    assert!(
        item_in(&st, &tid).is_some(),
        "the third user's entry is not listed"
    );
    let o = w.reclaim(ROOT, args!["status"]).under(&limited).output();
    assert_exit(&o, 0, "root's status among decoys");
    let text = util::stdout_of(&o);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&format!("uid {ATTACKER}")) && l.contains("not looked at"))
        .collect();
    assert_eq!(lines.len(), 1, "one line on the skipped trashes:\n{text}");

    let o = w
        .reclaim(ROOT, args!["reap", "--once", "--json"])
        .under(&limited)
        .output();
    let err = util::stderr_of(&o);
    assert!(!err.contains("Too many open files"), "{err}");
    let r = util::json_object(&o.stdout);
    assert!(
        entries(&tt).is_empty(),
        "the third user's entry was not freed: {r}\n{err}"
    );
    assert_eq!(entries(&vt), vec![vid], "the victim's entry must wait");
    assert!(r["remaining"].as_u64().unwrap_or(0) >= 1, "{r}");
}

/// Finding 8: 1,500 directories squatting the victim's trash names (and its plain name), and
/// 300 damaged entries in the attacker's own trash: the victim's `rm -v --background`, root's
/// `status` (and its JSON) and root's reap log say so in a few lines (a count and the first
/// few), not one line each.
#[test]
fn decoys_and_damaged_entries_are_summarised() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.tool_ok(ATTACKER, "mkdir", args![w.p(format!(".reclaim-{VICTIM}"))]);
    decoys(&w, ATTACKER, &w.top, &format!(".reclaim-{VICTIM}."), 1500);
    w.dir("v", VICTIM, 0o755);
    let vf = w.file("v/f", VICTIM, 0o644, "the victim's\n");
    let o = w
        .reclaim(VICTIM, args!["rm", "-v", "--background", vf])
        .ok();
    let mut lines: Vec<String> = util::stdout_of(&o).lines().map(str::to_owned).collect();
    lines.extend(stderr_lines(&o));
    let not_using = lines.iter().filter(|l| l.contains("not using")).count();
    assert!(
        (1..=5).contains(&not_using) && lines.len() <= 10,
        "{} lines, {not_using} 'not using':\n{}",
        lines.len(),
        lines[..lines.len().min(20)].join("\n")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("1,49") || l.contains("1,50")),
        "no count of the squatted names:\n{}",
        lines.join("\n")
    );

    // The attacker's own trash with 300 damaged entries (their meta.json a FIFO).
    w.dir("a", ATTACKER, 0o755);
    let af = w.file("a/f", ATTACKER, 0o644, "a\n");
    w.reclaim(ATTACKER, args!["rm", "--background", "--grace", "1h", af])
        .ok();
    let at = w.trash(ATTACKER);
    const DAMAGE: &str = "import os, sys\n\
        t = sys.argv[1]\n\
        for i in range(300):\n\
        \x20   e = os.path.join(t, '20000101T000000.000000Z-8-%d' % i)\n\
        \x20   os.mkdir(e, 0o700)\n\
        \x20   os.mkfifo(os.path.join(e, 'meta.json'), 0o600)\n\
        \x20   open(os.path.join(e, 'data'), 'w').write('x')\n";
    python_ok(&w, ATTACKER, "damage", DAMAGE, args![at]);

    let o = w.reclaim(ROOT, args!["status"]).ok();
    let text = util::stdout_of(&o);
    let count = |word: &str| text.lines().filter(|l| l.contains(word)).count();
    assert!(
        (1..=5).contains(&count("ignoring")) && (1..=8).contains(&count("damaged")),
        "{} 'ignoring' and {} 'damaged' lines:\n{}",
        count("ignoring"),
        count("damaged"),
        text.lines().take(40).collect::<Vec<_>>().join("\n")
    );
    assert!(text.lines().count() <= 40, "{} lines", text.lines().count());
    let st = status_json(&w, ROOT);
    let listed = st["unusable"].as_array().map_or(0, Vec::len);
    assert!(listed <= 5, "{listed} unusable names listed in the JSON");
    assert!(
        st["unusable_more"].as_u64().unwrap_or(0) + listed as u64 >= 1501,
        "the JSON does not count the squatted names: {}",
        st["unusable_more"]
    );

    let o = w
        .reclaim(
            ROOT,
            args!["reap", "--once", "--log", "stderr", "--trash", at],
        )
        .output();
    let err = util::stderr_of(&o);
    let damaged = err.lines().filter(|l| l.contains("damaged")).count();
    assert!(
        (1..=10).contains(&damaged),
        "{damaged} lines on damaged entries in the log:\n{}",
        err.lines().take(20).collect::<Vec<_>>().join("\n")
    );
}

/// The children of process `pid` now (from `/proc/*/stat`).
fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
            .and_then(|s| s.parse::<i32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// The number of threads of process `pid` (`Threads:` of `/proc/PID/status`).
fn threads_of(pid: i32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:")?.trim().parse().ok())
        .unwrap_or(0)
}

/// Finding 4: root's `reap --watch` over 150 users' trashes (made by root as theirs, each with
/// a log) and 500 decoys of the attacker's own: at most a few passes (children) at once, a
/// bounded number of threads, the third user's entry freed all the same (fair across users),
/// and a stop within seconds of SIGTERM.
#[test]
fn reap_watch_runs_few_passes_at_once_fairly_and_stops_on_sigterm() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    // Each with a log (an empty trash needs no pass, so gets no child).
    for u in 62000..62150u32 {
        w.dir(format!(".reclaim-{u}"), u, 0o700);
        w.file(format!(".reclaim-{u}/reaper.log"), u, 0o600, "");
    }
    decoys(&w, ATTACKER, &w.top, &format!(".reclaim-{ATTACKER}."), 500);
    w.dir("t", THIRD, 0o755);
    let tf = w.file("t/f", THIRD, 0o644, "the third user's\n");
    w.reclaim(THIRD, args!["rm", "--background", tf]).ok();
    let tt = w.trash(THIRD);
    let mut watch = w.reclaim(ROOT, args!["reap", "--watch"]).spawn();
    let pid = watch.pid();
    let (mut max_children, mut max_threads) = (0usize, 0u64);
    let t0 = Instant::now();
    let mut freed_at = None;
    while t0.elapsed() < Duration::from_secs(40) {
        max_children = max_children.max(children_of(pid).len());
        max_threads = max_threads.max(threads_of(pid));
        if freed_at.is_none() && entries(&tt).is_empty() {
            freed_at = Some(t0.elapsed());
        }
        if freed_at.is_some_and(|f| t0.elapsed() > f + Duration::from_secs(3)) {
            break;
        }
        if let Some(st) = watch.exited() {
            panic!(
                "reap --watch ended: {}",
                util::stderr_of(&watch.collect(st))
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!(
        "reap --watch: at most {max_children} children and {max_threads} threads; the third \
         user's entry freed after {freed_at:?}"
    );
    assert!(
        freed_at.is_some(),
        "the third user's entry was not freed in 40 s"
    );
    assert!(max_children <= 8, "{max_children} passes at once");
    assert!(max_threads <= 32, "{max_threads} threads");
    let t_term = Instant::now();
    watch.signal(libc::SIGTERM);
    let st = watch.wait_exit(Duration::from_secs(15));
    let took = t_term.elapsed();
    let st = st.unwrap_or_else(|| panic!("reap --watch did not stop within 15 s of SIGTERM"));
    let o = watch.collect(st);
    assert!(
        took < Duration::from_secs(5),
        "reap --watch took {took:?} to stop: {}",
        util::stderr_of(&o)
    );
    assert_exit(&o, 0, "reap --watch stopped by SIGTERM");
    assert!(!util::stderr_of(&o).contains("panicked"));
}

/// Finding 7: the attacker's own `reap --trash T`, slowed down and then stopped (SIGSTOP)
/// while it holds its trash's lock. Root's `reap --trash T` does not wait for it forever (it
/// says why it leaves T), and root's plain `reap` frees the victim's entry and ends.
#[test]
fn root_never_waits_forever_for_a_users_lock() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.dir("a", ATTACKER, 0o755);
    w.dir("a/tree", ATTACKER, 0o755);
    for i in 0..100 {
        w.file(format!("a/tree/f{i}"), ATTACKER, 0o644, "x\n");
    }
    w.reclaim(ATTACKER, args!["rm", "-r", "--background", w.p("a/tree")])
        .ok();
    let t = w.trash(ATTACKER);
    w.dir("v", VICTIM, 0o755);
    let vf = w.file("v/f", VICTIM, 0o644, "the victim's\n");
    w.reclaim(VICTIM, args!["rm", "--background", vf]).ok();
    let vt = w.trash(VICTIM);
    let slow = w
        .reclaim(ATTACKER, args!["reap", "--trash", t, "--iops", "5"])
        .spawn();
    wait_for("the attacker's reaper to hold its lock", HANG, || {
        util::trash_locked(&t).then_some(())
    });
    slow.signal(libc::SIGSTOP);
    let t0 = Instant::now();
    let o = w
        .reclaim(ROOT, args!["reap", "--trash", t])
        .output_within(Duration::from_secs(25));
    let err = util::stderr_of(&o);
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "root's reap --trash took {:?}",
        t0.elapsed()
    );
    assert!(
        err.contains("not waiting") && err.contains(&slow.pid().to_string()),
        "root's reap does not say why it left the trash:\n{err}"
    );
    let t0 = Instant::now();
    let o = w
        .reclaim(ROOT, args!["reap"])
        .output_within(Duration::from_secs(25));
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "root's reap took {:?}",
        t0.elapsed()
    );
    assert!(
        entries(&vt).is_empty(),
        "the victim's entry was not freed: {}",
        util::stderr_of(&o)
    );
    slow.signal(libc::SIGCONT);
}

/// `reclaim reap --once --json --trash T` as root; its report.
#[track_caller]
fn reap_report(w: &World, trash: &Path) -> Value {
    let o = w
        .reclaim(ROOT, args!["reap", "--once", "--json", "--trash", trash])
        .output();
    let v = util::json_object(&o.stdout);
    assert!(
        v["errors"].as_array().is_some_and(Vec::is_empty),
        "{v}\n{}",
        util::stderr_of(&o)
    );
    v
}

/// Finding 9: what a reaper says it freed is what the file system got back. A second name of
/// the attacker's own big file, a file another process holds open, and reflinked copies on
/// btrfs and xfs free (almost) nothing, and the report says so; a plain file frees its size.
/// The report says how it counted.
#[test]
fn freed_bytes_are_what_the_file_system_got_back() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext4));
    let big = 32 * MIB;
    w.dir("a", ATTACKER, 0o755);
    written(&w, "a/big", big, ATTACKER);
    w.tool_ok(ATTACKER, "ln", args![w.p("a/big"), w.p("a/big2")]);
    w.reclaim(ATTACKER, args!["rm", "--background", w.p("a/big2")])
        .ok();
    let r = reap_report(&w, &w.trash(ATTACKER));
    assert_eq!(r["entries_freed"], 1, "{r}");
    assert!(
        r["bytes_freed"].as_u64().unwrap() < MIB,
        "a hard link's removal claims {} bytes: {r}",
        r["bytes_freed"]
    );
    assert!(
        r["bytes_freed_measure"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "the report does not say how it counted: {r}"
    );

    // A file another process holds open: its blocks stay in use until it is closed.
    w.dir("v", VICTIM, 0o755);
    written(&w, "v/open", 16 * MIB, VICTIM);
    let mut holder = Proc::spawn(
        w.tool_cmd(
            VICTIM,
            "sh",
            args!["-c", "exec sleep 600 < \"$1\"", "sh", w.p("v/open")],
        ),
        "a process holding the file open".into(),
    );
    wait_for("the holder to open the file", HANG, || {
        let fd = PathBuf::from(format!("/proc/{}/fd/0", holder.pid()));
        fs::read_link(fd)
            .is_ok_and(|p| p == w.p("v/open"))
            .then_some(())
    });
    w.reclaim(VICTIM, args!["rm", "--background", w.p("v/open")])
        .ok();
    let r = reap_report(&w, &w.trash(VICTIM));
    assert_eq!(r["entries_freed"], 1, "{r}");
    assert!(
        r["bytes_freed"].as_u64().unwrap() < MIB,
        "an open file's removal claims {} bytes: {r}",
        r["bytes_freed"]
    );
    holder.stop();

    // A plain file: its size.
    written(&w, "v/plain", 16 * MIB, VICTIM);
    w.reclaim(VICTIM, args!["rm", "--background", w.p("v/plain")])
        .ok();
    let r = reap_report(&w, &w.trash(VICTIM));
    assert!(
        r["bytes_freed"].as_u64().unwrap() >= 15 * MIB,
        "a plain file's removal claims only {} bytes: {r}",
        r["bytes_freed"]
    );

    // Reflinked copies share their extents with the original.
    for (name, vol) in [("btrfs", Vol::Btrfs), ("xfs", Vol::Xfs)] {
        let rel = format!("vol-{name}");
        let _v = match vol.mount(&w.s, &rel) {
            Ok(v) => v,
            Err(why) => {
                util::skipped(util::test_name!(), &format!("the {name} part: {why}"));
                continue;
            }
        };
        let top = w.s.path(&rel);
        chmod(&top, 0o1777);
        let orig = top.join("orig");
        let copy = top.join("copy");
        fs::write(&orig, vec![7u8; (16 * MIB) as usize]).unwrap();
        own(&orig, VICTIM);
        w.tool_ok(VICTIM, "cp", args!["--reflink=always", orig, copy]);
        w.tool_ok(VICTIM, "sync", args![]);
        w.reclaim(VICTIM, args!["rm", "--background", copy]).ok();
        let t = find_trash(&top, VICTIM).expect("the victim's trash");
        let r = reap_report(&w, &t);
        assert_eq!(r["entries_freed"], 1, "{name}: {r}");
        assert!(
            r["bytes_freed"].as_u64().unwrap() < MIB,
            "{name}: a reflinked copy's removal claims {} bytes: {r}",
            r["bytes_freed"]
        );
        end_processes_of(w.s.root());
    }
}

/// Finding 10: a reaper waiting for a grace window (holding nothing open) notices within
/// seconds that its trash is gone, and leaves with one line: the file system unmounted, the
/// trash removed, or the trash replaced by another directory of the same name; and so does a
/// reaper at work (slowed down) whose trash is moved away.
#[test]
fn a_reaper_whose_trash_is_gone_stops_within_seconds() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    // Each case: a volume of its own, root's entry with a long grace window (or, for the one at
    // work, a tree of 120 files freed at 5 a second), its reaper.
    let cases = ["unmounted", "removed", "replaced", "moved while at work"];
    let mut vols = Vec::new();
    for (i, case) in cases.into_iter().enumerate() {
        let rel = format!("gone-{i}");
        let v = util::or_skip!(Volume::tmpfs(&w.s, &rel));
        let top = w.s.path(&rel);
        let mut reap = args!["reap"];
        if i < 3 {
            fs::write(top.join("f"), "root's\n").unwrap();
            w.reclaim(
                ROOT,
                args!["rm", "--background", "--grace", "1h", top.join("f")],
            )
            .ok();
        } else {
            // 30 directories of 4 files: a stop takes effect between directories.
            fs::create_dir(top.join("tree")).unwrap();
            for d in 0..30 {
                fs::create_dir(top.join(format!("tree/d{d}"))).unwrap();
                for n in 0..4 {
                    fs::write(top.join(format!("tree/d{d}/f{n}")), "x\n").unwrap();
                }
            }
            w.reclaim(ROOT, args!["rm", "-r", "--background", top.join("tree")])
                .ok();
            reap.extend(args!["--iops", "5"]);
        }
        let t = find_trash(&top, ROOT).expect("root's trash");
        reap.extend(args!["--trash", t, "--detached"]);
        let reaper = w.reclaim(ROOT, reap).spawn();
        vols.push((case, top, t, reaper, Some(v)));
    }
    // Each waits (holding nothing) for the grace window, or works.
    std::thread::sleep(Duration::from_secs(2));
    for (case, top, t, reaper, v) in &mut vols {
        assert!(reaper.exited().is_none(), "the {case} reaper ended early");
        match *case {
            "moved while at work" => {
                assert!(util::trash_locked(t), "the reaper does not work on {case}");
                fs::rename(&*t, top.join("elsewhere")).unwrap();
            }
            "unmounted" => {
                let o = Command::new("umount").arg(&*top).output().unwrap();
                assert!(o.status.success(), "umount: {}", util::stderr_of(&o));
                drop(v.take());
            }
            "removed" => fs::remove_dir_all(&*t).unwrap(),
            _ => {
                fs::rename(&*t, top.join("old-trash")).unwrap();
                fs::create_dir(&*t).unwrap();
                chmod(t, 0o700);
            }
        }
    }
    let t0 = Instant::now();
    for (case, _, t, reaper, _) in &mut vols {
        let left = Duration::from_secs(10).saturating_sub(t0.elapsed());
        let Some(st) = reaper.wait_exit(left) else {
            panic!("the reaper of the {case} trash still runs 10 s later");
        };
        let o = reaper.collect(st);
        let lines: Vec<String> = stderr_lines(&o)
            .into_iter()
            .filter(|l| l.contains(&*t.to_string_lossy()))
            .collect();
        assert_eq!(lines.len(), 1, "{case}: one line, not {lines:?}");
    }
}

mod round4;
