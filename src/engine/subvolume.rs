//! A btrfs subvolume met as a target or inside a tree, deleted whole by the file system's own
//! deletion, nested subvolumes first: it leaves the namespace at once and btrfs's cleaner frees
//! its blocks in the background. Works only on the fds the walk verified (the parent that holds
//! it, the subvolume's root), and says why when it does not (the walk then removes it file by
//! file). Never prints, never follows a symlink, never deletes what holds a mount.

use std::ffi::CStr;
use std::os::fd::OwnedFd;

use rustix::io::Errno;

use crate::sys::btrfs::{self, Destroyed};
use crate::sys::dirfd;

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

/// Deletes the subvolume whose root is `fd`, entry `name` of `parent` (both verified by the
/// caller), nested subvolumes first. `Err` says in a few words why it was not (the caller
/// removes it otherwise); nested subvolumes deleted before a refusal stay deleted.
pub fn delete(parent: &OwnedFd, name: &CStr, fd: &OwnedFd) -> Result<Deleted, String> {
    let id = btrfs::subvolume_id(fd).map_err(|e| format!("its subvolume id: {}", text(e)))?;
    // A mount inside would be taken along (or make the deletion fail half way). Told by its
    // path in the mount table: without one, it cannot be ruled out, and the walk removes it
    // (never crossing into a mount).
    let path = crate::sys::mounts::fd_path(fd)
        .ok_or("its path is unknown, so a mount inside it cannot be ruled out")?;
    if let Some(m) = crate::sys::mounts::inside(&path).first() {
        return Err(format!(
            "another file system is mounted inside it ({})",
            crate::sys::quote::quote(&m.point)
        ));
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
) -> Result<Destroyed, String> {
    match btrfs::destroy(parent, name, id) {
        Ok(how) => return Ok(how),
        // Subvolumes inside: those first.
        Err(Errno::NOTEMPTY) if depth < MAX_NESTING => {}
        Err(e) => return Err(why(e)),
    }
    let children =
        btrfs::children(fd).map_err(|e| format!("listing its subvolumes: {}", text(e)))?;
    for child in children {
        let (dir, sub) = open_child(fd, &child)
            .map_err(|e| format!("opening its subvolume {}: {}", shown(&child), text(e)))?;
        delete_at(&dir, &child.name, &sub, child.id, depth + 1, nested)
            .map_err(|e| format!("its subvolume {}: {e}", shown(&child)))?;
        nested.push(child.id);
    }
    btrfs::destroy(parent, name, id).map_err(why)
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

fn shown(child: &btrfs::Child) -> String {
    let mut p = child.path.clone();
    p.extend_from_slice(child.name.to_bytes());
    crate::sys::quote::quote(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&p))
}

fn text(e: Errno) -> String {
    crate::sys::error::errno_text(e)
}

/// Why the file system's deletion refused, in the words a user can act on.
fn why(e: Errno) -> String {
    match e {
        // Root is refused the default subvolume and one a `btrfs send` reads.
        Errno::PERM if rustix::process::geteuid().is_root() => format!(
            "{} (the default subvolume, or one in use by a send)",
            text(e)
        ),
        Errno::PERM | Errno::ACCESS => format!(
            "{} (deleting a subvolume needs root, or the mount option user_subvol_rm_allowed \
             and what rmdir would need)",
            text(e)
        ),
        _ => format!("the file system's deletion failed: {}", text(e)),
    }
}
