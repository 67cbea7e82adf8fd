//! A btrfs subvolume met as a target or inside a tree, deleted whole by the file system's own
//! deletion, nested subvolumes first: it leaves the namespace at once and btrfs's cleaner frees
//! its blocks in the background. Works only on the fds the walk verified (the parent that holds
//! it, the subvolume's root), and says why when it does not (the walk then removes it file by
//! file). Never prints, never follows a symlink, never deletes what holds a mount.

use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use rustix::io::Errno;

use crate::sys::btrfs::{self, Destroyed};
use crate::sys::dirfd;
use crate::sys::error::errno_text;
use crate::sys::quote::quote;

/// Subvolumes nested deeper than this are left to the walk.
const MAX_NESTING: usize = 64;

/// A subvolume the file system deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deleted {
    /// Its subvolume id (what the cleaner's queue names).
    pub id: u64,
    pub how: Destroyed,
    /// Subvolumes inside it, deleted first.
    pub nested: Vec<u64>,
}

/// Why a subvolume was not deleted whole, in words a user can act on (the walk then removes
/// it file by file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotDeleted {
    #[error("its subvolume id: {}", errno_text(*.0))]
    Id(Errno),
    /// Without its path in the mount table, a mount inside it cannot be ruled out.
    #[error("its path is unknown, so a mount inside it cannot be ruled out")]
    PathUnknown,
    /// It would be taken along (or make the deletion fail half way).
    #[error("another file system is mounted inside it ({})", quote(.0))]
    MountInside(PathBuf),
    /// Root is refused the default subvolume and one a `btrfs send` reads.
    #[error("{} (the default subvolume, or one in use by a send)", errno_text(*.0))]
    RefusedToRoot(Errno),
    /// Refused to another user.
    #[error(
        "{} (deleting a subvolume needs root, or the mount option user_subvol_rm_allowed \
         and what rmdir would need)",
        errno_text(*.0)
    )]
    NotPermitted(Errno),
    #[error("the file system's deletion failed: {}", errno_text(*.0))]
    Failed(Errno),
    #[error("listing its subvolumes: {}", errno_text(*.0))]
    ListNested(Errno),
    /// A subvolume inside it (by its path below it) could not be opened and checked.
    #[error("opening its subvolume {}: {}", quote(.nested), errno_text(*.errno))]
    OpenNested { nested: PathBuf, errno: Errno },
    /// A subvolume inside it (by its path below it) was not deleted.
    #[error("its subvolume {}: {why}", quote(.nested))]
    Nested {
        nested: PathBuf,
        why: Box<NotDeleted>,
    },
}

/// Deletes the subvolume whose root is `fd`, entry `name` of `parent` (both verified by the
/// caller), nested subvolumes first. `Err` says why it was not (the caller removes it
/// otherwise); nested subvolumes deleted before a refusal stay deleted.
pub fn delete(parent: &OwnedFd, name: &CStr, fd: &OwnedFd) -> Result<Deleted, NotDeleted> {
    let id = btrfs::subvolume_id(fd).map_err(NotDeleted::Id)?;
    // A mount inside would be taken along (or make the deletion fail half way). Told by its
    // path in the mount table: without one, it cannot be ruled out, and the walk removes it
    // (never crossing into a mount).
    let path = crate::sys::mounts::fd_path(fd).ok_or(NotDeleted::PathUnknown)?;
    if let Some(m) = crate::sys::mounts::inside(&path).first() {
        return Err(NotDeleted::MountInside(m.point.clone()));
    }
    let mut nested = Vec::new();
    delete_at(parent, name, fd, id, 0, &mut nested).map(|how| Deleted { id, how, nested })
}

fn delete_at(
    parent: &OwnedFd,
    name: &CStr,
    fd: &OwnedFd,
    id: u64,
    depth: usize,
    nested: &mut Vec<u64>,
) -> Result<Destroyed, NotDeleted> {
    match btrfs::destroy(parent, name, id) {
        Ok(how) => return Ok(how),
        // Subvolumes inside: those first.
        Err(Errno::NOTEMPTY) if depth < MAX_NESTING => {}
        Err(e) => return Err(refused(e)),
    }
    let children = btrfs::children(fd).map_err(NotDeleted::ListNested)?;
    for child in children {
        let (dir, sub) = open_child(fd, &child).map_err(|errno| NotDeleted::OpenNested {
            nested: below(&child),
            errno,
        })?;
        delete_at(&dir, &child.name, &sub, child.id, depth + 1, nested).map_err(|why| {
            NotDeleted::Nested {
                nested: below(&child),
                why: Box::new(why),
            }
        })?;
        nested.push(child.id);
    }
    btrfs::destroy(parent, name, id).map_err(refused)
}

/// Opens the directory holding `child` (inside the subvolume root `fd`) and the child's root,
/// one component at a time without following symlinks, and checks it is that subvolume.
fn open_child(fd: &OwnedFd, child: &btrfs::Child) -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut dir = rustix::io::dup(fd)?;
    for part in child.path.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
        let part = std::ffi::CString::new(part).map_err(|_| Errno::INVAL)?;
        dir = dirfd::open_dir_at(&dir, &part)?;
    }
    let sub = dirfd::open_dir_at(&dir, &child.name)?;
    if btrfs::subvolume_id(&sub)? != child.id {
        return Err(Errno::STALE);
    }
    Ok((dir, sub))
}

/// The path of `child` below the subvolume it is in.
fn below(child: &btrfs::Child) -> PathBuf {
    let mut p = child.path.clone();
    p.extend_from_slice(child.name.to_bytes());
    PathBuf::from(std::ffi::OsString::from_vec(p))
}

/// Why the file system's deletion refused, by who asked.
fn refused(e: Errno) -> NotDeleted {
    match e {
        Errno::PERM if rustix::process::geteuid().is_root() => NotDeleted::RefusedToRoot(e),
        Errno::PERM | Errno::ACCESS => NotDeleted::NotPermitted(e),
        _ => NotDeleted::Failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn why_not_names_the_nested_subvolume_that_stayed() {
        let why = NotDeleted::Nested {
            nested: PathBuf::from("a/b"),
            why: Box::new(NotDeleted::Failed(Errno::IO)),
        };
        assert_eq!(
            why.to_string(),
            "its subvolume 'a/b': the file system's deletion failed: Input/output error"
        );
        assert_eq!(
            NotDeleted::NotPermitted(Errno::ACCESS).to_string(),
            "Permission denied (deleting a subvolume needs root, or the mount option \
             user_subvol_rm_allowed and what rmdir would need)"
        );
    }
}
