//! Small files read and written where someone else may have been first, as hostile input: a
//! trash's records, the configuration, the trash registry, man pages, state files. A file is
//! opened only after `fstat` of an `O_PATH` handle (opening it so has no side effect, whatever
//! it is) proved it is a regular file of an expected owner (with one link, where that matters)
//! of bounded size, and then `O_NONBLOCK` through `/proc/self/fd`; it is read up to its bound
//! and no further. A name is never opened for writing if someone else could have created it
//! first: new files are made with `O_CREAT|O_EXCL|O_NOFOLLOW`, and a file that replaces another
//! is written under a fresh random name and renamed over it.

use std::ffi::{CStr, CString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

/// The most a record or state file may hold.
pub const MAX_BYTES: u64 = 64 << 10;

/// Why a file read as hostile input cannot be used.
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
/// effect whatever it is), checked to be what `want` says.
pub fn checked(dir: impl AsFd, name: &CStr, want: &Expect<'_>) -> Result<OwnedFd, Bad> {
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
    match rustix::fs::openat(
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

/// Opens the very inode `path_fd` refers to (through `/proc/self/fd`, so no name can be
/// swapped in between), with `flags` (and `O_NONBLOCK|O_NOCTTY|O_CLOEXEC`).
pub fn reopen(path_fd: &OwnedFd, flags: OFlags) -> Result<OwnedFd, Bad> {
    let proc = format!("/proc/self/fd/{}", path_fd.as_raw_fd());
    rustix::fs::open(
        proc.as_str(),
        flags | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(Bad::Os)
}

/// The contents of `name` in `dir`, if it is what `want` says (see `Expect`).
pub fn read_checked(dir: impl AsFd, name: &CStr, want: &Expect<'_>) -> Result<Vec<u8>, Bad> {
    let path_fd = checked(dir, name, want)?;
    read_bounded(&path_fd, want.max)
}

/// The contents of the file at `path`, if it is what `want` says: its directory is opened by
/// path (the caller trusts the way there), the file itself never through a symlink.
pub fn read_path(path: &std::path::Path, want: &Expect<'_>) -> Result<Vec<u8>, Bad> {
    let (dir, name) = match split_path(path) {
        Ok(v) => v,
        Err(Errno::NOENT) => return Err(Bad::Missing),
        Err(e) => return Err(Bad::Os(e)),
    };
    read_checked(&dir, &name, want)
}

/// The directory of `path` opened by path as `O_PATH` (following symlinks, as `rm` does for
/// the parents of its arguments: the caller trusts the way there) and its last component,
/// which is never followed. `EISDIR` for a path without a last component (`/`, `a/..`).
pub fn split_path(path: &std::path::Path) -> Result<(OwnedFd, CString), Errno> {
    use std::os::unix::ffi::OsStrExt;
    let name = path
        .file_name()
        .filter(|n| n.as_bytes() != b".." && n.as_bytes() != b".")
        .ok_or(Errno::ISDIR)?;
    let name = CString::new(name.as_bytes()).map_err(|_| Errno::INVAL)?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    Ok((super::open_dir_path_only(parent)?, name))
}

/// The caller's effective uid.
fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether the file `st` describes, in the directory `dir`, may be trusted by the caller: in a
/// directory others may move names in (`others_may_move_names`), only a file of the caller's
/// own or root's.
fn owner_rule(dir: &OwnedFd, st: &rustix::fs::Stat) -> Result<(), Bad> {
    let me = me();
    let dir_st = rustix::fs::fstat(dir).map_err(Bad::Os)?;
    if super::others_may_move_names(&dir_st, me).is_some() && st.st_uid != me && st.st_uid != 0 {
        return Err(Bad::NotOwners {
            found: st.st_uid,
            owners: if me == 0 { vec![0] } else { vec![me, 0] },
        });
    }
    Ok(())
}

/// Opens the output file `path` a user named (`--list FILE`, `--trace FILE`) as a shell
/// redirect would, but never as an attacker would have it: its directory is opened by path
/// (the way there is the user's), the file itself is made new (`O_EXCL`, `mode`) or, if it
/// exists, looked at first through an `O_PATH` handle (no side effect, whatever it is) and
/// used only if it is a regular file with one link (in a directory others may move names in,
/// the caller's or root's own) or a character device (`/dev/null`); a symbolic link, a FIFO
/// (a reader that never reads would stop the run), a block device, a socket or a directory is
/// refused. Then opened `O_WRONLY|O_NONBLOCK|O_NOCTTY` through `/proc/self/fd`, and a regular
/// file truncated unless `append`. The fd and what it is.
pub fn open_output(
    path: &std::path::Path,
    mode: u32,
    append: bool,
) -> Result<(OwnedFd, rustix::fs::Stat), Bad> {
    let (dir, name) = split_path(path).map_err(Bad::Os)?;
    let extra = if append {
        OFlags::APPEND
    } else {
        OFlags::empty()
    };
    match super::create_at(
        &dir,
        &name,
        OFlags::WRONLY | OFlags::NOCTTY | extra,
        mode,
        false,
    ) {
        Ok(fd) => {
            let st = rustix::fs::fstat(&fd).map_err(Bad::Os)?;
            return Ok((fd, st));
        }
        Err(Errno::EXIST) => {}
        Err(e) => return Err(Bad::Os(e)),
    }
    let path_fd = match rustix::fs::openat(
        &dir,
        &name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(Bad::Missing),
        Err(e) => return Err(Bad::Os(e)),
    };
    let st = rustix::fs::fstat(&path_fd).map_err(Bad::Os)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {
            owner_rule(&dir, &st)?;
            if st.st_nlink != 1 {
                return Err(Bad::Links(st.st_nlink));
            }
        }
        FileType::CharacterDevice => {}
        t => return Err(Bad::NotRegular(type_name(t))),
    }
    let fd = reopen(&path_fd, OFlags::WRONLY | extra)?;
    let now = rustix::fs::fstat(&fd).map_err(Bad::Os)?;
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) {
        return Err(Bad::Os(Errno::STALE));
    }
    if !append && FileType::from_raw_mode(now.st_mode) == FileType::RegularFile {
        rustix::fs::ftruncate(&fd, 0).map_err(Bad::Os)?;
    }
    Ok((fd, now))
}

/// Opens the input file `path` a user named (`--from FILE`) for reading: its directory by
/// path (the way there is the user's); the file itself never through a symlink, except one in
/// a directory only the caller or root may change (`/dev/fd/N` of a process substitution, a
/// link of root's); looked at first through an `O_PATH` handle, and used only if it is a
/// regular file or a pipe (in a directory others may move names in, or behind a link, the
/// caller's or root's own). Then opened `O_RDONLY` through `/proc/self/fd`, blocking (a pipe's
/// writer may be slow). The fd and what it is; a device is `Bad::NotRegular`.
pub fn open_input(path: &std::path::Path) -> Result<(OwnedFd, rustix::fs::Stat), Bad> {
    let (dir, name) = split_path(path).map_err(|e| match e {
        Errno::NOENT => Bad::Missing,
        e => Bad::Os(e),
    })?;
    let look = |flags: OFlags| match rustix::fs::openat(
        &dir,
        &name,
        OFlags::PATH | OFlags::CLOEXEC | flags,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT) => Err(Bad::Missing),
        Err(e) => Err(Bad::Os(e)),
    };
    let mut path_fd = look(OFlags::NOFOLLOW)?;
    let mut st = rustix::fs::fstat(&path_fd).map_err(Bad::Os)?;
    let mut linked = false;
    if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
        let dir_st = rustix::fs::fstat(&dir).map_err(Bad::Os)?;
        if super::others_may_move_names(&dir_st, me()).is_some() {
            return Err(Bad::NotRegular("symbolic link"));
        }
        path_fd = look(OFlags::empty())?;
        st = rustix::fs::fstat(&path_fd).map_err(Bad::Os)?;
        linked = true;
    }
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile | FileType::Fifo => {}
        FileType::Directory => return Err(Bad::Os(Errno::ISDIR)),
        t => return Err(Bad::NotRegular(type_name(t))),
    }
    if linked {
        if st.st_uid != me() && st.st_uid != 0 {
            return Err(Bad::NotOwners {
                found: st.st_uid,
                owners: vec![me(), 0],
            });
        }
    } else {
        owner_rule(&dir, &st)?;
    }
    let fd = reopen(&path_fd, OFlags::RDONLY)?;
    // Blocking from here: a pipe is read as its writer writes.
    rustix::fs::fcntl_setfl(&fd, OFlags::RDONLY).map_err(Bad::Os)?;
    Ok((fd, st))
}

/// Reads the inode `path_fd` refers to (opened again `O_NONBLOCK`), at most `max` bytes.
pub fn read_bounded(path_fd: &OwnedFd, max: u64) -> Result<Vec<u8>, Bad> {
    let fd = reopen(path_fd, OFlags::RDONLY)?;
    read_fd_bounded(fd, max)
}

/// Reads `fd` from its offset to its end, but at most `max` bytes: `Bad::Larger` beyond (only
/// `max + 1` bytes are ever held).
pub fn read_fd_bounded(fd: impl Into<std::fs::File>, max: u64) -> Result<Vec<u8>, Bad> {
    let mut text = Vec::new();
    fd.into()
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

/// Writes `bytes` as a new file `name` in `dir` (`O_EXCL`: fails if the name exists), mode
/// 0600; `sync` fsyncs it.
pub fn write_new(dir: impl AsFd, name: &CStr, bytes: &[u8], sync: bool) -> Result<(), Errno> {
    write_new_mode(dir, name, bytes, sync, 0o600)
}

/// `write_new` with the file's `mode` (less the umask).
pub fn write_new_mode(
    dir: impl AsFd,
    name: &CStr,
    bytes: &[u8],
    sync: bool,
    mode: u32,
) -> Result<(), Errno> {
    let fd = super::create_at(dir, name, OFlags::WRONLY, mode, false)?;
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
    super::one_name(name)?;
    let tmp = temp_name(name);
    write_new_mode(dir, &tmp, bytes, false, mode).inspect_err(|_| {
        let _ = super::unlink_at(dir, &tmp);
    })?;
    rustix::fs::renameat(dir, &tmp, dir, name).inspect_err(|_| {
        let _ = super::unlink_at(dir, &tmp);
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
    match super::mkdir_at(dir, name, mode) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(Bad::Os(e)),
    }
    let fd = super::open_dir_at(dir, name).map_err(Bad::Os)?;
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
pub fn temp_name(name: &CStr) -> CString {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn read_checked_takes_only_what_is_expected() {
        let d = tempfile::tempdir().unwrap();
        let dir = super::super::open_dir_path(d.path()).unwrap();
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
        let dir = super::super::open_dir_path(d.path()).unwrap();
        std::fs::write(d.path().join("precious"), b"keep").unwrap();
        std::fs::hard_link(d.path().join("precious"), d.path().join("state")).unwrap();
        replace(&dir, c"state", b"new").unwrap();
        assert_eq!(std::fs::read(d.path().join("precious")).unwrap(), b"keep");
        assert_eq!(std::fs::read(d.path().join("state")).unwrap(), b"new");
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temp file left behind");
    }

    #[test]
    fn outputs_and_inputs_are_never_links_fifos_or_block_devices() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let dir = super::super::open_dir_path(d.path()).unwrap();
        std::fs::write(d.path().join("secret"), b"keep").unwrap();
        std::os::unix::fs::symlink("secret", d.path().join("link")).unwrap();
        rustix::fs::mknodat(&dir, c"fifo", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        std::fs::hard_link(d.path().join("secret"), d.path().join("hard")).unwrap();
        let out = |n: &str| open_output(&d.path().join(n), 0o600, false).map(|(_, st)| st);
        assert_eq!(out("link").err(), Some(Bad::NotRegular("symbolic link")));
        assert_eq!(out("fifo").err(), Some(Bad::NotRegular("FIFO")));
        assert_eq!(out("hard").err(), Some(Bad::Links(2)));
        assert_eq!(std::fs::read(d.path().join("secret")).unwrap(), b"keep");
        let st = out("new").unwrap();
        assert_eq!(st.st_mode & 0o777, 0o600 & !0o022 & 0o600);
        std::fs::write(d.path().join("old"), b"old text").unwrap();
        out("old").unwrap();
        assert_eq!(std::fs::metadata(d.path().join("old")).unwrap().size(), 0);
        assert!(open_output(Path::new("/dev/null"), 0o600, false).is_ok());
        // Inputs: a link in a directory others may not change is followed; FIFOs are pipes.
        let input = |n: &str| open_input(&d.path().join(n)).map(|(_, st)| st.st_mode);
        assert!(input("link").is_ok());
        assert!(input("fifo").is_ok());
        assert_eq!(input("none").err(), Some(Bad::Missing));
        assert!(matches!(
            open_input(Path::new("/dev/zero")),
            Err(Bad::NotRegular("character device"))
        ));
    }

    #[test]
    fn a_stream_is_read_only_up_to_its_bound() {
        let f = super::super::anonymous(c"t").unwrap();
        (&f).write_all(&[7u8; 100]).unwrap();
        rustix::fs::seek(&f, rustix::fs::SeekFrom::Start(0)).unwrap();
        assert_eq!(
            read_fd_bounded(f, 10),
            Err(Bad::Larger { size: 11, max: 10 })
        );
    }
}
