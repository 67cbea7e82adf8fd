//! Acting in another user's trash with that user's authority (docs/TRUST.md): root's `status`,
//! `reap`, `restore` and `prune` run `reclaim` again as a child process that has dropped to
//! the user's uid, gid and supplementary groups before it executes, and read its JSON. So
//! root's reaper removes exactly what the user could have removed, and never reads, truncates
//! or creates a file in a user's trash with root's authority. The child's output is hostile
//! input too: bounded, parsed, and its messages shown escaped.

use std::ffi::{CStr, OsString};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// Set to `1` to stop `reclaim rm --background` from starting a reaper (`reaper::spawn`); a
/// child run as another user keeps it.
pub const NO_SPAWN_ENV: &str = "RECLAIM_NO_SPAWN";

/// Who a child runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

/// The group of a uid without a passwd entry (the kernel's overflow gid, `nogroup`): such a
/// user gets no group's authority, rather than one guessed from a file it could have chosen.
const NO_GROUP: u32 = 65534;

impl Identity {
    /// `uid` with the primary group and supplementary groups of its passwd entry; without an
    /// entry, the overflow group and no others.
    pub fn of(uid: u32) -> Identity {
        match passwd(uid) {
            Some((name, gid)) => Identity {
                uid,
                gid,
                groups: group_list(&name, gid),
            },
            None => Identity {
                uid,
                gid: NO_GROUP,
                groups: Vec::new(),
            },
        }
    }
}

/// Whether work in a trash of `uid` must go through a child as that user: this process is
/// root and the trash is another user's.
pub fn needed(uid: u32) -> bool {
    rustix::process::geteuid().is_root() && uid != 0
}

/// The user name of `uid` (its passwd entry's), if it has one.
pub fn user_name(uid: u32) -> Option<String> {
    passwd(uid).map(|(name, _)| name.to_string_lossy().into_owned())
}

/// The passwd entry's name and primary gid of `uid`.
fn passwd(uid: u32) -> Option<(std::ffi::CString, u32)> {
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: getpwuid_r writes into `pw` and `buf`, both alive and of the given sizes;
        // `result` points to `pw` or is null.
        let (rc, found, name, gid) = unsafe {
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut result: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwuid_r(
                uid,
                &mut pw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut result,
            );
            let found = !result.is_null() && !pw.pw_name.is_null();
            let name = found.then(|| CStr::from_ptr(pw.pw_name).to_owned());
            (rc, found, name, pw.pw_gid)
        };
        if rc == libc::ERANGE && buf.len() < (1 << 20) {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        return (rc == 0 && found).then(|| (name.expect("found"), gid));
    }
}

/// The groups of user `name` (primary `gid` included), as `initgroups` would set them.
fn group_list(name: &CStr, gid: u32) -> Vec<u32> {
    let mut n: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; n as usize];
        let mut count = n;
        // SAFETY: `groups` has room for `count` entries; getgrouplist writes at most that many
        // and sets `count` to the number it needs.
        let rc = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut count) };
        if rc >= 0 {
            groups.truncate(count.max(0) as usize);
            return groups;
        }
        if count <= n || n > 65536 {
            return vec![gid];
        }
        n = count;
    }
}

/// What a child printed and how it ended.
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
}

/// Why a child could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("cannot start reclaim as uid {uid}: {err}")]
    Spawn { uid: u32, err: std::io::Error },
    #[error("reclaim as uid {uid} printed more than {limit} bytes")]
    TooMuch { uid: u32, limit: usize },
    #[error("reclaim as uid {uid} ended without a result ({how})")]
    NoResult { uid: u32, how: String },
}

/// The most a child's stdout may hold (a status of a huge trash lists at most a capped number
/// of items, so this is never reached honestly).
const MAX_STDOUT: usize = 64 << 20;

/// Runs `reclaim ARGS` as `who` (`None`: as this process's own user), with a clean environment
/// (no config file, no HOME), stdin closed, `/` as its directory, and the parent's death as its
/// SIGTERM. Each line it prints on stderr goes to `on_line` (control characters replaced);
/// stdout is returned whole.
pub fn run(
    who: Option<&Identity>,
    args: &[OsString],
    on_line: &mut dyn FnMut(&str),
) -> Result<Output, ChildError> {
    let uid_shown = who.map_or_else(|| rustix::process::geteuid().as_raw(), |w| w.uid);
    let mut cmd = command(args);
    let drop_to = who.map(|w| (w.uid, w.gid, w.groups.clone()));
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and only makes raw syscalls
    // (no allocation, no locks): set the groups, then the gid, then the uid (in that order, as
    // privileges allow), check root cannot be regained, ask for SIGTERM when the parent dies.
    unsafe {
        cmd.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if let Some((uid, gid, groups)) = &drop_to {
                let (uid, gid) = (*uid, *gid);
                if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
                    return fail();
                }
                if libc::setresgid(gid, gid, gid) != 0 || libc::setresuid(uid, uid, uid) != 0 {
                    return fail();
                }
                if uid != 0 && (libc::setuid(0) == 0 || libc::geteuid() == 0) {
                    return Err(std::io::Error::from_raw_os_error(libc::EPERM));
                }
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return fail();
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|err| ChildError::Spawn {
        uid: uid_shown,
        err,
    })?;
    let _tracked = Tracked::new(child.id());
    let stderr = child.stderr.take().expect("piped");
    let mut stdout = child.stdout.take().expect("piped");
    let read = std::thread::scope(|s| {
        // A thread for stdout (stderr is relayed here): none to be had (EAGAIN) is an error of
        // this child, never a panic.
        let reader = std::thread::Builder::new()
            .name("reclaim-child-out".into())
            .spawn_scoped(s, move || read_capped(&mut stdout))?;
        relay_lines(stderr, on_line);
        Ok(reader.join().unwrap_or_default())
    });
    let (out, too_much) = match read {
        Ok(r) => r,
        Err(err) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ChildError::Spawn {
                uid: uid_shown,
                err,
            });
        }
    };
    if too_much {
        let _ = child.kill();
    }
    let status = child.wait().map_err(|err| ChildError::Spawn {
        uid: uid_shown,
        err,
    })?;
    if too_much {
        return Err(ChildError::TooMuch {
            uid: uid_shown,
            limit: MAX_STDOUT,
        });
    }
    Ok(Output {
        code: status.code(),
        stdout: out,
    })
}

/// `reclaim ARGS` with a clean environment (no config file, no HOME; the locale, and where a
/// test put the logs, kept), stdin closed, `/` as its directory, stdout and stderr piped.
fn command(args: &[OsString]) -> Command {
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0("reclaim")
        .args(args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("RECLAIM_CONFIG", "")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for k in [
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        NO_SPAWN_ENV,
        // Where a reaper's log goes, when a test put it elsewhere.
        crate::sys::logging::journal::SOCKET_ENV,
        crate::sys::logging::syslog::SOCKET_ENV,
    ] {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    cmd
}

/// What `from` gives until its end or an error, and whether it gave more than `MAX_STDOUT`
/// (then it is read no further).
fn read_capped(from: &mut impl Read) -> (Vec<u8>, bool) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 << 10];
    loop {
        match from.read(&mut chunk) {
            Ok(0) | Err(_) => return (buf, false),
            Ok(n) if buf.len() + n > MAX_STDOUT => return (buf, true),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The children `run` started that have not been waited for (their pids).
static CHILDREN: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Notes a child as running until dropped.
struct Tracked(u32);

impl Tracked {
    fn new(pid: u32) -> Tracked {
        CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
        Tracked(pid)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| *p != self.0);
    }
}

/// Asks every child `run` started and still waits for to stop (SIGTERM): they stop at a
/// consistent point, as for a stop of their own (a supervisor that is stopping).
pub fn terminate_children() {
    let pids = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    for &pid in pids.iter() {
        // SAFETY: kill(2) takes integers and touches no memory. The pid is a child of ours that
        // `run` has not finished with (removed from the list, under this lock, right after
        // its `wait`).
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    }
}

/// Calls `on_line` for each line read from `r`; a line longer than 4 KiB is cut (and what is
/// cut is dropped), bytes that are not UTF-8 are replaced.
fn relay_lines(r: impl Read, on_line: &mut dyn FnMut(&str)) {
    use std::io::BufRead;
    const MAX_LINE: usize = 4096;
    let mut r = std::io::BufReader::new(r);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r
            .by_ref()
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.last() != Some(&b'\n') && line.len() >= MAX_LINE {
            // Skip the rest of an over-long line.
            let mut rest = Vec::new();
            if r.read_until(b'\n', &mut rest).is_err() {
                return;
            }
        }
        let text = String::from_utf8_lossy(&line);
        let text: String = text
            .trim_end_matches('\n')
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        on_line(&text);
    }
}

/// Runs `reclaim ARGS --json` as `who` and parses the one JSON object it prints (also when it
/// exits 1: the object says what failed).
pub fn run_json<T: serde::de::DeserializeOwned>(
    who: Option<&Identity>,
    args: &[OsString],
    on_line: &mut dyn FnMut(&str),
) -> Result<(T, Option<i32>), ChildError> {
    let out = run(who, args, on_line)?;
    match serde_json::from_slice(&out.stdout) {
        Ok(v) => Ok((v, out.code)),
        Err(e) => Err(ChildError::NoResult {
            uid: who.map_or_else(|| rustix::process::geteuid().as_raw(), |w| w.uid),
            how: match out.code {
                Some(c) => format!("exit {c}, {e}"),
                None => "killed by a signal".into(),
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_without_passwd_entry_gets_no_group() {
        let id = Identity::of(3_999_999_001);
        assert_eq!(id.gid, NO_GROUP);
        assert!(id.groups.is_empty());
    }

    #[test]
    fn root_has_an_entry() {
        let id = Identity::of(0);
        assert_eq!(id.gid, 0);
        assert!(id.groups.contains(&0));
    }

    #[test]
    fn long_and_control_lines_are_tamed() {
        let text = format!("a\x1b[31mb\n{}\nok\n", "x".repeat(10_000));
        let mut lines = Vec::new();
        relay_lines(text.as_bytes(), &mut |l| lines.push(l.to_owned()));
        assert_eq!(lines[0], "a?[31mb");
        assert_eq!(lines[1].len(), 4096);
        assert_eq!(lines[2], "ok");
        assert_eq!(lines.len(), 3);
    }
}
