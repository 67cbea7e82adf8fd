//! `reclaim restore`: puts a trashed target back at its original path, while it is still
//! whole (no reaper has claimed it). One rename, the other way; refuses rather than
//! overwrite anything or put it into a different directory than it came from.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{fsync, renameat_with, unlinkat, AtFlags, RenameFlags};
use rustix::io::Errno;

use super::meta::{self, Meta};
use super::{Trash, DATA, REAPING};
use crate::dirfd;
use crate::locks;

/// Why an entry was not restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error("no such entry in any trash this user can see")]
    NotFound,
    #[error("already being freed by the reaper, cannot restore")]
    Reaping,
    #[error("busy (being hidden, freed or restored right now); try again")]
    Busy,
    #[error("original path is taken")]
    Taken,
    #[error("its original directory '{0}' is gone or was replaced")]
    ParentGone(PathBuf),
    #[error("its record (meta.json) is missing or unreadable: the original path is unknown")]
    NoMeta,
    #[error("{}", crate::error::errno_text(*.0))]
    Os(Errno),
}

/// A restored entry.
#[derive(Debug, serde::Serialize)]
pub struct Restored {
    pub id: String,
    pub path: String,
}

/// Restores the entry named by `arg`: an entry id, or an original path (then the newest
/// entry that came from that path). A failure carries the original path when it is known.
pub fn restore(trashes: &[Trash], arg: &OsStr) -> Result<Restored, (Option<String>, RestoreError)> {
    let (trash, id) = find(trashes, arg).ok_or((None, RestoreError::NotFound))?;
    let entry = dirfd::open_dir_at(&trash.dir, &id).map_err(|e| match e {
        Errno::NOENT => (None, RestoreError::NotFound),
        e => (None, RestoreError::Os(e)),
    })?;
    let m = Meta::read(&entry);
    let original = m.as_ref().map(|m| m.original.clone());
    let fail = |e: RestoreError| (original.clone(), e);
    if !locks::try_exclusive(&entry).map_err(|e| fail(RestoreError::Os(e)))? {
        return Err(fail(if dirfd::lstat_at(&entry, REAPING).is_ok() {
            RestoreError::Reaping
        } else {
            RestoreError::Busy
        }));
    }
    if dirfd::lstat_at(&entry, DATA).is_err() {
        return Err(fail(RestoreError::Reaping));
    }
    let m = m.ok_or_else(|| fail(RestoreError::NoMeta))?;
    let path = m.original_path();
    let (parent, name) = split(&path).ok_or_else(|| fail(RestoreError::NoMeta))?;
    let gone = || fail(RestoreError::ParentGone(parent.to_path_buf()));
    let pfd = dirfd::open_dir_path(parent).map_err(|_| gone())?;
    let pf = dirfd::fstat(&pfd).map_err(|e| fail(RestoreError::Os(e)))?;
    if (pf.ident.dev, pf.ident.ino) != (m.parent_dev, m.parent_ino) {
        return Err(gone());
    }
    renameat_with(&entry, DATA, &pfd, &name, RenameFlags::NOREPLACE).map_err(|e| {
        fail(match e {
            Errno::EXIST | Errno::NOTEMPTY => RestoreError::Taken,
            e => RestoreError::Os(e),
        })
    })?;
    // The target is back; what is left is an empty record (a crash here leaves a data-less
    // entry, which the reaper removes).
    let _ = fsync(&pfd);
    let _ = unlinkat(&entry, meta::META, AtFlags::empty());
    let _ = unlinkat(&trash.dir, &id, AtFlags::REMOVEDIR);
    Ok(Restored {
        id: m.id,
        path: path.to_string_lossy().into_owned(),
    })
}

fn split(p: &Path) -> Option<(&Path, CString)> {
    let name = CString::new(p.file_name()?.as_bytes()).ok()?;
    Some((p.parent()?, name))
}

/// The trash and entry name for `arg`.
fn find<'t>(trashes: &'t [Trash], arg: &OsStr) -> Option<(&'t Trash, CString)> {
    let bytes = arg.as_bytes();
    if meta::is_entry_name(bytes) {
        let name = CString::new(bytes).ok()?;
        return trashes
            .iter()
            .find(|t| dirfd::lstat_at(&t.dir, &name).is_ok())
            .map(|t| (t, name));
    }
    let wanted = absolute(Path::new(arg))?;
    let mut best: Option<(&Trash, CString)> = None;
    for t in trashes {
        for name in t.entries() {
            let Ok(entry) = dirfd::open_dir_at(&t.dir, &name) else {
                continue;
            };
            let Some(m) = Meta::read(&entry) else {
                continue;
            };
            let newer = match &best {
                None => true,
                Some((_, b)) => name.as_bytes() > b.as_bytes(),
            };
            if newer && m.original_path() == wanted {
                best = Some((t, name));
            }
        }
    }
    best
}

/// `arg` as the absolute path reclaim recorded: its parent canonicalized, its name kept.
fn absolute(arg: &Path) -> Option<PathBuf> {
    let name = arg.file_name()?;
    let parent = match arg.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let real = std::fs::canonicalize(&parent)
        .ok()
        .or_else(|| lexical_absolute(&parent))?;
    Some(real.join(name))
}

/// For a parent that no longer exists: made absolute and `.`/`..` resolved by name.
fn lexical_absolute(p: &Path) -> Option<PathBuf> {
    let mut out = if p.is_absolute() {
        PathBuf::new()
    } else {
        std::env::current_dir().ok()?
    };
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    Some(out)
}

/// `reclaim restore [--json] ID|PATH...`; returns the exit code.
pub fn command(args: &[std::ffi::OsString], json: bool) -> u8 {
    let trashes = super::discover(super::uid());
    let mut restored = Vec::new();
    let mut errors = Vec::new();
    for a in args {
        match restore(&trashes, a) {
            Ok(r) => {
                if !json {
                    println!("restored '{}' (entry {})", r.path, r.id);
                }
                restored.push(r);
            }
            Err((original, e)) => {
                let arg = Path::new(a).display().to_string();
                let shown = match &original {
                    Some(o) if *o != arg => format!("'{o}' (entry {arg})"),
                    _ => format!("'{arg}'"),
                };
                eprintln!("reclaim: cannot restore {shown}: {e}");
                errors.push(crate::report::ErrorEntry {
                    path: original.unwrap_or(arg),
                    error: e.to_string(),
                });
            }
        }
    }
    if json {
        let v = serde_json::json!({ "restored": restored, "errors": errors });
        println!("{v}");
    }
    u8::from(!errors.is_empty())
}
