//! The differential harness of `gnu_rm.rs`: a scenario model (an initial tree, a command line,
//! answers to prompts, the uid that runs it, the file system it lives on), a runner that builds
//! the tree twice in two sibling directories and runs GNU `rm` in one and reclaim invoked as
//! `rm` in the other, and a comparison that prints a reproduction with both outputs side by
//! side.
//!
//! Safety: every directory it builds in lies inside a `util::Scratch`; before anything runs,
//! every argument of the command line is resolved as the kernel would (symlinks of every
//! component but a last one that is not followed) and must lie inside its own side directory.
//! The one exception is an operand that resolves to `/` exactly (`/`, `//`, a symlink to `/`
//! with a trailing slash): such a scenario, and every scenario whose tree holds a symlink to
//! `/`, runs only in a private mount namespace in which every mount except the scratch
//! directory is read-only, and never together with `--no-preserve-root`.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{self, Scratch, Volume};

/// The uid that runs a scenario as "another user" (no passwd entry needed), as in
/// `adversary.rs`.
pub const OTHER_UID: u32 = 61001;

/// Written in place of a side's `w` directory (absolute) in arguments and symlink targets.
pub const W: &str = "@W@";

/// GNU `rm`: `$GNU_RM` or `/usr/bin/rm`.
pub fn gnu_rm() -> PathBuf {
    std::env::var_os("GNU_RM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/rm"))
}

/// Ok if `gnu_rm()` is GNU coreutils' rm, else why not (every test then skips itself).
pub fn need_gnu_rm() -> Result<(), String> {
    let ok = Command::new(gnu_rm())
        .arg("--version")
        .env("LC_ALL", "C")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("GNU coreutils"));
    if ok {
        Ok(())
    } else {
        Err(format!("{} is not GNU coreutils' rm", gnu_rm().display()))
    }
}

/// Whether the reference `rm` predates coreutils 9.2, which changed `rm -d` of a directory
/// its user may not read (reclaim follows 9.2+: `tests/rm/empty-inacc.sh`).
pub fn gnu_before_9_2() -> bool {
    static OLD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OLD.get_or_init(|| {
        let out = Command::new(gnu_rm())
            .arg("--version")
            .env("LC_ALL", "C")
            .output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        let version = text.ok().and_then(|t| {
            let first = t.lines().next()?.to_string();
            let v = first.rsplit(' ').next()?.to_string();
            let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
        });
        version.is_some_and(|v| v < (9, 2))
    })
}

// ---------------------------------------------------------------------------------------------
// The model.

/// Where the two copies of the tree live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fs {
    /// The scratch directory itself (the system temp dir's file system).
    Host,
    /// A tmpfs mounted in the scratch directory (root only).
    Tmpfs,
    /// An ext4 loop image mounted in the scratch directory (root only; `chattr` works here).
    Ext4,
    /// An xfs loop image mounted in the scratch directory (root only).
    Xfs,
    /// A btrfs loop image mounted in the scratch directory (root only).
    Btrfs,
}

/// Who runs the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// The uid running the tests (root or not).
    Me,
    /// `OTHER_UID`, which owns the tree (root only, to switch).
    Other,
}

/// What stdin is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stdin {
    /// `/dev/null`: GNU does not prompt for write-protected files; `-i` reads end of file.
    Null,
    /// A pseudo-terminal; stdout and stderr stay pipes. Each time the program waits for input
    /// the next answer (and a newline) is typed, then end of file (^D).
    Pty(Vec<Vec<u8>>),
    /// A pseudo-terminal for stdin, stdout and stderr: one transcript, as a person sees it.
    Terminal(Vec<Vec<u8>>),
}

impl Stdin {
    pub fn answers(&self) -> &[Vec<u8>] {
        match self {
            Stdin::Null => &[],
            Stdin::Pty(a) | Stdin::Terminal(a) => a,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    File(Vec<u8>),
    Dir,
    /// A directory on which a fresh tmpfs is mounted (root, `Fs::Host` only).
    Mount,
    /// A symlink; `@W@` in the target stands for the side's absolute `w` directory.
    Link(Vec<u8>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attr {
    None,
    /// `chattr +i` (root, `Fs::Ext4`).
    Immutable,
    /// `chattr +a` (root, `Fs::Ext4`).
    AppendOnly,
}

/// One entry of the initial tree, relative to `w` (its parent comes earlier in the list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub path: Vec<u8>,
    pub kind: Kind,
    pub mode: u32,
    pub attr: Attr,
}

impl Node {
    pub fn file(path: &[u8], contents: &[u8], mode: u32) -> Node {
        Node {
            path: path.to_vec(),
            kind: Kind::File(contents.to_vec()),
            mode,
            attr: Attr::None,
        }
    }
    pub fn dir(path: &[u8], mode: u32) -> Node {
        Node {
            path: path.to_vec(),
            kind: Kind::Dir,
            mode,
            attr: Attr::None,
        }
    }
    pub fn link(path: &[u8], target: &[u8]) -> Node {
        Node {
            path: path.to_vec(),
            kind: Kind::Link(target.to_vec()),
            mode: 0o777,
            attr: Attr::None,
        }
    }
    pub fn mount(path: &[u8], mode: u32) -> Node {
        Node {
            path: path.to_vec(),
            kind: Kind::Mount,
            mode,
            attr: Attr::None,
        }
    }
    pub fn with_attr(mut self, attr: Attr) -> Node {
        self.attr = attr;
        self
    }
}

/// A scenario: the tree (in `w`, the working directory), `rm`'s arguments (after argv[0]),
/// stdin, the user, the file system, and argv[0] (`rm`, or the link's absolute path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub fs: Fs,
    pub user: User,
    pub w_mode: u32,
    pub nodes: Vec<Node>,
    pub args: Vec<Vec<u8>>,
    pub stdin: Stdin,
    pub argv0_path: bool,
}

impl Scenario {
    /// A scenario on the host file system, run by the test's uid, stdin /dev/null.
    pub fn new(nodes: Vec<Node>, args: &[&[u8]]) -> Scenario {
        Scenario {
            fs: Fs::Host,
            user: User::Me,
            w_mode: 0o755,
            nodes,
            args: args.iter().map(|a| a.to_vec()).collect(),
            stdin: Stdin::Null,
            argv0_path: false,
        }
    }
    pub fn by_other(mut self) -> Scenario {
        self.user = User::Other;
        self
    }
    pub fn on(mut self, fs: Fs) -> Scenario {
        self.fs = fs;
        self
    }
    pub fn stdin(mut self, stdin: Stdin) -> Scenario {
        self.stdin = stdin;
        self
    }

    pub fn has_root_link(&self) -> bool {
        self.nodes.iter().any(
            |n| matches!(&n.kind, Kind::Link(t) if t.as_slice() == b"/" || t.as_slice() == b"//"),
        )
    }
    pub fn has_mounts(&self) -> bool {
        self.nodes.iter().any(|n| n.kind == Kind::Mount)
    }
    pub fn has_attrs(&self) -> bool {
        self.nodes.iter().any(|n| n.attr != Attr::None)
    }
    /// Whether an argument could mean `--no-preserve-root` (any `--n…`, conservatively).
    pub fn may_not_preserve_root(&self) -> bool {
        self.args.iter().any(|a| a.starts_with(b"--n"))
    }

    /// What this scenario needs that the machine may not give (None: it can run here).
    /// Whether coreutils before 9.2 and reclaim (following 9.2+) may rightly differ here:
    /// `-d` given, and a directory of the tree that its (unprivileged) runner may not read.
    pub fn newer_gnu_differs(&self, caps: &Caps) -> bool {
        let unprivileged = self.user == User::Other || !caps.root;
        let unreadable = self.w_mode & 0o400 == 0
            || self
                .nodes
                .iter()
                .any(|n| matches!(n.kind, Kind::Dir | Kind::Mount) && n.mode & 0o400 == 0);
        let mut d = false;
        for a in &self.args {
            if a.as_slice() == b"--" {
                break;
            }
            if a.starts_with(b"--") {
                d |= a.len() > 3 && b"--dir".starts_with(a);
            } else if a.len() > 1 && a[0] == b'-' {
                d |= a.contains(&b'd');
            }
        }
        unprivileged && unreadable && d
    }

    pub fn unmet_need(&self, caps: &Caps) -> Option<&'static str> {
        if (self.fs != Fs::Host
            || self.user == User::Other
            || self.has_mounts()
            || self.has_attrs())
            && !caps.root
        {
            return Some("needs root");
        }
        if self.fs == Fs::Ext4 && !caps.ext4 {
            return Some("needs an ext4 loop image");
        }
        if self.fs == Fs::Xfs && !caps.xfs {
            return Some("needs an xfs loop image");
        }
        if self.fs == Fs::Btrfs && !caps.btrfs {
            return Some("needs a btrfs loop image");
        }
        if self.has_attrs() && self.fs != Fs::Ext4 {
            return Some("chattr needs Fs::Ext4");
        }
        if self.has_mounts() && self.fs != Fs::Host {
            return Some("mount points only on Fs::Host");
        }
        None
    }
}

/// What the machine allows.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    pub root: bool,
    pub ext4: bool,
    pub xfs: bool,
    pub btrfs: bool,
}

impl Caps {
    pub fn detect() -> Caps {
        let root = util::is_root();
        let has = |mkfs: &str, version: &str| {
            root && Command::new(mkfs)
                .arg(version)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        Caps {
            root,
            ext4: has("mkfs.ext4", "-V"),
            xfs: has("mkfs.xfs", "-V"),
            btrfs: has("mkfs.btrfs", "--version"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Where a path leads.

/// Where an argument resolves, seen from the working directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Where {
    Inside,
    /// Exactly `/`, and `rm` would act on `/` itself (it follows the last component).
    Root,
    Outside(PathBuf),
}

/// Resolves `arg` (from `cwd`) as the kernel would: every component but the last through
/// symlinks, the last too if the argument ends in `/`, `.` or `..`; a missing component
/// stops the resolution (nothing beyond it can be reached). The result must lie in `base`.
pub fn classify(base: &Path, cwd: &Path, arg: &[u8]) -> Where {
    let p = if arg.starts_with(b"/") {
        PathBuf::from(OsStr::from_bytes(arg))
    } else {
        let mut v = cwd.as_os_str().as_bytes().to_vec();
        v.push(b'/');
        v.extend_from_slice(arg);
        PathBuf::from(OsString::from_vec(v))
    };
    let b = p.as_os_str().as_bytes();
    let comps: Vec<&[u8]> = b.split(|&c| c == b'/').filter(|c| !c.is_empty()).collect();
    let last = comps.last().copied().unwrap_or(b"");
    let follow_last = b.ends_with(b"/") || last == b"." || last == b".." || comps.is_empty();
    let walk_to = if follow_last {
        comps.len()
    } else {
        comps.len() - 1
    };
    // The longest prefix (as spelled) that resolves.
    let mut resolved = PathBuf::from("/");
    let mut complete = true;
    for i in 1..=walk_to {
        let mut pre = Vec::new();
        for c in &comps[..i] {
            pre.push(b'/');
            pre.extend_from_slice(c);
        }
        match fs::canonicalize(OsStr::from_bytes(&pre)) {
            Ok(r) => resolved = r,
            Err(_) => {
                complete = false;
                break;
            }
        }
    }
    let target = if follow_last || !complete {
        resolved.clone()
    } else {
        resolved.join(OsStr::from_bytes(last))
    };
    if follow_last && complete && target == Path::new("/") {
        return Where::Root;
    }
    if target.starts_with(base) && resolved.starts_with(base) {
        Where::Inside
    } else {
        Where::Outside(target)
    }
}

// ---------------------------------------------------------------------------------------------
// One side: a directory `<..>/g` or `<..>/r` holding `bin/rm` (a symlink to the program) and
// `w` (the tree, and the working directory).

pub struct Side {
    pub root: PathBuf,
    attrs: bool,
    /// The tmpfs mounted on each `Kind::Mount` node.
    mounts: Vec<Volume>,
}

impl Side {
    fn new(root: PathBuf, program: &Path) -> Side {
        fs::create_dir(&root).unwrap_or_else(|e| panic!("mkdir {}: {e}", root.display()));
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir(root.join("bin")).unwrap();
        std::os::unix::fs::symlink(program, root.join("bin/rm")).unwrap();
        Side {
            root,
            attrs: false,
            mounts: Vec::new(),
        }
    }

    pub fn w(&self) -> PathBuf {
        self.root.join("w")
    }

    fn subst(&self, bytes: &[u8]) -> Vec<u8> {
        replace(bytes, W.as_bytes(), self.w().as_os_str().as_bytes())
    }

    fn build(&mut self, scratch: &Scratch, sc: &Scenario) {
        let w = self.w();
        fs::create_dir(&w).unwrap();
        for n in &sc.nodes {
            let p = w.join(OsStr::from_bytes(&n.path));
            match &n.kind {
                Kind::File(c) => fs::write(&p, c),
                Kind::Dir => fs::create_dir(&p),
                Kind::Mount => {
                    let rel = p.strip_prefix(scratch.root()).unwrap();
                    Volume::tmpfs_with(scratch, rel, "size=1m")
                        .map(|v| self.mounts.push(v))
                        .map_err(std::io::Error::other)
                }
                Kind::Link(t) => std::os::unix::fs::symlink(OsStr::from_bytes(&self.subst(t)), &p),
            }
            .unwrap_or_else(|e| panic!("build {}: {e}", p.display()));
        }
        if sc.user == User::Other {
            std::os::unix::fs::lchown(&w, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
            for n in &sc.nodes {
                let p = w.join(OsStr::from_bytes(&n.path));
                std::os::unix::fs::lchown(&p, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
            }
        }
        // Children before parents, so a parent's mode never stops a child's chmod.
        for n in sc.nodes.iter().rev() {
            if !matches!(n.kind, Kind::Link(_)) {
                let p = w.join(OsStr::from_bytes(&n.path));
                fs::set_permissions(&p, fs::Permissions::from_mode(n.mode)).unwrap();
            }
        }
        fs::set_permissions(&w, fs::Permissions::from_mode(sc.w_mode)).unwrap();
        for n in &sc.nodes {
            let flag = match n.attr {
                Attr::None => continue,
                Attr::Immutable => "+i",
                Attr::AppendOnly => "+a",
            };
            self.attrs = true;
            let p = w.join(OsStr::from_bytes(&n.path));
            let out = Command::new("chattr").arg(flag).arg(&p).output().unwrap();
            assert!(
                out.status.success(),
                "chattr {flag} {}: {}",
                p.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        // Unmounted last made first (a mount point may lie on another mount of the tree).
        while let Some(v) = self.mounts.pop() {
            drop(v);
        }
        if self.attrs {
            let _ = Command::new("chattr")
                .args(["-R", "-i", "-a"])
                .arg(&self.root)
                .output();
        }
        if !util::is_root() {
            open_up(&self.root);
        }
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Gives the owner rwx on every directory under `p` (for a run that is not root).
fn open_up(p: &Path) {
    let Ok(md) = fs::symlink_metadata(p) else {
        return;
    };
    if md.is_dir() {
        let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
        if let Ok(rd) = fs::read_dir(p) {
            for e in rd.flatten() {
                open_up(&e.path());
            }
        }
    }
}

fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return hay.to_vec();
    }
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Snapshots of a side: names, types, modes, contents, symlink targets (the side's path in a
// target written as `<S>`).

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Snap {
    Dir(u32),
    File(u32, Option<Vec<u8>>),
    Link(Vec<u8>),
    Other(u32),
}

pub type SideSnapshot = BTreeMap<Vec<u8>, Snap>;

fn snapshot_side(side: &Path) -> SideSnapshot {
    let mut out = SideSnapshot::new();
    let sb = side.as_os_str().as_bytes().to_vec();
    fn go(p: &Path, rel: Vec<u8>, side: &[u8], out: &mut SideSnapshot) {
        let Ok(md) = fs::symlink_metadata(p) else {
            return;
        };
        let mode = md.permissions().mode() & 0o7777;
        let ft = md.file_type();
        if ft.is_symlink() {
            let t = fs::read_link(p)
                .map(|t| t.into_os_string().into_vec())
                .unwrap_or_default();
            let t = if rel == b"bin/rm" {
                b"<program>".to_vec()
            } else {
                replace(&t, side, b"<S>")
            };
            out.insert(rel, Snap::Link(t));
        } else if ft.is_file() {
            let c = fs::read(p).ok().or_else(|| {
                // Not root: a file of mode 0 is ours, open it up a moment.
                let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o600));
                let c = fs::read(p).ok();
                let _ = fs::set_permissions(p, fs::Permissions::from_mode(mode));
                c
            });
            out.insert(rel, Snap::File(mode, c));
        } else if ft.is_dir() {
            out.insert(rel.clone(), Snap::Dir(mode));
            let names = fs::read_dir(p).ok().or_else(|| {
                let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
                let r = fs::read_dir(p).ok();
                let _ = fs::set_permissions(p, fs::Permissions::from_mode(mode));
                r
            });
            let mut names: Vec<OsString> = names
                .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
                .unwrap_or_default();
            names.sort();
            for n in names {
                let mut r = rel.clone();
                if !r.is_empty() {
                    r.push(b'/');
                }
                r.extend_from_slice(n.as_bytes());
                go(&p.join(&n), r, side, out);
            }
        } else {
            out.insert(rel, Snap::Other(mode));
        }
    }
    go(side, Vec::new(), &sb, &mut out);
    out
}

// ---------------------------------------------------------------------------------------------
// Running a program with a pseudo-terminal.

/// What one run produced.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Exit code, or 128+signal.
    pub code: i32,
    pub stdout: Vec<u8>,
    /// stderr; with `Stdin::Pty` the answers typed are written in where they were read
    /// (`y⏎`, `^D⏎` for end of file).
    pub stderr: Vec<u8>,
    /// What the terminal showed (`Stdin::Terminal`): output, prompts and echoed answers.
    pub terminal: Vec<u8>,
    pub timed_out: bool,
    /// The namespace could not be set up (`run_in_readonly_world` exit 99).
    pub no_namespace: bool,
}

/// Whether a thread of `pid` is blocked in `read(0, …)` or `readv(0, …)`, and that thread's
/// (tid, voluntary context switches), to tell a new read from the one already answered.
fn reading_stdin(pid: u32) -> Option<(u32, u64)> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for t in tasks.flatten() {
        let Ok(sc) = fs::read_to_string(t.path().join("syscall")) else {
            continue;
        };
        let mut it = sc.split_whitespace();
        let (nr, fd) = (it.next(), it.next());
        // x86_64: read = 0, readv = 19; aarch64: read = 63, readv = 65.
        let is_read = if cfg!(target_arch = "aarch64") {
            matches!(nr, Some("63" | "65"))
        } else {
            matches!(nr, Some("0" | "19"))
        };
        if is_read && fd == Some("0x0") {
            let tid: u32 = t.file_name().to_string_lossy().parse().ok()?;
            let status = fs::read_to_string(t.path().join("status")).ok()?;
            let vcs = status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            return Some((tid, vcs));
        }
    }
    None
}

fn set_nonblocking(fd: i32) {
    // SAFETY: fcntl on a fd we own.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

/// Reads what is available from a non-blocking fd; false at end of file (or error).
fn drain(fd: i32, into: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 65536];
    loop {
        // SAFETY: read into our buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            into.extend_from_slice(&buf[..n as usize]);
            continue;
        }
        if n == 0 {
            return false;
        }
        let e = std::io::Error::last_os_error().raw_os_error();
        return e == Some(libc::EAGAIN) || e == Some(libc::EINTR);
    }
}

fn openpty() -> (OwnedFd, OwnedFd) {
    let (mut m, mut s) = (-1, -1);
    // SAFETY: openpty fills two fds; no name, default termios and size.
    let rc = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: fresh fds owned by us from here on.
    unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) }
}

const RUN_TIMEOUT: Duration = Duration::from_secs(15);

/// Runs `cmd` with `stdin`, feeding answers when it waits for input; collects everything.
pub fn run_process(cmd: &mut Command, stdin: &Stdin) -> Outcome {
    let mut pty = None;
    match stdin {
        Stdin::Null => {
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        }
        Stdin::Pty(_) | Stdin::Terminal(_) => {
            let (m, s) = openpty();
            cmd.stdin(Stdio::from(s.try_clone().unwrap()));
            if matches!(stdin, Stdin::Terminal(_)) {
                cmd.stdout(Stdio::from(s.try_clone().unwrap()))
                    .stderr(Stdio::from(s.try_clone().unwrap()));
            } else {
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            }
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    libc::setsid();
                    libc::ioctl(0, libc::TIOCSCTTY, 0);
                    Ok(())
                });
            }
            pty = Some((m, s));
        }
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let pid = child.id();
    let out_fd = child.stdout.take().map(OwnedFd::from);
    let err_fd = child.stderr.take().map(OwnedFd::from);
    // Our copy of the slave is no longer needed once the child has its own.
    let master = pty.map(|(m, s)| {
        drop(s);
        m
    });
    for fd in [&out_fd, &err_fd, &master].into_iter().flatten() {
        set_nonblocking(fd.as_raw_fd());
    }
    let mut o = Outcome::default();
    let mut answers = stdin.answers().iter();
    let mut answered: Option<(u32, u64)> = None;
    let mut typed = 0;
    let (mut out_open, mut err_open) = (out_fd.is_some(), err_fd.is_some());
    let t0 = Instant::now();
    let status = loop {
        let mut pfds: Vec<libc::pollfd> = [&out_fd, &err_fd, &master]
            .into_iter()
            .flatten()
            .map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: poll on our fds.
        unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 3) };
        if let Some(fd) = &out_fd {
            out_open = out_open && drain(fd.as_raw_fd(), &mut o.stdout);
        }
        if let Some(fd) = &err_fd {
            err_open = err_open && drain(fd.as_raw_fd(), &mut o.stderr);
        }
        if let Some(m) = &master {
            drain(m.as_raw_fd(), &mut o.terminal);
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if let Some(m) = &master {
            if let Some(r) = reading_stdin(pid) {
                if answered != Some(r) {
                    // It printed its prompt before it read: take it in first.
                    if let Some(fd) = &err_fd {
                        drain(fd.as_raw_fd(), &mut o.stderr);
                    }
                    let (bytes, shown): (Vec<u8>, Vec<u8>) = match answers.next() {
                        Some(a) => {
                            let mut b = a.clone();
                            b.push(b'\n');
                            (b.clone(), b)
                        }
                        None => (vec![4], b"^D\n".to_vec()),
                    };
                    if matches!(stdin, Stdin::Pty(_)) {
                        o.stderr.extend_from_slice(&shown);
                    }
                    // SAFETY: write to our master fd.
                    unsafe { libc::write(m.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
                    answered = Some(r);
                    typed += 1;
                }
            }
        }
        if t0.elapsed() > RUN_TIMEOUT || typed > 100 {
            o.timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
    };
    // Whatever is left in the pipes (a grandchild holding them open is not waited for long).
    let t1 = Instant::now();
    while (out_open || err_open) && t1.elapsed() < Duration::from_secs(2) {
        if let Some(fd) = &out_fd {
            out_open = out_open && drain(fd.as_raw_fd(), &mut o.stdout);
        }
        if let Some(fd) = &err_fd {
            err_open = err_open && drain(fd.as_raw_fd(), &mut o.stderr);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if let Some(m) = &master {
        drain(m.as_raw_fd(), &mut o.terminal);
    }
    o.code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    o
}

/// The namespace script of `util::run_in_readonly_world`, ending in `exec -a ARGV0 PROG ARGS`,
/// and with the scratch directory really writable (a bind mount of a read-only mount is
/// read-only too until remounted).
const READONLY_WORLD: &str = r#"
set -u
findmnt -rn -o TARGET | sort -u | while IFS= read -r m; do
  mount -o remount,bind,ro "$(printf '%b' "$m")" 2>/dev/null
done
bad=$(awk '{ opt[$5] = $6 } END { for (m in opt) if (opt[m] !~ /^ro(,|$)/) print m }' /proc/self/mountinfo)
if [ -n "$bad" ]; then echo "reclaim-test: still writable: $bad" >&2; exit 99; fi
mount --bind "$RECLAIM_TEST_RW" "$RECLAIM_TEST_RW" || exit 99
# A bind mount inherits the read-only flag of the mount it comes from: make it writable.
mount -o remount,bind,rw "$RECLAIM_TEST_RW" || exit 99
if [ ! -w "$RECLAIM_TEST_RW" ]; then echo "reclaim-test: scratch not writable" >&2; exit 99; fi
cd "$RECLAIM_TEST_CWD" || exit 99
unset RECLAIM_TEST_RW RECLAIM_TEST_CWD
a0=$1; shift
exec -a "$a0" "$@"
"#;

// ---------------------------------------------------------------------------------------------
// The world: one scratch directory per test, with the file systems scenarios ask for.

pub struct World {
    pub scratch: Scratch,
    pub caps: Caps,
    /// The scenarios' tmpfs, ext4, xfs and btrfs volumes, once tried.
    tmpfs: Option<Result<Volume, String>>,
    ext4: Option<Result<Volume, String>>,
    xfs: Option<Result<Volume, String>>,
    btrfs: Option<Result<Volume, String>>,
    n: u64,
    /// Run this instead of reclaim on the second side (the harness's self-check runs GNU
    /// against itself).
    pub program: Option<PathBuf>,
}

/// The result of one scenario.
pub struct Compared {
    pub gnu: Outcome,
    pub reclaim: Outcome,
    pub gnu_tree: SideSnapshot,
    pub reclaim_tree: SideSnapshot,
    /// Which of exit, stdout, stderr, terminal, tree differ (empty: a match).
    pub differs: Vec<&'static str>,
    /// `--help`/`--version`: their stdout need only begin as GNU's does (`Usage: rm `, `rm `).
    pub loose_stdout: bool,
}

impl World {
    /// The world of the test of `scratch` (made by `scratch!()`).
    pub fn new(scratch: Scratch) -> World {
        // Another uid must be able to reach its side.
        fs::set_permissions(scratch.root(), fs::Permissions::from_mode(0o755)).unwrap();
        World {
            scratch,
            caps: Caps::detect(),
            tmpfs: None,
            ext4: None,
            xfs: None,
            btrfs: None,
            n: 0,
            program: None,
        }
    }

    /// Where the scenarios on `fs_kind` live; Err: why that file system cannot be had here.
    fn base(&mut self, fs_kind: Fs) -> Result<PathBuf, String> {
        let (volume, rel) = match fs_kind {
            Fs::Host => return Ok(self.scratch.path("host")),
            Fs::Tmpfs => (&mut self.tmpfs, "tmpfs"),
            Fs::Ext4 => (&mut self.ext4, "ext4"),
            Fs::Xfs => (&mut self.xfs, "xfs"),
            Fs::Btrfs => (&mut self.btrfs, "btrfs"),
        };
        let s = &self.scratch;
        let open = |v: Volume| {
            fs::set_permissions(s.path(rel), fs::Permissions::from_mode(0o755)).unwrap();
            v
        };
        let volume = volume.get_or_insert_with(|| match fs_kind {
            Fs::Ext4 => Volume::ext4(s, rel, 128 << 20, 16384).map(open),
            Fs::Xfs => Volume::xfs(s, rel, 320 << 20).map(open),
            Fs::Btrfs => Volume::btrfs(s, rel, 256 << 20, "").map(open),
            _ => Volume::tmpfs_with(s, rel, "size=64m,mode=0755"),
        });
        volume.as_ref().map(|_| s.path(rel)).map_err(Clone::clone)
    }

    /// Runs `sc` on both sides. Err: why it cannot run here (skipped).
    pub fn run(&mut self, sc: &Scenario) -> Result<Compared, NotRun> {
        if let Some(why) = sc.unmet_need(&self.caps) {
            return Err(NotRun::Skipped(why.to_string()));
        }
        if gnu_before_9_2() && sc.newer_gnu_differs(&self.caps) {
            return Err(NotRun::Newer);
        }
        let base = self
            .base(sc.fs)
            .map_err(|why| NotRun::Skipped(format!("{:?} cannot be mounted: {why}", sc.fs)))?;
        self.scratch.assert_marker();
        self.n += 1;
        let dir = base.join(format!("s{}", self.n));
        fs::create_dir_all(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        self.scratch.assert_inside(&dir);
        let reclaim = match &self.program {
            Some(p) => p.clone(),
            None => fs::canonicalize(util::reclaim_bin()).expect("the reclaim binary exists"),
        };
        let mut g = Side::new(dir.join("g"), &gnu_rm());
        let mut r = Side::new(dir.join("r"), &reclaim);
        g.build(&self.scratch, sc);
        r.build(&self.scratch, sc);
        let ro_world = self.check_args(sc, &g)? | self.check_args(sc, &r)?;
        let gnu = self.run_side(sc, &g, ro_world);
        let rec = self.run_side(sc, &r, ro_world);
        if gnu.no_namespace || rec.no_namespace {
            return Err(NotRun::Skipped(
                "the read-only namespace cannot be set up".into(),
            ));
        }
        let gnu_tree = snapshot_side(&g.root);
        let reclaim_tree = snapshot_side(&r.root);
        drop(g);
        drop(r);
        let _ = fs::remove_dir(&dir);
        // argv[0] may be a path (`/x/bin/rm`): "Usage: /x/bin/rm [OPTION]...".
        let first_line = |o: &[u8]| o.split(|&b| b == b'\n').next().unwrap_or_default().to_vec();
        let helpish = |o: &[u8]| o.starts_with(b"Usage: ") || o.starts_with(b"rm (GNU coreutils)");
        let loose_stdout = gnu.code == 0 && (helpish(&gnu.stdout) || helpish(&gnu.terminal));
        let mut differs = Vec::new();
        if gnu.code != rec.code || gnu.timed_out != rec.timed_out {
            differs.push("exit");
        }
        let stdout_same = if loose_stdout && helpish(&gnu.stdout) {
            // `--help` must begin as GNU's does ("Usage: rm "), `--version` name `rm` first
            // ("rm (GNU coreutils) 9.1" / "rm (reclaim) 0.1.0"); the rest may differ.
            if gnu.stdout.starts_with(b"Usage: ") {
                first_line(&rec.stdout) == first_line(&gnu.stdout)
            } else {
                rec.stdout.starts_with(b"rm ")
            }
        } else {
            gnu.stdout == rec.stdout
        };
        if !stdout_same {
            differs.push("stdout");
        }
        if gnu.stderr != rec.stderr {
            differs.push("stderr");
        }
        let terminal_same = if loose_stdout && gnu.terminal.starts_with(b"Usage: ") {
            // The help text went to the terminal: the same first line.
            first_line(&gnu.terminal) == first_line(&rec.terminal)
        } else if loose_stdout && helpish(&gnu.terminal) {
            // The version: "rm (GNU coreutils) 9.1" / "rm (reclaim) 0.1.0".
            rec.terminal.starts_with(b"rm ")
        } else {
            gnu.terminal == rec.terminal
        };
        if !terminal_same && matches!(sc.stdin, Stdin::Terminal(_)) {
            differs.push("terminal");
        }
        if gnu_tree != reclaim_tree {
            differs.push("tree");
        }
        Ok(Compared {
            gnu,
            reclaim: rec,
            gnu_tree,
            reclaim_tree,
            differs,
            loose_stdout,
        })
    }

    /// Checks every argument (with `@W@` filled in) against the side; Ok(true) if the
    /// scenario must run in the read-only world.
    fn check_args(&self, sc: &Scenario, side: &Side) -> Result<bool, NotRun> {
        let mut ro = sc.has_root_link();
        for a in &sc.args {
            let a = side.subst(a);
            match classify(&side.root, &side.w(), &a) {
                Where::Inside => {}
                Where::Root => ro = true,
                Where::Outside(p) => {
                    return Err(NotRun::Refused(format!(
                        "argument {} resolves to {}, outside {}: refusing",
                        String::from_utf8_lossy(&a),
                        p.display(),
                        side.root.display()
                    )))
                }
            }
        }
        if ro {
            if sc.may_not_preserve_root() {
                return Err(NotRun::Refused(
                    "a scenario that reaches / with --no-preserve-root: refusing".into(),
                ));
            }
            if !self.caps.root {
                return Err(NotRun::Skipped(
                    "it reaches / (needs root for a read-only namespace)".into(),
                ));
            }
            if sc.user != User::Me || sc.fs != Fs::Host || sc.has_mounts() {
                return Err(NotRun::Skipped(
                    "it reaches /: only as root on Fs::Host without mounts".into(),
                ));
            }
        }
        Ok(ro)
    }

    fn run_side(&self, sc: &Scenario, side: &Side, ro_world: bool) -> Outcome {
        let prog = side.root.join("bin/rm");
        let argv0: OsString = if sc.argv0_path {
            prog.clone().into()
        } else {
            "rm".into()
        };
        let args: Vec<OsString> = sc
            .args
            .iter()
            .map(|a| OsString::from_vec(side.subst(a)))
            .collect();
        let mut cmd;
        if ro_world {
            cmd = Command::new("unshare");
            cmd.args([
                "--mount",
                "--propagation",
                "private",
                "bash",
                "-c",
                READONLY_WORLD,
                "bash",
            ])
            .arg(&argv0)
            .arg(&prog)
            .args(&args);
        } else {
            cmd = Command::new(&prog);
            cmd.arg0(&argv0).args(&args).current_dir(side.w());
        }
        cmd.env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env("LC_ALL", "C")
            .env("RECLAIM_CONFIG", "")
            .env("RECLAIM_UNDER", &side.root)
            .env("HOME", &side.root)
            .env("TERM", "dumb");
        if ro_world {
            cmd.env("RECLAIM_TEST_RW", self.scratch.root())
                .env("RECLAIM_TEST_CWD", side.w());
        }
        if sc.user == User::Other {
            // std drops the supplementary groups too (setgroups(0)) when root sets a uid.
            cmd.uid(OTHER_UID).gid(OTHER_UID);
        }
        let mut o = run_process(&mut cmd, &sc.stdin);
        if ro_world && o.code == 99 && o.stderr.starts_with(b"reclaim-test:") {
            o.no_namespace = true;
        }
        let s = side.root.as_os_str().as_bytes();
        o.stdout = replace(&o.stdout, s, b"<S>");
        o.stderr = replace(&o.stderr, s, b"<S>");
        o.terminal = replace(&o.terminal, s, b"<S>");
        o
    }
}

// ---------------------------------------------------------------------------------------------
// Showing a scenario and a difference.

/// A byte string as a shell word (`$'…'` when it holds bytes that are not plain text).
pub fn sh_quote(b: &[u8]) -> String {
    if !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-_./=@%+,:".contains(c))
    {
        return String::from_utf8_lossy(b).into_owned();
    }
    if b.iter().all(|&c| (0x20..0x7f).contains(&c) && c != b'\'') {
        return format!("'{}'", String::from_utf8_lossy(b));
    }
    let mut s = String::from("$'");
    for &c in b {
        match c {
            b'\'' => s.push_str("\\'"),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            0x20..=0x7e => s.push(c as char),
            _ => {
                let _ = write!(s, "\\x{c:02x}");
            }
        }
    }
    s.push('\'');
    s
}

/// A shell script that rebuilds the scenario in an empty directory and runs GNU `rm` on it.
pub fn repro(sc: &Scenario) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# fs: {:?}, user: {}, stdin: {}",
        sc.fs,
        match sc.user {
            User::Me => "the test's uid".to_string(),
            User::Other => OTHER_UID.to_string(),
        },
        match &sc.stdin {
            Stdin::Null => "/dev/null".to_string(),
            Stdin::Pty(a) => format!("a pty (stdout, stderr pipes), answers {}", answers_text(a)),
            Stdin::Terminal(a) => format!("a pty for all three, answers {}", answers_text(a)),
        }
    );
    if sc.argv0_path {
        s.push_str("mkdir bin && ln -s /usr/bin/rm bin/rm\n");
    }
    s.push_str("mkdir w && cd w\n");
    for n in &sc.nodes {
        let p = sh_quote(&n.path);
        match &n.kind {
            Kind::File(c) if c.is_empty() => {
                let _ = writeln!(s, ": > {p}");
            }
            Kind::File(c) => {
                let _ = writeln!(s, "printf %s {} > {p}", sh_quote(c));
            }
            Kind::Dir => {
                let _ = writeln!(s, "mkdir {p}");
            }
            Kind::Mount => {
                let _ = writeln!(s, "mkdir {p} && mount -t tmpfs none {p}");
            }
            Kind::Link(t) => {
                let t = replace(t, W.as_bytes(), b"$PWD");
                let tq = if t.starts_with(b"$PWD") {
                    format!("\"{}\"", String::from_utf8_lossy(&t))
                } else {
                    sh_quote(&t)
                };
                let _ = writeln!(s, "ln -s {tq} {p}");
            }
        }
    }
    if sc.user == User::Other {
        let _ = writeln!(s, "chown -hR {OTHER_UID}:{OTHER_UID} .");
    }
    for n in sc.nodes.iter().rev() {
        if !matches!(n.kind, Kind::Link(_)) && n.mode != 0o644 && n.mode != 0o755 {
            let _ = writeln!(s, "chmod {:04o} {}", n.mode, sh_quote(&n.path));
        }
    }
    if sc.w_mode != 0o755 {
        let _ = writeln!(s, "chmod {:04o} .", sc.w_mode);
    }
    for n in &sc.nodes {
        match n.attr {
            Attr::None => {}
            Attr::Immutable => {
                let _ = writeln!(s, "chattr +i {}", sh_quote(&n.path));
            }
            Attr::AppendOnly => {
                let _ = writeln!(s, "chattr +a {}", sh_quote(&n.path));
            }
        }
    }
    let mut cmd = String::new();
    if sc.user == User::Other {
        let _ = write!(
            cmd,
            "setpriv --reuid={OTHER_UID} --regid={OTHER_UID} --clear-groups -- "
        );
    }
    cmd.push_str(&command_line(sc));
    match sc.stdin {
        Stdin::Null => {
            let _ = writeln!(s, "LC_ALL=C {cmd} < /dev/null; echo \"exit $?\"");
        }
        _ => {
            let _ = writeln!(s, "LC_ALL=C {cmd}; echo \"exit $?\"   # on a terminal");
        }
    }
    s
}

fn answers_text(a: &[Vec<u8>]) -> String {
    let mut v: Vec<String> = a.iter().map(|x| sh_quote(x)).collect();
    v.push("then ^D".into());
    v.join(" ")
}

/// The command line as a shell command run in `w` (`@W@` written as `$PWD`).
pub fn command_line(sc: &Scenario) -> String {
    let mut s = String::from(if sc.argv0_path {
        "\"$(dirname \"$PWD\")\"/bin/rm"
    } else {
        "rm"
    });
    for a in &sc.args {
        s.push(' ');
        match a.strip_prefix(W.as_bytes()) {
            Some(rest) => {
                s.push_str("\"$PWD\"");
                s.push_str(&sh_quote(rest));
            }
            None => s.push_str(&sh_quote(a)),
        }
    }
    s
}

fn visible_lines(b: &[u8]) -> Vec<String> {
    if b.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<String> = b
        .split(|&c| c == b'\n')
        .map(|l| {
            let mut s = String::new();
            for &c in l {
                match c {
                    b'\t' => s.push_str("\\t"),
                    b'\r' => s.push_str("\\r"),
                    0x20..=0x7e => s.push(c as char),
                    _ => {
                        let _ = write!(s, "\\x{c:02x}");
                    }
                }
            }
            s
        })
        .collect();
    if b.ends_with(b"\n") {
        lines.pop();
    } else if let Some(l) = lines.last_mut() {
        l.push_str("⟨no newline⟩");
    }
    lines
}

fn side_by_side(out: &mut String, title: &str, a: &[u8], b: &[u8]) {
    let (la, lb) = (visible_lines(a), visible_lines(b));
    let width = la
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(20, 70);
    let mark = if a == b { "same" } else { "DIFFERENT" };
    let _ = writeln!(out, "--- {title} ({mark})");
    let _ = writeln!(out, "  {:<width$} | reclaim as rm", "GNU rm");
    for i in 0..la.len().max(lb.len()) {
        let l = la.get(i).map(String::as_str).unwrap_or("");
        let r = lb.get(i).map(String::as_str).unwrap_or("");
        let flag = if la.get(i) == lb.get(i) { ' ' } else { '*' };
        let _ = writeln!(out, "{flag} {l:<width$} | {r}");
    }
}

fn snap_text(s: &Snap) -> String {
    match s {
        Snap::Dir(m) => format!("dir {m:04o}"),
        Snap::File(m, Some(c)) => format!("file {m:04o} {:?}", String::from_utf8_lossy(c)),
        Snap::File(m, None) => format!("file {m:04o} (unreadable)"),
        Snap::Link(t) => format!("-> {}", String::from_utf8_lossy(t)),
        Snap::Other(m) => format!("other {m:04o}"),
    }
}

/// A full report of one scenario: the reproduction, both outputs side by side, the trees.
pub fn explain(sc: &Scenario, c: &Compared) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "=== scenario (reproduce with sh, as root, in an empty directory):"
    );
    for l in repro(sc).lines() {
        let _ = writeln!(s, "    {l}");
    }
    let _ = writeln!(
        s,
        "=== differs in: {}",
        if c.differs.is_empty() {
            "nothing".to_string()
        } else {
            c.differs.join(", ")
        }
    );
    let code = |o: &Outcome| {
        if o.timed_out {
            format!("{} (timed out, killed)", o.code)
        } else {
            o.code.to_string()
        }
    };
    let _ = writeln!(
        s,
        "--- exit: GNU rm {} | reclaim as rm {}",
        code(&c.gnu),
        code(&c.reclaim)
    );
    if c.loose_stdout {
        let _ = writeln!(
            s,
            "    (--help/--version: stdout need only begin with \"Usage: rm \" / \"rm \")"
        );
    }
    side_by_side(&mut s, "stdout", &c.gnu.stdout, &c.reclaim.stdout);
    side_by_side(
        &mut s,
        "stderr (answers typed shown where they were read)",
        &c.gnu.stderr,
        &c.reclaim.stderr,
    );
    if matches!(sc.stdin, Stdin::Terminal(_)) {
        side_by_side(&mut s, "terminal", &c.gnu.terminal, &c.reclaim.terminal);
    }
    let _ = writeln!(
        s,
        "--- tree after (w/ and bin/, <S> = the side's directory)"
    );
    let keys: std::collections::BTreeSet<&Vec<u8>> =
        c.gnu_tree.keys().chain(c.reclaim_tree.keys()).collect();
    for k in keys {
        let (a, b) = (c.gnu_tree.get(k), c.reclaim_tree.get(k));
        let show = |x: Option<&Snap>| x.map(snap_text).unwrap_or_else(|| "(absent)".into());
        let name = if k.is_empty() {
            ".".to_string()
        } else {
            String::from_utf8_lossy(k).into_owned()
        };
        if a == b {
            let _ = writeln!(s, "  {name}: {}", show(a));
        } else {
            let _ = writeln!(s, "* {name}: GNU {} | reclaim {}", show(a), show(b));
        }
    }
    s
}

/// The kind of behaviour a scenario exercises, judged from what GNU did (for the summary).
pub fn category(_sc: &Scenario, c: &Compared) -> &'static str {
    let e = &c.gnu.stderr;
    let has = |needle: &[u8]| e.windows(needle.len()).any(|w| w == needle);
    if c.loose_stdout {
        "--help/--version"
    } else if has(b"Try 'rm --help'")
        || has(b"you may not abbreviate")
        || has(b"unrecognized --preserve-root")
    {
        "usage error"
    } else if has(b"? ") || (c.gnu.terminal.windows(2).any(|w| w == b"? ")) {
        "prompts"
    } else if has(b"dangerous to operate recursively") {
        "refusing /"
    } else if has(b"refusing to remove '.' or '..'") {
        "refusing . and .."
    } else if has(b"different device") {
        "mount points"
    } else if c.gnu.code != 0 && !c.gnu.stdout.is_empty() {
        "-v output with errors"
    } else if c.gnu.code != 0 {
        "errors"
    } else if !c.gnu.stdout.is_empty() {
        "-v output"
    } else {
        "silent success"
    }
}

/// Size of a scenario (for picking the smallest example of a category).
pub fn weight(sc: &Scenario) -> usize {
    sc.nodes.len() * 4 + sc.args.len() * 3 + sc.stdin.answers().len()
}

/// Runs `sc`, checks with `expect` that GNU behaves as the scenario is meant to show (the
/// target), then that reclaim as `rm` agrees. Ok(None) (recorded as a skip in part) if it cannot run
/// here; Err: the full report of what went wrong.
pub fn verdict(
    world: &mut World,
    sc: &Scenario,
    expect: impl FnOnce(&Outcome, &SideSnapshot) -> Result<(), String>,
) -> Result<Option<Compared>, String> {
    let test = &world.scratch.test().to_string();
    match world.run(sc) {
        Err(NotRun::Skipped(why)) => {
            util::skipped(test, &format!("in part: a scenario: {why}"));
            Ok(None)
        }
        Err(NotRun::Refused(why)) => Err(format!("{test}: {why}")),
        Err(NotRun::Newer) => Ok(None),
        Ok(c) => {
            if let Err(e) = expect(&c.gnu, &c.gnu_tree) {
                return Err(format!(
                    "{test}: GNU rm itself does not do what this scenario expects ({e})\n{}",
                    explain(sc, &c)
                ));
            }
            if !c.differs.is_empty() {
                return Err(format!(
                    "{test}: reclaim as rm differs from GNU rm\n{}",
                    explain(sc, &c)
                ));
            }
            Ok(Some(c))
        }
    }
}

/// `verdict`, panicking on a difference.
#[track_caller]
pub fn check(
    world: &mut World,
    sc: &Scenario,
    expect: impl FnOnce(&Outcome, &SideSnapshot) -> Result<(), String>,
) -> Option<Compared> {
    verdict(world, sc, expect).unwrap_or_else(|e| panic!("{e}"))
}

/// Why a scenario did not run.
#[derive(Debug, Clone)]
pub enum NotRun {
    /// The machine cannot run it (not root, no ext4, no namespace).
    Skipped(String),
    /// It would reach outside its side directory (or / without the failsafe).
    Refused(String),
    /// The reference `rm` is older than coreutils 9.2, which changed what this scenario
    /// shows (`-d` and a directory its user may not read); reclaim follows 9.2+.
    Newer,
}
