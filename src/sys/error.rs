//! Error types of the library: why a path could not be removed, and how that reads in one line.

use std::fmt;
use std::path::PathBuf;

use rustix::io::Errno;

/// Why one path was not removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Reason {
    /// The operating system refused (EPERM, EACCES, EBUSY, ENOTEMPTY, ...).
    #[error("{}", errno_text(*.0))]
    Os(Errno),
    /// A directory argument without `-r`/`-d`.
    #[error("Is a directory")]
    IsDirectory,
    /// `.` or `..` as the last component of an argument.
    #[error("refusing to remove '.' or '..' directory")]
    DotOrDotDot,
    /// The argument resolves to `/` (same device and inode).
    #[error("it resolves to '/' (same device and inode); refusing to remove the root directory")]
    Root,
    /// `/` could not be stated, so whether the argument is it cannot be told: refused.
    #[error("cannot tell whether it is '/' ('/' could not be stated: {}); left alone", errno_text(*.0))]
    RootUnknown(Errno),
    /// A trailing slash on a symbolic link would mean following it.
    #[error("is a symbolic link with a trailing slash; symlinks are never followed (name it without the slash to remove the link)")]
    SymlinkWithSlash,
    /// A directory was replaced by something else while being removed.
    #[error("changed during removal (device/inode no longer match); left alone")]
    Changed,
    /// A mount point of another file system inside the tree (not entered).
    #[error("is a mount point of another file system; skipped (use --cross-mounts to enter it)")]
    MountPoint,
    /// `--preserve-root=all` and a mount point as the argument.
    #[error("it is on a different device than its parent, and --preserve-root=all is in effect")]
    OtherDevice,
    /// Hidden into the trash, but freeing it failed (it stays there for the next reaper).
    #[error("hidden, but freeing it failed: {0}")]
    Freeing(String),
    /// A grace window was asked for and cannot be kept: the target stays where it is.
    #[error("cannot keep it restorable: {0}; left in place")]
    GraceRefused(String),
    /// `--from`: a directory on the way to the path is a symbolic link (never followed).
    #[error("{} is a symbolic link; --from never follows one (list the real path)", crate::sys::quote::quote(.0))]
    SymlinkInPath(PathBuf),
    /// `--from`: a record of a newline-separated list holds a NUL byte (no path can).
    #[error("holds a NUL byte, which no path can (a NUL-separated list needs -0)")]
    NulInPath,
    /// `--from FILE`: a device, never read (`/dev/zero` would be read until memory ran out).
    #[error("is a device, not a list of paths (a file or a pipe is)")]
    ListIsDevice,
    /// `--from FILE`: the list could not be opened or read (nothing was removed by it).
    #[error("the list of paths cannot be read: {}", errno_text(*.0))]
    ListUnreadable(Errno),
    /// A parallel job (MPI) could not do it: why, for every rank.
    #[error("{0}")]
    Job(String),
    /// Kept on purpose by the removal's condition (`remove::Keep`): why.
    #[error("{0}")]
    Kept(String),
    /// `--time btime` where the file system does not record creation times: 0 for a named
    /// directory (its file system records none: nothing was searched), else how many entries
    /// of the directory stayed unjudged.
    #[error("{}", no_birth_time(*.0))]
    NoBirthTime(u64),
}

fn no_birth_time(kept: u64) -> String {
    let what = "does not record creation times (--time btime)";
    match kept {
        0 => format!("its file system {what}: not searched"),
        1 => format!("1 entry kept: its file system {what}"),
        n => format!("{n} entries kept: their file system {what}"),
    }
}

/// One failed path with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub path: PathBuf,
    pub reason: Reason,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = crate::sys::quote::quote(&self.path);
        match self.reason {
            Reason::DotOrDotDot => write!(
                f,
                "refusing to remove '.' or '..' directory: skipping {path}"
            ),
            Reason::MountPoint | Reason::NoBirthTime(_) => {
                write!(f, "skipped {path}: {}", self.reason)
            }
            Reason::ListIsDevice => write!(f, "cannot read the list {path}: {}", self.reason),
            Reason::ListUnreadable(e) => {
                write!(f, "cannot read the list {path}: {}", errno_text(e))
            }
            _ => write!(f, "cannot remove {path}: {}", self.reason),
        }
    }
}

/// The C library's text for an errno, without Rust's " (os error N)" suffix.
pub fn errno_text(e: Errno) -> String {
    let text = std::io::Error::from_raw_os_error(e.raw_os_error()).to_string();
    match text.rfind(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// A path that failed, and why (`"path"`, `"path_hex"` when not UTF-8, `"error"`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorEntry {
    #[serde(flatten)]
    pub path: crate::sys::quote::PathField,
    pub error: String,
    /// A path inside a trash entry (a reaper's failure): the entry's ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// ... and where that path is now (inside the entry; `path` is where it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now_at: Option<crate::sys::quote::PathField>,
}

impl ErrorEntry {
    pub fn new(path: impl AsRef<std::ffi::OsStr>, error: impl Into<String>) -> Self {
        ErrorEntry {
            path: crate::sys::quote::PathField::new(path),
            error: error.into(),
            entry: None,
            now_at: None,
        }
    }
}

impl std::fmt::Display for ErrorEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.error)?;
        match (&self.entry, &self.now_at) {
            (Some(id), Some(at)) => write!(f, " (entry {id}; now at {at})"),
            (Some(id), None) => write!(f, " (entry {id})"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_text_has_no_rust_suffix() {
        assert_eq!(errno_text(Errno::PERM), "Operation not permitted");
    }

    #[test]
    fn failure_reads_like_rm() {
        let f = Failure {
            path: "a/b".into(),
            reason: Reason::Os(Errno::ACCESS),
        };
        assert_eq!(f.to_string(), "cannot remove 'a/b': Permission denied");
    }
}
