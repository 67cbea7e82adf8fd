//! The small files reclaim reads and writes where someone else may have been first, as hostile
//! input: a trash's (`meta.json`, `failed.json`, `reaper.json`, `lock`, `reaper.log`), whose
//! owner could have put a FIFO, a device node, a symlink, a hard link to someone else's file or
//! a gigabyte under any of these names; and, generally, every file reclaim writes as root (man
//! pages, the trash registry, state files) or reads from a directory it did not make (the
//! configuration, the registry). A file is opened only after `fstat` of an `O_PATH` handle
//! proved it is a regular file of the expected owner (with one link, where that matters) of
//! bounded size, and then `O_NONBLOCK`; a name is never opened for writing if someone else
//! could have created it first (new files are made relative to a directory fd with
//! `O_CREAT|O_EXCL|O_NOFOLLOW` under a random name, then renamed over the old one). The
//! trash's files are the first users; the general entry points are `read_checked`,
//! `read_path`, `replace_mode` and `open_or_make_dir`.

use std::ffi::{CStr, CString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::fs::{openat, renameat, unlinkat, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// The most a record or state file may hold.
pub const MAX_BYTES: u64 = 64 << 10;

/// Why a file of a trash (or another file read as hostile input) cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Bad {
    #[error("is missing")]
    Missing,
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(Errno),
    #[error("is a {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("is owned by uid {found}, not by the trash's owner (uid {owner})")]
    Owner { found: u32, owner: u32 },
    /// Owned by none of the owners it may have (a file outside a trash).
    #[error("is owned by uid {found}, not by {}", owners_text(.owners))]
    NotOwners { found: u32, owners: Vec<u32> },
    #[error("has {0} hard links (a link to another file)")]
    Links(u64),
    #[error("is {0} bytes, more than a record may hold ({MAX_BYTES})")]
    TooBig(u64),
    /// Larger than the bound the caller gave (a file outside a trash).
    #[error("is {size} bytes, more than it may hold ({max})")]
    Larger { size: u64, max: u64 },
}

fn owners_text(owners: &[u32]) -> String {
    let uids: Vec<String> = owners.iter().map(|u| format!("uid {u}")).collect();
    uids.join(" or ")
}

/// What a file read as hostile input must be: a regular file of one of `owners`, of at most
/// `max` bytes, and, if `one_link`, with no other name (a hard link to someone else's file).
#[derive(Clone, Copy, Debug)]
pub struct Expect<'a> {
    pub owners: &'a [u32],
    pub max: u64,
    pub one_link: bool,
}

/// What a file type is called in messages.
pub fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "file of unknown type",
    }
}

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

/// An `O_PATH` handle on `name` in `dir` (never following a symlink; opening it has no side
/// effect whatever it is), checked to be what `want` says.
fn checked(dir: impl AsFd, name: &CStr, want: &Expect<'_>) -> Result<OwnedFd, Bad> {
    let fd = path_handle(dir, name)?;
    let st = rustix::fs::fstat(&fd).map_err(Bad::Os)?;
    let t = FileType::from_raw_mode(st.st_mode);
    if t != FileType::RegularFile {
        return Err(Bad::NotRegular(type_name(t)));
    }
    if !want.owners.contains(&st.st_uid) {
        return Err(Bad::NotOwners {
            found: st.st_uid,
            owners: want.owners.to_vec(),
        });
    }
    if want.one_link && st.st_nlink != 1 {
        return Err(Bad::Links(st.st_nlink));
    }
    if st.st_size as u64 > want.max {
        return Err(Bad::Larger {
            size: st.st_size as u64,
            max: want.max,
        });
    }
    Ok(fd)
}

/// An `O_PATH` handle on `name` in `dir`, never through a symlink.
fn path_handle(dir: impl AsFd, name: &CStr) -> Result<OwnedFd, Bad> {
    match openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT) => Err(Bad::Missing),
        Err(e) => Err(Bad::Os(e)),
    }
}

/// Opens the very inode `path_fd` refers to (through `/proc/self/fd`, so no name can be
/// swapped in between), with `flags`.
fn reopen(path_fd: &OwnedFd, flags: OFlags) -> Result<OwnedFd, Bad> {
    let proc = format!("/proc/self/fd/{}", path_fd.as_raw_fd());
    rustix::fs::open(
        proc.as_str(),
        flags | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(Bad::Os)
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

/// The contents of `name` in `dir`, if it is what `want` says (see `Expect`).
pub fn read_checked(dir: impl AsFd, name: &CStr, want: &Expect<'_>) -> Result<Vec<u8>, Bad> {
    let path_fd = checked(dir, name, want)?;
    read_bounded(&path_fd, want.max)
}

/// The contents of the file at `path`, if it is what `want` says: its directory is opened by
/// path (the caller trusts the way there), the file itself never through a symlink.
pub fn read_path(path: &std::path::Path, want: &Expect<'_>) -> Result<Vec<u8>, Bad> {
    use std::os::unix::ffi::OsStrExt;
    let name = path.file_name().ok_or(Bad::Os(Errno::ISDIR))?;
    let name = CString::new(name.as_bytes()).map_err(|_| Bad::Os(Errno::INVAL))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let dir = match crate::sys::dirfd::open_dir_path_only(parent) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(Bad::Missing),
        Err(e) => return Err(Bad::Os(e)),
    };
    read_checked(&dir, &name, want)
}

/// `name` in `dir`, opened to read as a stream, if it is a regular file of at most `max`
/// bytes, whoever owns it (for what is only shown, never acted on: `browse --import`); never
/// through a symlink, and nothing else is ever opened (a FIFO, a device).
pub fn open_to_read(dir: impl AsFd, name: &CStr, max: u64) -> Result<std::fs::File, Bad> {
    let path_fd = path_handle(dir, name)?;
    let st = rustix::fs::fstat(&path_fd).map_err(Bad::Os)?;
    let t = FileType::from_raw_mode(st.st_mode);
    if t != FileType::RegularFile {
        return Err(Bad::NotRegular(type_name(t)));
    }
    let size = st.st_size as u64;
    if size > max {
        return Err(Bad::Larger { size, max });
    }
    Ok(std::fs::File::from(reopen(&path_fd, OFlags::RDONLY)?))
}

/// Reads the inode `path_fd` refers to (opened again `O_NONBLOCK`), at most `max` bytes.
fn read_bounded(path_fd: &OwnedFd, max: u64) -> Result<Vec<u8>, Bad> {
    let fd = reopen(path_fd, OFlags::RDONLY)?;
    let mut text = Vec::new();
    std::fs::File::from(fd)
        .take(max + 1)
        .read_to_end(&mut text)
        .map_err(|e| Bad::Os(Errno::from_io_error(&e).unwrap_or(Errno::IO)))?;
    if text.len() as u64 > max {
        return Err(Bad::Larger {
            size: text.len() as u64,
            max,
        });
    }
    Ok(text)
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

/// Writes `bytes` as a new file `name` in `dir` (`O_EXCL`: fails if the name exists), mode
/// 0600; `sync` fsyncs it.
pub fn write_new(dir: impl AsFd, name: &CStr, bytes: &[u8], sync: bool) -> Result<(), Errno> {
    write_new_mode(dir, name, bytes, sync, 0o600)
}

/// `write_new` with the file's `mode` (less the umask).
fn write_new_mode(
    dir: impl AsFd,
    name: &CStr,
    bytes: &[u8],
    sync: bool,
    mode: u32,
) -> Result<(), Errno> {
    let fd = openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    let mut f = std::fs::File::from(fd);
    f.write_all(bytes)
        .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    if sync {
        rustix::fs::fsync(&f)?;
    }
    Ok(())
}

/// Replaces `name` in `dir` with a file holding `bytes`: written under a fresh random name
/// (`O_EXCL`), then renamed over `name`. Whatever `name` was (a hard link to another file, a
/// FIFO) is only unlinked by the rename, never opened or written.
pub fn replace(dir: impl AsFd, name: &CStr, bytes: &[u8]) -> Result<(), Errno> {
    replace_mode(dir, name, bytes, 0o600)
}

/// `replace` with the new file's `mode` (less the umask): a man page, the trash registry.
pub fn replace_mode(dir: impl AsFd, name: &CStr, bytes: &[u8], mode: u32) -> Result<(), Errno> {
    let dir = dir.as_fd();
    let tmp = temp_name(name);
    write_new_mode(dir, &tmp, bytes, false, mode).inspect_err(|_| {
        let _ = unlinkat(dir, &tmp, AtFlags::empty());
    })?;
    renameat(dir, &tmp, dir, name).inspect_err(|_| {
        let _ = unlinkat(dir, &tmp, AtFlags::empty());
    })
}

/// The directory `name` in `dir`, made (with `mode`) if missing, never through a symlink, and
/// only if it belongs to `owner` and no one else may write in it (`Bad::NotOwners`, or
/// `Bad::Os(EACCES)` for a directory others may write): a state directory of one's own.
pub fn open_or_make_dir(
    dir: impl AsFd,
    name: &CStr,
    mode: u32,
    owner: u32,
) -> Result<OwnedFd, Bad> {
    let dir = dir.as_fd();
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(Bad::Os(e)),
    }
    let fd = crate::sys::dirfd::open_dir_at(dir, name).map_err(Bad::Os)?;
    let st = rustix::fs::fstat(&fd).map_err(Bad::Os)?;
    if st.st_uid != owner {
        return Err(Bad::NotOwners {
            found: st.st_uid,
            owners: vec![owner],
        });
    }
    if st.st_mode & 0o022 != 0 {
        return Err(Bad::Os(Errno::ACCESS));
    }
    Ok(fd)
}

/// `.<name>.<random>.tmp`: a name nobody can have made first.
fn temp_name(name: &CStr) -> CString {
    CString::new(format!(".{}.{}.tmp", name.to_string_lossy(), random_hex(8)))
        .expect("no NUL in a temp name")
}

/// `n` random bytes as lowercase hex (from the kernel's generator).
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(k) => filled += k,
            Err(Errno::INTR) => {}
            Err(_) => {
                // No getrandom (very old kernels): time and pid still make a fresh name, and
                // every use is O_EXCL or NOREPLACE, retried on a clash.
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let x = t ^ (u128::from(std::process::id()) << 64);
                for (i, b) in buf.iter_mut().enumerate().skip(filled) {
                    *b = (x >> ((i % 16) * 8)) as u8;
                }
                filled = n;
            }
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// Opens (creating it if missing) a lock file `name` in `dir` to `flock`: an existing one must
/// be a regular file of `owner` (a FIFO, device or link someone planted is refused, never
/// opened).
pub fn open_lock(dir: impl AsFd, name: &CStr, owner: u32) -> Result<OwnedFd, Bad> {
    let dir = dir.as_fd();
    match openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    ) {
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
            renameat(dir, name, dir, &old).map_err(Bad::Os)?;
            return append_log(dir, name, owner, line);
        }
        Err(Bad::Missing) => match openat(
            dir,
            name,
            OFlags::WRONLY
                | OFlags::APPEND
                | OFlags::CREATE
                | OFlags::EXCL
                | OFlags::NOFOLLOW
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
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
    fn read_checked_takes_only_what_is_expected() {
        let d = tempfile::tempdir().unwrap();
        let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
        std::fs::write(d.path().join("conf"), b"a = 1\n").unwrap();
        std::fs::write(d.path().join("other"), b"b = 2\n").unwrap();
        std::fs::hard_link(d.path().join("other"), d.path().join("linked")).unwrap();
        let want = |owners, one_link| Expect {
            owners,
            max: 8,
            one_link,
        };
        let mine = [me()];
        let others = [me() + 1, me() + 2];
        assert_eq!(
            read_checked(&dir, c"conf", &want(&mine, true)).unwrap(),
            b"a = 1\n"
        );
        assert_eq!(
            read_checked(&dir, c"linked", &want(&mine, true)),
            Err(Bad::Links(2))
        );
        assert!(read_checked(&dir, c"linked", &want(&mine, false)).is_ok());
        assert!(matches!(
            read_checked(&dir, c"conf", &want(&others, true)),
            Err(Bad::NotOwners { .. })
        ));
        std::fs::write(d.path().join("long"), [b'x'; 9]).unwrap();
        assert_eq!(
            read_checked(&dir, c"long", &want(&mine, true)),
            Err(Bad::Larger { size: 9, max: 8 })
        );
        rustix::fs::mknodat(&dir, c"fifo", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert_eq!(
            read_path(&d.path().join("fifo"), &want(&mine, true)),
            Err(Bad::NotRegular("FIFO"))
        );
        assert_eq!(
            read_path(&d.path().join("none"), &want(&mine, true)),
            Err(Bad::Missing)
        );
    }

    #[test]
    fn replace_never_writes_through_an_existing_name() {
        let d = tempfile::tempdir().unwrap();
        let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
        std::fs::write(d.path().join("precious"), b"keep").unwrap();
        std::fs::hard_link(d.path().join("precious"), d.path().join("state")).unwrap();
        replace(&dir, c"state", b"new").unwrap();
        assert_eq!(std::fs::read(d.path().join("precious")).unwrap(), b"keep");
        assert_eq!(std::fs::read(d.path().join("state")).unwrap(), b"new");
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temp file left behind");
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
