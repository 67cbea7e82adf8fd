//! The mount table (`/proc/self/mountinfo`): which mount a directory is on, where that mount's
//! top is, and which mounts lie inside a path. Reads only; decides nothing. A question about
//! some mounts reads the table only as far as it must and parses only the lines it asks about
//! (a host with thousands of mounts makes the table long).

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// One line of the mount table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The mount id (`statx`'s `stx_mnt_id`).
    pub id: u64,
    /// The id of the mount it sits on.
    pub parent: u64,
    /// Where it is mounted, in this mount namespace.
    pub point: PathBuf,
    /// The directory of the file system that appears at `point` (`/` unless a bind mount).
    pub root: PathBuf,
    pub fstype: String,
    /// What is mounted (`/dev/loop3`, `tmpfs`, `server:/export`), as the table says.
    pub source: PathBuf,
    /// The file system's own options (`rw,discard,errors=remount-ro`): the last field.
    pub options: String,
}

impl Mount {
    /// Whether the file system discards blocks as it frees them (online discard: `discard` on
    /// ext4 and xfs, `discard` = `discard=sync` on btrfs): each freed byte then costs the
    /// device a discard, sent with the commit that freed it, so freeing costs by bytes, not by
    /// metadata alone (bench/RESULTS.md: 2 GiB stalled a neighbour's fdatasync 0.1-0.5 s).
    /// btrfs's `discard=async` (its default on SSDs) hands them to its own rate-limited worker
    /// instead; `nodiscard` and the absence of the option mean none.
    pub fn online_discard(&self) -> bool {
        self.options
            .split(',')
            .any(|o| o == "discard" || o == "discard=sync")
    }

    /// A file system where a trash may live: anything but the kernel's pseudo file systems
    /// (and automount points, which a look would trigger).
    pub fn may_hold_trash(&self) -> bool {
        !matches!(
            self.fstype.as_str(),
            "proc"
                | "sysfs"
                | "cgroup"
                | "cgroup2"
                | "devpts"
                | "devtmpfs"
                | "mqueue"
                | "debugfs"
                | "tracefs"
                | "securityfs"
                | "pstore"
                | "bpf"
                | "configfs"
                | "fusectl"
                | "binfmt_misc"
                | "autofs"
                | "hugetlbfs"
                | "nsfs"
                | "rpc_pipefs"
                | "efivarfs"
                | "selinuxfs"
                | "squashfs"
                | "iso9660"
                | "ramfs"
        )
    }

    /// A local file system with Unix permissions: looking at it cannot hang on a server or a
    /// daemon (network and FUSE file systems are looked at with a deadline).
    pub fn is_local(&self) -> bool {
        matches!(
            self.fstype.as_str(),
            "ext2"
                | "ext3"
                | "ext4"
                | "xfs"
                | "btrfs"
                | "tmpfs"
                | "f2fs"
                | "zfs"
                | "bcachefs"
                | "jfs"
                | "reiserfs"
                | "nilfs2"
                | "overlay"
        )
    }
}

/// Every mount of this mount namespace (empty if the table cannot be read).
pub fn all() -> Vec<Mount> {
    crate::sys::safeopen::kernel::read("/proc/self/mountinfo")
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// The lines of the mount table, one at a time, until `f` returns `Some` (or the table ends).
fn find_line<T>(mut f: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
    use std::io::BufRead;
    let table = crate::sys::safeopen::kernel::open("/proc/self/mountinfo").ok()?;
    let mut lines = std::io::BufReader::with_capacity(16 * 1024, table);
    let mut line = Vec::with_capacity(256);
    while lines.read_until(b'\n', &mut line).ok()? > 0 {
        if let Some(t) = f(line.strip_suffix(b"\n").unwrap_or(&line)) {
            return Some(t);
        }
        line.clear();
    }
    None
}

/// The mount with id `id`: the table read as far as its line, only that line parsed.
pub fn by_id(id: u64) -> Option<Mount> {
    let id = id.to_string();
    find_line(|line| {
        let first = line.split(|&b| b == b' ').next()?;
        (first == id.as_bytes()).then(|| parse_line(line)).flatten()
    })
}

/// The block device (`st_rdev`) holding the file system of a file with device `dev` on mount
/// `mnt_id`: `dev` itself, unless that is an anonymous device (major 0: btrfs gives every
/// subvolume one), then the device the mount table names as the mount's source (for a btrfs
/// of several devices, the one it names). `None` where no block device holds it (tmpfs, NFS).
pub fn block_device(dev: u64, mnt_id: u64) -> Option<u64> {
    if rustix::fs::major(dev) != 0 {
        return Some(dev);
    }
    let m = by_id(mnt_id)?;
    if !m.source.starts_with("/dev/") {
        return None;
    }
    let st = rustix::fs::stat(&m.source).ok()?;
    (rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::BlockDevice)
        .then_some(st.st_rdev)
}

/// Mounts strictly below `dir` (an absolute, canonical path): only the lines whose mount
/// point is below it are parsed.
pub fn inside(dir: &Path) -> Vec<Mount> {
    let mut found = Vec::new();
    find_line(|line| {
        let point = line.split(|&b| b == b' ').nth(4)?;
        let point = PathBuf::from(unescape(point));
        if point != dir && point.starts_with(dir) {
            found.extend(parse_line(line));
        }
        None::<()>
    });
    found
}

fn parse(text: &[u8]) -> Vec<Mount> {
    text.split(|&b| b == b'\n').filter_map(parse_line).collect()
}

/// One line of the table: id parent major:minor root point options [optional...] - fstype
/// source super.
fn parse_line(line: &[u8]) -> Option<Mount> {
    let f: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let dash = f.iter().position(|w| *w == b"-")?;
    Some(Mount {
        id: std::str::from_utf8(f.first()?).ok()?.parse().ok()?,
        parent: std::str::from_utf8(f.get(1)?).ok()?.parse().ok()?,
        root: unescape(f.get(3)?).into(),
        point: unescape(f.get(4)?).into(),
        fstype: String::from_utf8_lossy(f.get(dash + 1)?).into_owned(),
        source: unescape(f.get(dash + 2)?).into(),
        options: String::from_utf8_lossy(f.get(dash + 3).copied().unwrap_or_default()).into_owned(),
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &[u8]) -> OsString {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\' && field.len() - i >= 4 {
            let oct = &field[i + 1..i + 4];
            if oct.iter().all(|b| (b'0'..=b'7').contains(b)) {
                out.push((oct[0] - b'0') * 64 + (oct[1] - b'0') * 8 + (oct[2] - b'0'));
                i += 4;
                continue;
            }
        }
        out.push(field[i]);
        i += 1;
    }
    OsString::from_vec(out)
}

/// Why a FUSE mount is not where it was asked to be (`landed`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotLanded {
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(rustix::io::Errno),
    #[error("the directory has no path any more")]
    NoPath,
    /// Nothing is mounted at the directory's path.
    #[error("nothing is mounted on {} (it moved meanwhile)", crate::sys::quote::quote(.0))]
    NothingThere(PathBuf),
    /// The name in the parent shows another directory than the mount's.
    #[error("{} is no longer the name of that directory", crate::sys::quote::quote(.0))]
    Renamed(PathBuf),
}

/// The FUSE mount that covers the directory `dir`, itself entry `name` of `parent` (all fds
/// the caller checked), if it sits exactly there: its mount point is `dir`'s path in `dir`'s
/// own mount (one path names one directory of a mount), and `name` in `parent` now shows that
/// mount's root. `Err`: where it is not (the caller unmounts what landed elsewhere). A tool
/// that mounts by path (`squashfuse`) is checked so.
pub fn landed(
    dir: impl std::os::fd::AsFd,
    parent: impl std::os::fd::AsFd,
    name: &std::ffi::CStr,
) -> Result<Mount, NotLanded> {
    let here = crate::sys::dirfd::fstat(&dir).map_err(NotLanded::Os)?;
    let path = fd_path(&dir).ok_or(NotLanded::NoPath)?;
    let on_it = all()
        .into_iter()
        .find(|m| m.parent == here.mnt_id && m.point == path && m.fstype.starts_with("fuse"));
    let Some(m) = on_it else {
        return Err(NotLanded::NothingThere(path));
    };
    let now = crate::sys::dirfd::open_dir_at(parent, name)
        .and_then(crate::sys::dirfd::fstat)
        .map(|f| f.mnt_id);
    if now != Ok(m.id) {
        return Err(NotLanded::Renamed(path));
    }
    Ok(m)
}

/// The canonical absolute path of an open directory (`/proc/self/fd/N`); `None` if it has
/// none (removed, or not reachable from this process's root).
pub fn fd_path(fd: impl std::os::fd::AsFd) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let link = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    let p = crate::sys::safeopen::kernel::read_link(link).ok()?;
    if !p.is_absolute() {
        return None;
    }
    // A directory that was removed reads as "/path (deleted)" and has no usable path; a
    // directory may also be named so. The path is its own only if it names the same inode.
    if p.as_os_str().as_bytes().ends_with(b" (deleted)") {
        let here = crate::sys::dirfd::fstat(&fd).ok()?.ident;
        let there = crate::sys::dirfd::lstat_path(&p).ok()?.ident;
        return (here == there).then_some(p);
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mount_read_alone_is_the_one_in_the_whole_table() {
        let id = crate::sys::dirfd::stat_path(Path::new("/")).unwrap().mnt_id;
        let whole = all().into_iter().find(|m| m.id == id);
        assert!(whole.is_some());
        assert_eq!(by_id(id), whole);
        assert_eq!(by_id(u64::MAX), None);
        let below: Vec<Mount> = all()
            .into_iter()
            .filter(|m| m.point != Path::new("/proc") && m.point.starts_with("/proc"))
            .collect();
        assert_eq!(inside(Path::new("/proc")), below);
    }

    #[test]
    fn parses_mountinfo_lines() {
        let t = b"22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n\
                  95 22 7:0 /sub /mnt/with\\040space rw - xfs /dev/loop0 rw,attr2\n\
                  96 22 0:5 / /proc rw,nosuid - proc proc rw\n";
        let m = parse(t);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].id, 22);
        assert_eq!(m[1].parent, 22);
        assert_eq!(m[0].point, PathBuf::from("/"));
        assert_eq!(m[1].point, PathBuf::from("/mnt/with space"));
        assert_eq!(m[1].root, PathBuf::from("/sub"));
        assert_eq!(m[1].fstype, "xfs");
        assert_eq!(m[1].source, PathBuf::from("/dev/loop0"));
        assert!(m[1].is_local());
        assert!(!m[2].is_local());
        assert_eq!(m[1].options, "rw,attr2");
    }

    #[test]
    fn online_discard_is_read_from_the_file_systems_options() {
        let t = b"1 0 8:1 / /a rw - ext4 /dev/sda1 rw,discard,errors=remount-ro\n\
                  2 0 8:2 / /b rw - ext4 /dev/sda2 rw,nodiscard\n\
                  3 0 8:3 / /c rw - btrfs /dev/sda3 rw,ssd,discard=async,space_cache=v2\n\
                  4 0 8:4 / /d rw - btrfs /dev/sda4 rw,ssd,discard,space_cache=v2\n\
                  5 0 8:5 / /e rw - xfs /dev/sda5 rw,attr2,discard,inode64\n\
                  6 0 8:6 / /f rw - xfs /dev/sda6 rw,attr2\n\
                  7 0 8:7 / /g rw - ext4 /dev/sda7\n";
        let got: Vec<bool> = parse(t).iter().map(Mount::online_discard).collect();
        assert_eq!(got, [true, false, false, true, true, false, false]);
    }

    #[test]
    fn a_name_ending_in_deleted_is_a_path_and_a_removed_directory_has_none() {
        let d = tempfile::tempdir().unwrap();
        let named = d.path().join("sv (deleted)");
        std::fs::create_dir(&named).unwrap();
        let fd = crate::sys::dirfd::open_dir_path(&named).unwrap();
        assert_eq!(fd_path(&fd), Some(named.canonicalize().unwrap()));
        let gone = d.path().join("gone");
        std::fs::create_dir(&gone).unwrap();
        let fd = crate::sys::dirfd::open_dir_path(&gone).unwrap();
        std::fs::remove_dir(&gone).unwrap();
        assert_eq!(fd_path(&fd), None);
    }

    #[test]
    fn this_process_root_is_mounted() {
        let root = crate::sys::dirfd::stat_path(Path::new("/")).unwrap();
        assert!(by_id(root.mnt_id).is_some());
    }
}
