//! The small files of a trash (`meta.json`, `held.json`, `failed.json`, `reaper.json`, `lock`,
//! `reaper.log`) as hostile input: its owner could have put a FIFO, a device node, a symlink,
//! a hard link to someone else's file or a gigabyte under any of these names. Each is read or
//! written only through the safe-open module (`sys::safeopen::file`: `O_PATH` first, checked
//! by `fstat` to be a regular file of the trash's owner with one link and bounded size, then
//! opened `O_NONBLOCK`; new files `O_CREAT|O_EXCL|O_NOFOLLOW`, replacements renamed over), in
//! the trash's own words. The general entry points are re-exported for the layers above.

use std::ffi::{CStr, CString};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::sys::safeopen::file::{checked, read_bounded, reopen};
pub use crate::sys::safeopen::file::{
    open_or_make_dir, open_to_read, random_hex, read_checked, read_path, replace, replace_mode,
    type_name, write_new, Bad, Expect, MAX_BYTES,
};

/// An `O_PATH` handle on `name` in `dir` (never following a symlink; opening it has no side
/// effect whatever it is), checked to be a regular file of `owner` with one link and at most
/// `max` bytes.
fn checked_path(dir: impl AsFd, name: &CStr, owner: u32, max: u64) -> Result<OwnedFd, Bad> {
    let fd = checked(
        dir,
        name,
        &Expect {
            owners: &[owner],
            max,
            one_link: true,
        },
    );
    match fd {
        // The trash's own wording.
        Err(Bad::NotOwners { found, .. }) => Err(Bad::Owner { found, owner }),
        Err(Bad::Larger { size, .. }) => Err(Bad::TooBig(size)),
        r => r,
    }
}

/// The last `lines` lines of the log `name` in `dir` (a regular file of `owner`, at most the
/// log's cap), read from its last 4 KiB only; control characters are shown as `?`.
pub fn read_log_tail(
    dir: impl AsFd,
    name: &CStr,
    owner: u32,
    lines: usize,
) -> Result<Vec<String>, Bad> {
    const TAIL: u64 = 4096;
    let path_fd = checked_path(dir, name, owner, 2 << 20)?;
    let fd = reopen(&path_fd, OFlags::RDONLY)?;
    let size = rustix::fs::fstat(&fd).map_err(Bad::Os)?.st_size.max(0) as u64;
    let start = size.saturating_sub(TAIL);
    let mut buf = vec![0u8; (size - start) as usize];
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::pread(&fd, &mut buf[got..], start + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(Bad::Os(e)),
        }
    }
    buf.truncate(got);
    let text = String::from_utf8_lossy(&buf);
    let mut all: Vec<&str> = text.lines().collect();
    // A cut first line is not a line.
    if start > 0 && !all.is_empty() {
        all.remove(0);
    }
    Ok(all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|l| {
            l.chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect()
        })
        .collect())
}

/// The contents of `name` in `dir`, if it is a regular file of `owner` of at most `MAX_BYTES`.
pub fn read(dir: impl AsFd, name: &CStr, owner: u32) -> Result<Vec<u8>, Bad> {
    let path_fd = checked_path(dir, name, owner, MAX_BYTES)?;
    match read_bounded(&path_fd, MAX_BYTES) {
        Err(Bad::Larger { size, .. }) => Err(Bad::TooBig(size)),
        r => r,
    }
}

/// A JSON record from `name` in `dir` (see `read`); `Ok(None)` if it is a plain regular file
/// that does not parse (empty after a crash, say): not tampering, just no record.
pub fn read_json<T: serde::de::DeserializeOwned>(
    dir: impl AsFd,
    name: &CStr,
    owner: u32,
) -> Result<Option<T>, Bad> {
    let text = read(dir, name, owner)?;
    Ok(serde_json::from_slice(&text).ok())
}

/// Opens (creating it if missing) a lock file `name` in `dir` to `flock`: an existing one must
/// be a regular file of `owner` (a FIFO, device or link someone planted is refused, never
/// opened).
pub fn open_lock(dir: impl AsFd, name: &CStr, owner: u32) -> Result<OwnedFd, Bad> {
    let dir = dir.as_fd();
    match crate::sys::safeopen::create_at(dir, name, OFlags::RDONLY, 0o600, false) {
        Ok(fd) => return Ok(fd),
        Err(Errno::EXIST) => {}
        Err(e) => return Err(Bad::Os(e)),
    }
    let path_fd = checked_path(dir, name, owner, MAX_BYTES)?;
    reopen(&path_fd, OFlags::RDONLY)
}

/// Appends `line` to the log `name` in `dir` (made if missing; an existing one must be a
/// regular file of `owner`; past `MAX_LOG` it is renamed to `<name>.1` first). Opened and
/// closed for each line, so nothing stays open on the file system between lines.
pub fn append_log(dir: impl AsFd, name: &CStr, owner: u32, line: &str) -> Result<(), Bad> {
    const MAX_LOG: u64 = 1 << 20;
    let dir = dir.as_fd();
    let fd = match checked_path(dir, name, owner, MAX_LOG) {
        Ok(path_fd) => reopen(&path_fd, OFlags::WRONLY | OFlags::APPEND)?,
        Err(Bad::TooBig(_)) => {
            let old = CString::new([name.to_bytes(), b".1"].concat()).expect("no NUL");
            crate::sys::safeopen::rename::plain(dir, name, dir, &old).map_err(Bad::Os)?;
            return append_log(dir, name, owner, line);
        }
        Err(Bad::Missing) => match crate::sys::safeopen::create_at(
            dir,
            name,
            OFlags::WRONLY | OFlags::APPEND,
            0o600,
            false,
        ) {
            Ok(fd) => fd,
            // Made by someone else just now: check it like any existing one.
            Err(Errno::EXIST) => return append_log(dir, name, owner, line),
            Err(e) => return Err(Bad::Os(e)),
        },
        Err(e) => return Err(e),
    };
    let mut text = line.trim_end_matches('\n').to_owned();
    text.push('\n');
    std::fs::File::from(fd)
        .write_all(text.as_bytes())
        .map_err(|e| Bad::Os(Errno::from_io_error(&e).unwrap_or(Errno::IO)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{FileType, Mode};

    fn me() -> u32 {
        rustix::process::geteuid().as_raw()
    }

    #[test]
    fn reads_only_small_regular_files_of_the_owner() {
        let d = tempfile::tempdir().unwrap();
        let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
        std::fs::write(d.path().join("ok"), b"{\"a\":1}").unwrap();
        assert_eq!(read(&dir, c"ok", me()).unwrap(), b"{\"a\":1}");
        assert_eq!(read(&dir, c"nope", me()), Err(Bad::Missing));
        assert!(matches!(
            read(&dir, c"ok", me() + 1),
            Err(Bad::Owner { .. })
        ));
        rustix::fs::mknodat(&dir, c"fifo", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert_eq!(read(&dir, c"fifo", me()), Err(Bad::NotRegular("FIFO")));
        std::os::unix::fs::symlink("ok", d.path().join("link")).unwrap();
        assert_eq!(
            read(&dir, c"link", me()),
            Err(Bad::NotRegular("symbolic link"))
        );
        std::fs::hard_link(d.path().join("ok"), d.path().join("hard")).unwrap();
        assert_eq!(read(&dir, c"hard", me()), Err(Bad::Links(2)));
        let big = std::fs::File::create(d.path().join("big")).unwrap();
        big.set_len(1 << 30).unwrap();
        assert_eq!(read(&dir, c"big", me()), Err(Bad::TooBig(1 << 30)));
    }

    #[test]
    fn lock_and_log_refuse_planted_files() {
        let d = tempfile::tempdir().unwrap();
        let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
        assert!(open_lock(&dir, c"lock", me()).is_ok());
        assert!(open_lock(&dir, c"lock", me()).is_ok(), "an existing one");
        rustix::fs::mknodat(&dir, c"f", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(open_lock(&dir, c"f", me()).is_err());
        assert!(append_log(&dir, c"f", me(), "x").is_err());
        append_log(&dir, c"log", me(), "one").unwrap();
        append_log(&dir, c"log", me(), "two\n").unwrap();
        assert_eq!(std::fs::read(d.path().join("log")).unwrap(), b"one\ntwo\n");
    }
}

/// The parsers of what a trash holds, fed arbitrary bytes: never a panic, and whatever parses
/// is usable (paths come back, sums saturate, names quote on one line).
/// Hostile bytes for the readers of the trash's small files (and what children print): the
/// strategies are shared with the tests of the layers above (`reaper`, `ui::status`).
#[cfg(test)]
pub(crate) mod fuzz {
    use proptest::prelude::*;

    pub(crate) fn json_like() -> impl Strategy<Value = Vec<u8>> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| format!("{f:e}")),
            "[ -~]{0,12}".prop_map(|s| format!("{s:?}")),
            Just("18446744073709551615".into()),
            Just("1e400".into()),
            Just("-1".into()),
        ];
        let keys = prop::sample::select(vec![
            "version",
            "id",
            "original",
            "original_hex",
            "parent_dev",
            "parent_ino",
            "parent",
            "uid",
            "created_unix",
            "grace_until_unix",
            "kind",
            "allocated",
            "files",
            "pacing",
            "attempts",
            "next_attempt_unix",
            "errors",
            "pid",
            "state",
            "trashes",
            "items",
        ]);
        prop::collection::vec((keys, leaf), 0..14).prop_map(|kv| {
            let body: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            format!("{{{}}}", body.join(",")).into_bytes()
        })
    }

    pub(crate) fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![prop::collection::vec(any::<u8>(), 0..300), json_like()]
    }
}
