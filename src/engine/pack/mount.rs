//! Keeping the old paths readable: the archive mounted read-only on the packed directory, and
//! the fstab line or systemd `.mount` unit that mounts it at boot. The mount is made and
//! checked (every entry readable through it, each file's content the manifest's) before any
//! original is removed, so a mount that fails removes nothing. As root the kernel's squashfs
//! (`sys::safeopen::mount`: a loop device on the archive's fd, the mount API) stays detached
//! while the originals go and is attached to the packed directory's own fd only if nothing
//! stayed (it would hide what stayed); for other users `squashfuse` mounts over the directory
//! at once (checked to have landed on that very directory, `sys::mounts::landed`), the
//! originals are removed beneath it through the directory's fd, and it is unmounted again if
//! anything stayed. Never mounts by a path.

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::OFlags;

use super::manifest::{Kind, Manifest};
use super::PackOutcome;
use crate::sys::safeopen::{self, mount as sysmount};

/// How the archive was mounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Kernel,
    Fuse,
}

/// The archive mounted on the packed directory.
#[derive(Clone, Debug)]
pub struct Mounted {
    pub how: How,
    /// Where the packed directory is now, as the kernel names it.
    pub at: PathBuf,
}

/// A mount made and checked, before the originals are removed.
#[derive(Debug)]
pub enum Mounting {
    /// Root: the kernel's squashfs, attached nowhere yet.
    Kernel(sysmount::Detached),
    /// Others: squashfuse, over the directory already.
    Fuse(crate::sys::mounts::Mount),
}

fn text(e: rustix::io::Errno) -> String {
    crate::sys::error::errno_text(e)
}

/// Why the archive cannot be mounted on the directory, or what the mount shows that is not
/// the manifest's (nothing is left mounted).
#[derive(Debug, thiserror::Error)]
pub enum CannotMount {
    /// The kernel's squashfs (root) or squashfuse (others) did not mount it.
    #[error(transparent)]
    Mount(#[from] sysmount::MountError),
    #[error("squashfuse did not mount it on the directory: {0}")]
    NotLanded(crate::sys::mounts::NotLanded),
    #[error("{}", text(*.0))]
    Os(rustix::io::Errno),
    /// An entry (its path in the archive) the mount shows otherwise than the manifest says.
    #[error("{} {differs} through the mount", crate::sys::quote::quote(.path))]
    Shows { path: PathBuf, differs: Differs },
}

/// How an entry seen through the mount differs from the manifest's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Differs {
    #[error("cannot be opened ({})", text(*.0))]
    Unopened(rustix::io::Errno),
    #[error("is another kind")]
    OtherKind,
    #[error("cannot be read ({})", text(*.0))]
    Unread(rustix::io::Errno),
    #[error("shows other content")]
    OtherContent,
    #[error("points elsewhere")]
    OtherTarget,
}

/// The FUSE mounts of this mount namespace (ids).
fn fuse_ids() -> Vec<u64> {
    crate::sys::mounts::all()
        .into_iter()
        .filter(|m| m.fstype.starts_with("fuse"))
        .map(|m| m.id)
        .collect()
}

impl Mounting {
    /// Mounts `archive` for the directory `root` (entry `name` of `parent`) and checks what it
    /// shows against the manifest `m`. `Err`: why not (nothing is left mounted).
    pub fn start(
        archive: &OwnedFd,
        root: &OwnedFd,
        (parent, name): (&OwnedFd, &CStr),
        m: &Manifest,
    ) -> Result<Mounting, CannotMount> {
        if rustix::process::geteuid().is_root() {
            let d = sysmount::squashfs_detached(archive)?;
            let shown = d.root().map_err(CannotMount::Os)?;
            check(&shown, m)?;
            return Ok(Mounting::Kernel(d));
        }
        let before = fuse_ids();
        sysmount::squashfuse(archive, root)?;
        let m_ = match crate::sys::mounts::landed(root, parent, name) {
            Ok(mount) => mount,
            Err(why) => {
                // Whatever this run mounted, wherever it landed, goes again.
                for new in crate::sys::mounts::all()
                    .into_iter()
                    .filter(|x| x.fstype.starts_with("fuse") && !before.contains(&x.id))
                {
                    let _ = sysmount::fuse_unmount(&new.point);
                }
                return Err(CannotMount::NotLanded(why));
            }
        };
        let checked = safeopen::open_dir_at(parent, name)
            .map_err(CannotMount::Os)
            .and_then(|shown| check(&shown, m));
        if let Err(why) = checked {
            let _ = sysmount::fuse_unmount(&m_.point);
            return Err(why);
        }
        Ok(Mounting::Fuse(m_))
    }

    /// How the removal reaches the directory: through its own fd where the mount covers its
    /// name (squashfuse), else by name in its parent (`None`).
    pub fn removal_root(&self, root: &OwnedFd) -> Option<(Arc<OwnedFd>, CString)> {
        match self {
            Mounting::Kernel(_) => None,
            Mounting::Fuse(_) => rustix::io::dup(root)
                .ok()
                .map(|fd| (Arc::new(fd), c".".to_owned())),
        }
    }

    /// After the removal: mounted on `root` if nothing stayed and no stop signal came, else
    /// not (said in `out.not_mounted`).
    pub fn finish(self, root: &OwnedFd, out: &mut PackOutcome) {
        let why_not = why_not_mounted(out);
        let at = || crate::sys::mounts::fd_path(root).unwrap_or_default();
        match (self, why_not) {
            (Mounting::Kernel(d), None) => match d.attach(root) {
                Ok(()) => {
                    out.mounted = Some(Mounted {
                        how: How::Kernel,
                        at: at(),
                    })
                }
                Err(e) => out.not_mounted = Some(format!("attaching it failed: {}", text(e))),
            },
            (Mounting::Kernel(_), Some(why)) => out.not_mounted = Some(why),
            (Mounting::Fuse(m), None) => {
                out.mounted = Some(Mounted {
                    how: How::Fuse,
                    at: m.point,
                })
            }
            (Mounting::Fuse(m), Some(why)) => {
                out.not_mounted = Some(match sysmount::fuse_unmount(&m.point) {
                    Ok(()) => why,
                    Err(e) => format!("{why}; unmounting it failed: {e}"),
                })
            }
        }
    }
}

/// Why the archive must not be mounted after the removal, if it must not.
pub fn why_not_mounted(out: &PackOutcome) -> Option<String> {
    if let Some(sig) = out.interrupted {
        return Some(format!(
            "stopped by signal {sig} before the originals were all removed"
        ));
    }
    (!out.stayed.is_empty()).then(|| {
        format!(
            "{} stayed in the directory and would be hidden under the mount",
            crate::sys::format::plural(out.stayed.len() as u64, "entry", "entries")
        )
    })
}

/// Checks that every entry of `m` is readable through the mounted archive `shown` (its root)
/// and shows the same kind, and each file the same content (BLAKE3), each symlink the same
/// target.
fn check(shown: &OwnedFd, m: &Manifest) -> Result<(), CannotMount> {
    let differs = |rel: &[u8], differs: Differs| CannotMount::Shows {
        path: PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rel)),
        differs,
    };
    let mut buf = vec![0u8; 256 << 10];
    for e in &m.entries {
        let rel = e.rel();
        let flags = match e.kind {
            Kind::Dir => OFlags::RDONLY | OFlags::DIRECTORY,
            Kind::File => OFlags::RDONLY,
            _ => OFlags::PATH,
        };
        let fd = safeopen::open_beneath(shown, &rel, flags)
            .map_err(|e| differs(&rel, Differs::Unopened(e)))?;
        let st = crate::sys::dirfd::fstat(&fd).map_err(CannotMount::Os)?;
        let kind = Kind::of_mode(match st.file_type {
            rustix::fs::FileType::RegularFile => libc::S_IFREG,
            rustix::fs::FileType::Directory => libc::S_IFDIR,
            rustix::fs::FileType::Symlink => libc::S_IFLNK,
            rustix::fs::FileType::Fifo => libc::S_IFIFO,
            rustix::fs::FileType::CharacterDevice => libc::S_IFCHR,
            rustix::fs::FileType::BlockDevice => libc::S_IFBLK,
            _ => 0,
        });
        if kind != Some(e.kind) {
            return Err(differs(&rel, Differs::OtherKind));
        }
        match e.kind {
            Kind::File => {
                let mut hasher = blake3::Hasher::new();
                let mut at = 0u64;
                loop {
                    let n = rustix::io::pread(&fd, &mut buf, at)
                        .map_err(|x| differs(&rel, Differs::Unread(x)))?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                    at += n as u64;
                }
                let hex = hasher.finalize().to_hex();
                if at != e.size || e.hash.as_deref() != Some(hex.as_str()) {
                    return Err(differs(&rel, Differs::OtherContent));
                }
            }
            Kind::Symlink => {
                let t = rustix::fs::readlinkat(&fd, c"", Vec::new()).map_err(CannotMount::Os)?;
                if Some(super::manifest::hex(t.as_bytes())) != e.target {
                    return Err(differs(&rel, Differs::OtherTarget));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// fstab escapes blanks and backslashes in its fields as octal.
fn fstab_field(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::new();
    for &b in p.as_os_str().as_bytes() {
        match b {
            b' ' | b'\t' | b'\n' | b'\\' | b'#' => s.push_str(&format!("\\{b:03o}")),
            _ => s.push(b as char),
        }
    }
    s
}

/// The /etc/fstab line that mounts `archive` on `dir` at boot (`nofail`: a missing archive
/// does not stop the boot).
pub fn fstab_line(archive: &Path, dir: &Path) -> String {
    format!(
        "{} {} squashfs ro,loop,nodev,nosuid,nofail 0 0",
        fstab_field(archive),
        fstab_field(dir)
    )
}

/// systemd's escaping of a path into a unit name (`systemd-escape --path`).
pub fn unit_name(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = dir.as_os_str().as_bytes();
    let trimmed: Vec<&[u8]> = bytes
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect();
    if trimmed.is_empty() {
        return "-.mount".into();
    }
    let mut s = String::new();
    for (i, comp) in trimmed.iter().enumerate() {
        if i > 0 {
            s.push('-');
        }
        for (j, &b) in comp.iter().enumerate() {
            let plain = b.is_ascii_alphanumeric()
                || b == b'_'
                || b == b':'
                || (b == b'.' && !(i == 0 && j == 0));
            if plain {
                s.push(b as char);
            } else {
                s.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    s.push_str(".mount");
    s
}

/// The text of a systemd `.mount` unit for `archive` on `dir`.
pub fn unit_text(archive: &Path, dir: &Path) -> String {
    format!(
        "# Written by reclaim pack: {dir} packed into {archive}.\n\
         [Unit]\n\
         Description=reclaim pack of {dir} (read-only)\n\
         \n\
         [Mount]\n\
         What={archive}\n\
         Where={dir}\n\
         Type=squashfs\n\
         Options=ro,loop,nodev,nosuid\n\
         \n\
         [Install]\n\
         WantedBy=local-fs.target\n",
        dir = dir.display(),
        archive = archive.display()
    )
}

/// Writes the unit into `units` (a directory, e.g. /etc/systemd/system), never over an
/// existing file; returns its path.
pub fn write_unit(
    units: &Path,
    archive: &Path,
    dir: &Path,
) -> Result<std::path::PathBuf, rustix::io::Errno> {
    let name = unit_name(dir);
    let units_fd = safeopen::open_dir_path(units)?;
    let cname = CString::new(name.as_str()).map_err(|_| rustix::io::Errno::INVAL)?;
    safeopen::file::write_new_mode(
        &units_fd,
        &cname,
        unit_text(archive, dir).as_bytes(),
        true,
        0o644,
    )?;
    Ok(units.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_names_are_systemd_escape_path() {
        // As `systemd-escape --path --suffix=mount` prints them.
        assert_eq!(
            unit_name(Path::new("/srv/old data")),
            "srv-old\\x20data.mount"
        );
        assert_eq!(unit_name(Path::new("/srv/a-b/.c")), "srv-a\\x2db-.c.mount");
        assert_eq!(unit_name(Path::new("/.x")), "\\x2ex.mount");
    }

    #[test]
    fn fstab_fields_escape_blanks() {
        assert_eq!(
            fstab_line(Path::new("/a b.sqfs"), Path::new("/a b")),
            "/a\\040b.sqfs /a\\040b squashfs ro,loop,nodev,nosuid,nofail 0 0"
        );
    }
}
