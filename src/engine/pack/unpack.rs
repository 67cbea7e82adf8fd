//! `reclaim unpack ARCHIVE DEST`: the tree restored exactly into a new directory. The image is
//! read through `sqfs2tar`; every entry is created beneath DEST's fd (`openat2` without
//! symlinks, `O_EXCL`, `mkdirat`, `symlinkat`, `linkat`, `mknodat`: nothing is written
//! through a symlink the archive itself made, nothing existing is replaced); the manifest
//! (when the archive has one) gives back what squashfs cannot hold — nanosecond times, ACLs
//! and other xattrs, the exact modes — and every file's content is checked against its hash;
//! an entry the manifest does not list (or lists as another kind, or that comes twice) is not
//! made at all. DEST is made 0700; directories get their modes and times last, deepest first.
//!
//! Root unpacking an archive that is not root's own (owned by another user, or in a directory
//! another user may change) acts as GNU tar does for a user, unless `same_owner`: owners are
//! root's, setuid, setgid and sticky bits are dropped and the umask applied, no device node is
//! made, and only `user.` xattrs are set. pack leaves archives beside the directory, where
//! their owner can replace them before root unpacks.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{
    fchmod, fchown, futimens, utimensat, AtFlags, FileType, Mode, OFlags, Timespec, Timestamps,
};
use rustix::io::Errno;

use crate::sys::error::errno_text;
use crate::sys::safeopen::{self, Access, Bad};

use super::manifest::{self, Entry, Manifest};
use super::source;
use super::tools;

/// What an unpack did.
#[derive(Debug, Default)]
pub struct Unpacked {
    pub entries: u64,
    pub files: u64,
    pub bytes: u64,
    /// The archive had reclaim's manifest: times, ACLs and modes are exact, contents checked.
    pub manifest: bool,
    /// Entries whose owner could not be given back (not root).
    pub owners_kept: u64,
    /// Root unpacked an archive that is not root's own as a user would (the archive's owner):
    /// owners root's, no setuid/setgid/sticky bits, the umask, no device nodes.
    pub as_user: Option<u32>,
    /// Per entry that could not be created or completed: path and why.
    pub failed: Vec<(PathBuf, EntryError)>,
}

/// Why one entry of the archive was not unpacked, or not completely.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("a '..' or '.' in its path: not unpacked")]
    DotInPath,
    #[error("in the image but not in the archive's manifest: not unpacked")]
    NotInManifest,
    #[error("in the image twice: unpacked once")]
    Twice,
    /// The manifest says this kind; the image holds another.
    #[error("a {} in the manifest, another kind in the image: not unpacked", .0.word())]
    OtherKind(manifest::Kind),
    #[error("in the manifest but not in the image")]
    NotInImage,
    /// Its tar header or pax extensions cannot be read.
    #[error("{0}")]
    Header(std::io::Error),
    #[error("its directory: {}", errno_text(*.0))]
    Parent(Errno),
    #[error("its link target's directory: {}", errno_text(*.0))]
    LinkParent(Errno),
    #[error("a NUL in the name")]
    NulInName,
    #[error("a NUL in the link")]
    NulInLink,
    /// Root unpacks this uid's archive as that user would: no device node is made.
    #[error("a device node: not made (the archive is uid {0}'s; --same-owner trusts it)")]
    DeviceAsUser(u32),
    #[error("an entry of tar type {0:?}: not unpacked")]
    OtherType(tar::EntryType),
    /// Its content could not be read from the stream or written.
    #[error("{0}")]
    Content(std::io::Error),
    #[error("content differs from the manifest's hash (the archive is damaged)")]
    Damaged,
    /// Its owner could not be read before it was given (the error with its number).
    #[error("{0}")]
    Owner(Errno),
    /// Making it, or giving it its owner, mode or times.
    #[error("{}", errno_text(*.0))]
    Os(Errno),
}

/// Why nothing (more) was unpacked.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("{}: {}", crate::sys::quote::quote(.0), .1)]
    Usage(PathBuf, String),
    #[error("{}: {}", crate::sys::quote::quote(.0), crate::sys::error::errno_text(*.1))]
    Os(PathBuf, Errno),
    #[error("{0}")]
    Tool(#[from] tools::ToolError),
    #[error("reading the archive: {0}")]
    Read(String),
    #[error("{}: the archive's manifest is damaged ({}); nothing was unpacked", crate::sys::quote::quote(.0), .1)]
    Manifest(PathBuf, String),
    #[error("interrupted")]
    Interrupted,
}

/// Unpacks `archive` into the new directory `dest`; `on(entries, bytes)` now and then.
/// `same_owner`: root trusts an archive that is not root's own (see the module's comment).
pub fn unpack(
    archive: &Path,
    dest: &Path,
    same_owner: bool,
    on: &dyn Fn(u64, u64),
) -> Result<Unpacked, UnpackError> {
    let os = |e| UnpackError::Os(archive.to_path_buf(), e);
    let (adir, aname) = safeopen::file::split_path(archive).map_err(os)?;
    let (fd, st) = match safeopen::open_file_at(&adir, &aname, Access::Read) {
        Ok(v) => v,
        Err(Bad::Os(e)) => return Err(os(e)),
        Err(Bad::Missing) => return Err(os(Errno::NOENT)),
        Err(_) => {
            return Err(UnpackError::Usage(
                archive.to_path_buf(),
                "not a squashfs archive (not a regular file)".into(),
            ))
        }
    };
    if manifest::image_size(&fd).is_none() {
        return Err(UnpackError::Usage(
            archive.to_path_buf(),
            "not a squashfs archive".into(),
        ));
    }
    let root_user = rustix::process::geteuid().is_root();
    let as_user = (root_user && !same_owner)
        .then(|| {
            let roots = st.st_uid == 0 && super::trust::placement(&adir).is_ok();
            (!roots).then_some(st.st_uid)
        })
        .flatten();
    let m = match manifest::read(&fd) {
        Ok(m) => Some(m),
        Err(manifest::TrailerError::Missing) => None,
        Err(e) => return Err(UnpackError::Manifest(archive.to_path_buf(), e.to_string())),
    };
    let name = dest
        .file_name()
        .filter(|n| *n != "." && *n != "..")
        .ok_or_else(|| UnpackError::Usage(dest.to_path_buf(), "name a new directory".into()))?;
    let parent = dest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let pfd = crate::sys::dirfd::open_dir_path_only(parent)
        .map_err(|e| UnpackError::Os(parent.to_path_buf(), e))?;
    let cname = CString::new(name.as_bytes())
        .map_err(|_| UnpackError::Usage(dest.to_path_buf(), "a NUL in the name".into()))?;
    match safeopen::mkdir_at(&pfd, &cname, 0o700) {
        Ok(()) => {}
        Err(Errno::EXIST) => {
            return Err(UnpackError::Usage(
                dest.to_path_buf(),
                "exists; unpack only creates a new directory (never writes over files)".into(),
            ))
        }
        Err(e) => return Err(UnpackError::Os(dest.to_path_buf(), e)),
    }
    let root = crate::sys::dirfd::open_dir_at(&pfd, cname.as_c_str())
        .map_err(|e| UnpackError::Os(dest.to_path_buf(), e))?;
    let mut u = Unpack::new(root, dest, m.as_ref(), as_user);
    let mut child = tools::sqfs2tar(fd.as_fd())?;
    let stream = child.stdout.take().expect("piped");
    let stream = super::guard::Guard::new(stream);
    let r = u.all(std::io::BufReader::with_capacity(1 << 20, stream), on);
    if r.is_err() {
        let _ = child.kill();
    }
    let waited = tools::wait("sqfs2tar", child);
    r?;
    waited?;
    u.finish_dirs();
    Ok(u.out)
}

/// Unpacks the tar `stream` (guarded) beneath `root`, the new directory `dest`, as `unpack`
/// does with `sqfs2tar`'s output: for the fuzz tests of this reader, which feed it anything.
#[cfg(test)]
pub(super) fn unpack_stream(
    stream: impl Read,
    root: OwnedFd,
    m: Option<&Manifest>,
    as_user: Option<u32>,
) -> Result<Unpacked, UnpackError> {
    let mut u = Unpack::new(root, Path::new("DEST"), m, as_user);
    let stream = super::guard::Guard::new(stream);
    u.all(std::io::BufReader::new(stream), &|_, _| {})?;
    u.finish_dirs();
    Ok(u.out)
}

struct Unpack<'m> {
    root: OwnedFd,
    dest: PathBuf,
    m: Option<&'m Manifest>,
    index: HashMap<Vec<u8>, usize>,
    root_user: bool,
    /// Root unpacks another user's archive as that user would: with this umask.
    as_user: Option<u32>,
    /// Directories made, with what to give them once their entries are in.
    dirs: Vec<(Vec<u8>, Meta)>,
    out: Unpacked,
}

/// What an entry gets after its creation.
#[derive(Clone, Debug)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    atime: (i64, u32),
    mtime: (i64, u32),
    xattrs: Vec<(String, Vec<u8>)>,
}

impl<'m> Unpack<'m> {
    /// An unpack into `root` (the new directory `dest`), checked against `m` if there is one;
    /// `as_user`: root unpacks the archive of that uid as that user would.
    fn new(root: OwnedFd, dest: &Path, m: Option<&'m Manifest>, as_user: Option<u32>) -> Self {
        Unpack {
            root,
            dest: dest.to_path_buf(),
            index: m
                .map(|m| {
                    m.entries
                        .iter()
                        .enumerate()
                        .map(|(i, e)| (e.rel(), i))
                        .collect()
                })
                .unwrap_or_default(),
            m,
            root_user: rustix::process::geteuid().is_root(),
            as_user: as_user.map(|_| umask()),
            dirs: Vec::new(),
            out: Unpacked {
                manifest: m.is_some(),
                as_user,
                ..Unpacked::default()
            },
        }
    }

    fn show(&self, rel: &[u8]) -> PathBuf {
        self.dest.join(OsStr::from_bytes(rel))
    }

    fn all(&mut self, stream: impl Read, on: &dyn Fn(u64, u64)) -> Result<(), UnpackError> {
        let mut archive = tar::Archive::new(stream);
        let entries = archive
            .entries()
            .map_err(|e| UnpackError::Read(e.to_string()))?;
        let mut seen = vec![false; self.m.map_or(0, |m| m.entries.len())];
        for entry in entries {
            if crate::sys::interrupt::stopping() {
                return Err(UnpackError::Interrupted);
            }
            let mut entry = entry.map_err(|e| UnpackError::Read(e.to_string()))?;
            let path = entry.path_bytes().into_owned();
            let rel = {
                let p = path.strip_prefix(b"./").unwrap_or(&path);
                let p = if p == b"." { &b""[..] } else { p };
                p.strip_suffix(b"/").unwrap_or(p).to_vec()
            };
            if rel.split(|&c| c == b'/').any(|c| c == b".." || c == b".") {
                self.out
                    .failed
                    .push((self.show(&rel), EntryError::DotInPath));
                continue;
            }
            // With a manifest, only what it lists, once each, as the kind it says.
            let want = match (self.m, self.index.get(&rel)) {
                (None, _) => None,
                (Some(_), None) => {
                    self.out
                        .failed
                        .push((self.show(&rel), EntryError::NotInManifest));
                    continue;
                }
                (Some(m), Some(&i)) => {
                    if std::mem::replace(&mut seen[i], true) {
                        self.out.failed.push((self.show(&rel), EntryError::Twice));
                        continue;
                    }
                    Some(&m.entries[i])
                }
            };
            if let Some(w) = want {
                if tar_kind(entry.header().entry_type()).is_some_and(|k| k != w.kind) {
                    self.out
                        .failed
                        .push((self.show(&rel), EntryError::OtherKind(w.kind)));
                    continue;
                }
            }
            if let Err(why) = self.one(&rel, &mut entry, want) {
                self.out.failed.push((self.show(&rel), why));
            }
            self.out.entries += 1;
            if self.out.entries.is_multiple_of(1024) {
                on(self.out.entries, self.out.bytes);
            }
        }
        on(self.out.entries, self.out.bytes);
        if let Some(m) = self.m {
            for (i, s) in seen.iter().enumerate() {
                if !s {
                    self.out
                        .failed
                        .push((self.show(&m.entries[i].rel()), EntryError::NotInImage));
                }
            }
        }
        Ok(())
    }

    fn one(
        &mut self,
        rel: &[u8],
        entry: &mut tar::Entry<'_, impl Read>,
        want: Option<&Entry>,
    ) -> Result<(), EntryError> {
        let h = entry.header().clone();
        let num = |r: std::io::Result<u64>| r.map_err(EntryError::Header);
        let mut meta = meta_of(entry, want)?;
        if let Some(mask) = self.as_user {
            as_a_user(&mut meta, mask);
        }
        let errno = EntryError::Os;
        if rel.is_empty() {
            // The top directory: DEST itself.
            self.dirs.push((Vec::new(), meta));
            return Ok(());
        }
        let (dir_rel, name) = match rel.iter().rposition(|&c| c == b'/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => (&b""[..], rel),
        };
        let parent = source::open_beneath(&self.root, dir_rel, OFlags::RDONLY | OFlags::DIRECTORY)
            .map_err(EntryError::Parent)?;
        let cname = CString::new(name).map_err(|_| EntryError::NulInName)?;
        let cname = cname.as_c_str();
        match h.entry_type() {
            tar::EntryType::Directory => {
                safeopen::mkdir_at(&parent, cname, 0o700).map_err(errno)?;
                self.dirs.push((rel.to_vec(), meta));
                Ok(())
            }
            tar::EntryType::Link => self.hard_link(entry, &parent, cname),
            tar::EntryType::Symlink => {
                let t = entry.link_name_bytes().unwrap_or_default().into_owned();
                safeopen::symlink_at(&t, &parent, cname).map_err(errno)?;
                self.own_at(&parent, cname, &meta)?;
                xattrs_at(&parent, cname, &meta.xattrs);
                let ts = times(&meta);
                utimensat(&parent, cname, &ts, AtFlags::SYMLINK_NOFOLLOW).map_err(errno)?;
                Ok(())
            }
            tar::EntryType::Char | tar::EntryType::Block if self.as_user.is_some() => Err(
                EntryError::DeviceAsUser(self.out.as_user.unwrap_or_default()),
            ),
            tar::EntryType::Fifo | tar::EntryType::Char | tar::EntryType::Block => {
                let (ft, dev) = match h.entry_type() {
                    tar::EntryType::Fifo => (FileType::Fifo, 0),
                    t => (
                        if t == tar::EntryType::Char {
                            FileType::CharacterDevice
                        } else {
                            FileType::BlockDevice
                        },
                        rustix::fs::makedev(
                            num(h.device_major().map(|d| u64::from(d.unwrap_or(0))))? as u32,
                            num(h.device_minor().map(|d| u64::from(d.unwrap_or(0))))? as u32,
                        ),
                    ),
                };
                self.node(&parent, cname, (ft, dev), &meta)
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                self.regular(entry, &parent, cname, want, &meta)
            }
            t => Err(EntryError::OtherType(t)),
        }
    }

    /// A hard link to an entry unpacked before.
    fn hard_link(
        &mut self,
        entry: &tar::Entry<'_, impl Read>,
        parent: &OwnedFd,
        cname: &std::ffi::CStr,
    ) -> Result<(), EntryError> {
        let errno = EntryError::Os;
        let to = entry.link_name_bytes().unwrap_or_default().into_owned();
        let to = to.strip_prefix(b"./").unwrap_or(&to).to_vec();
        let (to_dir, to_name) = match to.iter().rposition(|&c| c == b'/') {
            Some(i) => (&to[..i], &to[i + 1..]),
            None => (&b""[..], &to[..]),
        };
        let tdir = source::open_beneath(&self.root, to_dir, OFlags::RDONLY | OFlags::DIRECTORY)
            .map_err(EntryError::LinkParent)?;
        let tname = CString::new(to_name).map_err(|_| EntryError::NulInLink)?;
        safeopen::link_at(&tdir, &tname, parent, cname).map_err(errno)?;
        self.out.files += 1;
        Ok(())
    }

    /// A FIFO or device node (`ft`, `dev`).
    fn node(
        &mut self,
        parent: &OwnedFd,
        cname: &std::ffi::CStr,
        (ft, dev): (FileType, u64),
        meta: &Meta,
    ) -> Result<(), EntryError> {
        let errno = EntryError::Os;
        safeopen::mknod_at(parent, cname, ft, 0o600, dev).map_err(errno)?;
        self.own_at(parent, cname, meta)?;
        // Mode and times by name (no fd can be opened for writing on a FIFO or device
        // without side effects); `parent` was opened without symlinks and the name is
        // the node just made.
        rustix::fs::chmodat(
            parent,
            cname,
            Mode::from_raw_mode(meta.mode),
            AtFlags::empty(),
        )
        .map_err(errno)?;
        xattrs_at(parent, cname, &meta.xattrs);
        utimensat(parent, cname, &times(meta), AtFlags::SYMLINK_NOFOLLOW).map_err(errno)?;
        Ok(())
    }

    /// A regular file: its content (holes kept), checked against the manifest's hash.
    fn regular(
        &mut self,
        entry: &mut tar::Entry<'_, impl Read>,
        parent: &OwnedFd,
        cname: &std::ffi::CStr,
        want: Option<&Entry>,
        meta: &Meta,
    ) -> Result<(), EntryError> {
        let errno = EntryError::Os;
        let fd = safeopen::create_at(parent, cname, OFlags::WRONLY, 0o600, false).map_err(errno)?;
        let size = entry.size();
        let hash = write_sparse(&fd, entry, size).map_err(EntryError::Content)?;
        self.out.files += 1;
        self.out.bytes += size;
        let mut bad = None;
        if let Some(w) = want {
            if w.hash.as_deref() != Some(hash.to_hex().as_str()) {
                bad = Some(EntryError::Damaged);
            }
        }
        self.own_fd(&fd, meta)?;
        fchmod(&fd, Mode::from_raw_mode(meta.mode)).map_err(errno)?;
        xattrs_fd(&fd, &meta.xattrs);
        futimens(&fd, &times(meta)).map_err(errno)?;
        bad.map_or(Ok(()), Err)
    }

    fn own_fd(&mut self, fd: &OwnedFd, meta: &Meta) -> Result<(), EntryError> {
        let st = rustix::fs::fstat(fd).map_err(EntryError::Owner)?;
        if (st.st_uid, st.st_gid) == (meta.uid, meta.gid) {
            return Ok(());
        }
        match fchown(fd, Some(uid(meta.uid)), Some(gid(meta.gid))) {
            Ok(()) => Ok(()),
            Err(Errno::PERM) if !self.root_user => {
                self.out.owners_kept += 1;
                Ok(())
            }
            Err(e) => Err(EntryError::Os(e)),
        }
    }

    fn own_at(
        &mut self,
        dir: &OwnedFd,
        name: &std::ffi::CStr,
        meta: &Meta,
    ) -> Result<(), EntryError> {
        let st =
            rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(EntryError::Owner)?;
        if (st.st_uid, st.st_gid) == (meta.uid, meta.gid) {
            return Ok(());
        }
        match rustix::fs::chownat(
            dir,
            name,
            Some(uid(meta.uid)),
            Some(gid(meta.gid)),
            AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(()) => Ok(()),
            Err(Errno::PERM) if !self.root_user => {
                self.out.owners_kept += 1;
                Ok(())
            }
            Err(e) => Err(EntryError::Os(e)),
        }
    }

    /// Owners, modes, xattrs and times of the directories, deepest first (their entries are
    /// all in: nothing changes their times any more).
    fn finish_dirs(&mut self) {
        let mut dirs = std::mem::take(&mut self.dirs);
        dirs.sort_by(|a, b| source::cmp_paths(&b.0, &a.0));
        for (rel, meta) in dirs {
            let r = (|| -> Result<(), EntryError> {
                let fd = source::open_beneath(&self.root, &rel, OFlags::RDONLY | OFlags::DIRECTORY)
                    .map_err(EntryError::Os)?;
                self.own_fd(&fd, &meta)?;
                fchmod(&fd, Mode::from_raw_mode(meta.mode)).map_err(EntryError::Os)?;
                xattrs_fd(&fd, &meta.xattrs);
                futimens(&fd, &times(&meta)).map_err(EntryError::Os)?;
                Ok(())
            })();
            if let Err(why) = r {
                let p = self.show(&rel);
                self.out.failed.push((p, why));
            }
        }
    }
}

/// The process's umask.
fn umask() -> u32 {
    let old = rustix::process::umask(Mode::from_raw_mode(0o077));
    rustix::process::umask(old);
    old.bits()
}

/// What an entry gets when root unpacks another user's archive: as GNU tar gives a user (no
/// setuid, setgid or sticky bit, the umask applied; owned by the caller), only `user.` xattrs
/// (no file capabilities, no ACLs).
fn as_a_user(meta: &mut Meta, umask: u32) {
    meta.mode &= 0o777 & !umask;
    meta.uid = rustix::process::geteuid().as_raw();
    meta.gid = rustix::process::getegid().as_raw();
    meta.xattrs.retain(|(n, _)| n.starts_with("user."));
}

/// The manifest's kind of a tar entry type (`None`: a type the image never holds).
fn tar_kind(t: tar::EntryType) -> Option<manifest::Kind> {
    use manifest::Kind;
    Some(match t {
        tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::Link => Kind::File,
        tar::EntryType::Directory => Kind::Dir,
        tar::EntryType::Symlink => Kind::Symlink,
        tar::EntryType::Fifo => Kind::Fifo,
        tar::EntryType::Char => Kind::Char,
        tar::EntryType::Block => Kind::Block,
        _ => return None,
    })
}

fn uid(u: u32) -> rustix::fs::Uid {
    rustix::fs::Uid::from_raw(u)
}
fn gid(g: u32) -> rustix::fs::Gid {
    rustix::fs::Gid::from_raw(g)
}

fn times(m: &Meta) -> Timestamps {
    let ts = |t: (i64, u32)| Timespec {
        tv_sec: t.0,
        tv_nsec: t.1.into(),
    };
    Timestamps {
        last_access: ts(m.atime),
        last_modification: ts(m.mtime),
    }
}

fn xattrs_fd(fd: &OwnedFd, x: &[(String, Vec<u8>)]) {
    for (n, v) in x {
        let _ = rustix::fs::fsetxattr(fd, n.as_str(), v, rustix::fs::XattrFlags::empty());
    }
}

fn xattrs_at(dir: &OwnedFd, name: &std::ffi::CStr, x: &[(String, Vec<u8>)]) {
    use std::os::fd::AsRawFd;
    if x.is_empty() {
        return;
    }
    let mut p = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
    p.extend_from_slice(name.to_bytes());
    let p = OsStr::from_bytes(&p);
    for (n, v) in x {
        let _ = rustix::fs::lsetxattr(p, n.as_str(), v, rustix::fs::XattrFlags::empty());
    }
}

/// Writes `size` bytes from `r` into `fd`, leaving holes where whole blocks are zero (as
/// `cp --sparse=auto` would); returns the content's BLAKE3.
fn write_sparse(fd: &OwnedFd, mut r: impl Read, size: u64) -> std::io::Result<blake3::Hash> {
    const BLOCK: usize = 64 << 10;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; BLOCK];
    let mut at = 0u64;
    while at < size {
        let want = BLOCK.min((size - at) as usize);
        r.read_exact(&mut buf[..want])?;
        hasher.update(&buf[..want]);
        if buf[..want].iter().any(|&b| b != 0) {
            let mut done = 0;
            while done < want {
                done += rustix::io::pwrite(fd, &buf[done..want], at + done as u64)?;
            }
        }
        at += want as u64;
    }
    rustix::fs::ftruncate(fd, size)?;
    Ok(hasher.finalize())
}

/// An entry's owner, mode, times and xattrs: the manifest's (`want`), else the tar header's
/// (times to the second).
fn meta_of(
    entry: &mut tar::Entry<'_, impl Read>,
    want: Option<&Entry>,
) -> Result<Meta, EntryError> {
    let h = entry.header().clone();
    let num = |r: std::io::Result<u64>| r.map_err(EntryError::Header);
    let mut xattrs: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(pax) = entry.pax_extensions().map_err(EntryError::Header)? {
        for ext in pax.flatten() {
            if let Some(name) = ext.key().ok().and_then(|k| k.strip_prefix("SCHILY.xattr.")) {
                xattrs.push((name.to_string(), ext.value_bytes().to_vec()));
            }
        }
    }
    let mtime = num(h.mtime())? as i64;
    let mut meta = Meta {
        mode: num(h.mode().map(u64::from))? as u32 & 0o7777,
        uid: num(h.uid())? as u32,
        gid: num(h.gid())? as u32,
        atime: (mtime, 0),
        mtime: (mtime, 0),
        xattrs,
    };
    if let Some(w) = want {
        meta.mode = w.mode;
        meta.uid = w.uid;
        meta.gid = w.gid;
        meta.atime = (w.atime.0, w.atime.1);
        meta.mtime = (w.mtime.0, w.mtime.1);
        meta.xattrs = w
            .xattrs
            .iter()
            .filter_map(|(n, v)| Some((n.clone(), crate::sys::quote::unhex(v)?)))
            .collect();
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_error_says_what_stayed_and_why() {
        assert_eq!(
            EntryError::OtherKind(manifest::Kind::Dir).to_string(),
            "a directory in the manifest, another kind in the image: not unpacked"
        );
        assert_eq!(
            EntryError::DeviceAsUser(1000).to_string(),
            "a device node: not made (the archive is uid 1000's; --same-owner trusts it)"
        );
        // Reading an owner says the error with its number; making and changing, without.
        assert_eq!(
            EntryError::Owner(Errno::PERM).to_string(),
            "Operation not permitted (os error 1)"
        );
        assert_eq!(
            EntryError::Os(Errno::PERM).to_string(),
            "Operation not permitted"
        );
    }
}
