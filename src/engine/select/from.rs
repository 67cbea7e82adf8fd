//! `--from FILE` (`-` = stdin; `-0`: NUL-separated, else one path per line): remove exactly
//! the listed paths, the `find | xargs rm` pipeline in one process. The paths are grouped by
//! parent directory; each parent is opened once, one verified `openat(O_NOFOLLOW|O_DIRECTORY)`
//! per component from `/` (or the working directory), so a symlinked component is refused
//! instead of followed; the same parent spelled twice (`a/./b`, `a/b`) is one group; a path
//! listed twice is removed once and counted as a duplicate. The unlinking is the engine's
//! (`engine::remove::listed`). Never prints, never removes.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use rustix::fs::{openat, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::sys::dirfd::{self, Ident};
use crate::sys::error::{Failure, Reason};

/// Reads the records of a list: NUL-terminated with `nul`, else lines. Empty records (a
/// trailing newline, blank lines) are skipped.
pub fn read_list(mut r: impl Read, nul: bool) -> std::io::Result<Vec<Vec<u8>>> {
    let mut all = Vec::new();
    r.read_to_end(&mut all)?;
    let sep = if nul { 0 } else { b'\n' };
    Ok(all
        .split(|&b| b == sep)
        .filter(|r| !r.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

/// One listed path, split.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Listed {
    /// The parent's components (no empty ones, no `.`), and whether it starts at `/`.
    absolute: bool,
    parent: Vec<Vec<u8>>,
    name: Vec<u8>,
    /// Given with a trailing '/': must be a directory.
    dir_only: bool,
    /// As listed, for messages.
    shown: Vec<u8>,
}

fn split(path: &[u8]) -> Result<Listed, Reason> {
    let absolute = path.first() == Some(&b'/');
    let trimmed = {
        let mut end = path.len();
        while end > 1 && path[end - 1] == b'/' {
            end -= 1;
        }
        &path[..end]
    };
    let dir_only = trimmed.len() < path.len();
    let mut comps: Vec<Vec<u8>> = trimmed
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .map(<[u8]>::to_vec)
        .collect();
    // The last component as written: `.`/`..` and `/` itself are refused (as rm does).
    let last = trimmed.rsplit(|&b| b == b'/').next().unwrap_or_default();
    if last == b"." || last == b".." {
        return Err(Reason::DotOrDotDot);
    }
    let Some(name) = comps.pop() else {
        return Err(Reason::Root);
    };
    Ok(Listed {
        absolute,
        parent: comps,
        name,
        dir_only,
        shown: path.to_vec(),
    })
}

/// The listed paths, grouped by the directory that holds them.
pub struct Groups {
    pub groups: Vec<Group>,
    /// Paths that cannot be removed as listed (missing parents, symlinked components, ...).
    pub failures: Vec<Failure>,
    /// Paths listed more than once (removed once).
    pub duplicates: u64,
    /// Paths whose parent was missing (`-f` says nothing about them).
    pub missing: Vec<PathBuf>,
}

/// The names of one directory.
pub struct Group {
    pub dir: Arc<OwnedFd>,
    /// (name, path as listed, must be a directory)
    pub names: Vec<(CString, PathBuf, bool)>,
}

/// Splits, sorts and opens: one verified open of each parent, shared prefixes opened once.
pub fn group(records: Vec<Vec<u8>>) -> Groups {
    let mut failures = Vec::new();
    let mut listed: Vec<Listed> = Vec::with_capacity(records.len());
    for r in records {
        match split(&r) {
            Ok(l) => listed.push(l),
            Err(reason) => failures.push(Failure {
                path: PathBuf::from(OsStr::from_bytes(&r)),
                reason,
            }),
        }
    }
    listed.sort_unstable_by(|a, b| {
        (a.absolute, &a.parent, &a.name).cmp(&(b.absolute, &b.parent, &b.name))
    });
    let mut out = Groups {
        groups: Vec::new(),
        failures,
        duplicates: 0,
        missing: Vec::new(),
    };
    // The runs of paths with the same parent, then each run's parent opened: in parallel, as
    // a cold lookup is a disk read (a round trip on a network file system) and 2,000 parents
    // opened one after another were a quarter of a 200,000-path removal on xfs.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < listed.len() {
        let mut j = i + 1;
        while j < listed.len()
            && listed[j].absolute == listed[i].absolute
            && listed[j].parent == listed[i].parent
        {
            j += 1;
        }
        runs.push((i, j));
        i = j;
    }
    let opened = open_parents(&listed, &runs);
    let mut by_ident: HashMap<Ident, usize> = HashMap::new();
    let mut seen_in_group: Vec<std::collections::HashSet<Vec<u8>>> = Vec::new();
    for (&(i, j), opened) in runs.iter().zip(opened) {
        let same_parent = &listed[i..j];
        match opened {
            Ok(fd) => {
                let ident = dirfd::fstat(&*fd).map(|f| f.ident).ok();
                let g = match ident.and_then(|id| by_ident.get(&id).copied()) {
                    Some(g) => g,
                    None => {
                        out.groups.push(Group {
                            dir: fd,
                            names: Vec::new(),
                        });
                        seen_in_group.push(Default::default());
                        if let Some(id) = ident {
                            by_ident.insert(id, out.groups.len() - 1);
                        }
                        out.groups.len() - 1
                    }
                };
                for l in same_parent {
                    if !seen_in_group[g].insert(l.name.clone()) {
                        out.duplicates += 1;
                        continue;
                    }
                    let name = CString::new(l.name.clone()).expect("records hold no NUL");
                    let shown = PathBuf::from(OsStr::from_bytes(&l.shown));
                    out.groups[g].names.push((name, shown, l.dir_only));
                }
            }
            Err(why) => {
                for l in same_parent {
                    let path = PathBuf::from(OsStr::from_bytes(&l.shown));
                    match &why {
                        Open::Missing => out.missing.push(path),
                        Open::Symlink(at) => out.failures.push(Failure {
                            path,
                            reason: Reason::SymlinkInPath(at.clone()),
                        }),
                        Open::Os(e) => out.failures.push(Failure {
                            path,
                            reason: Reason::Os(*e),
                        }),
                    }
                }
            }
        }
    }
    out
}

/// Runs of paths per worker of `open_parents`, at least.
const RUNS_PER_OPENER: usize = 32;
/// Openers at most.
const OPENERS: usize = 16;

/// Opens the parent of each run (`(first, end)` in `listed`) with up to `OPENERS` threads, each
/// taking a contiguous share of the sorted runs (neighbours share most of their components).
fn open_parents(listed: &[Listed], runs: &[(usize, usize)]) -> Vec<Result<Arc<OwnedFd>, Open>> {
    let threads = (runs.len() / RUNS_PER_OPENER).clamp(1, OPENERS);
    let share = runs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .chunks(share)
            .map(|chunk| {
                s.spawn(move || {
                    let mut opener = Opener::default();
                    chunk
                        .iter()
                        .map(|&(i, _)| opener.open(listed[i].absolute, &listed[i].parent))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("opener thread"))
            .collect()
    })
}

enum Open {
    Missing,
    /// This prefix of the path is a symbolic link.
    Symlink(PathBuf),
    Os(Errno),
}

/// Opens parents component by component, keeping the fds of the last one's ancestors (the
/// parents come sorted: neighbours share most of their components).
#[derive(Default)]
struct Opener {
    base: Option<(bool, Arc<OwnedFd>)>,
    stack: Vec<(Vec<u8>, Arc<OwnedFd>)>,
}

impl Opener {
    fn open(&mut self, absolute: bool, comps: &[Vec<u8>]) -> Result<Arc<OwnedFd>, Open> {
        if self.base.as_ref().map(|b| b.0) != Some(absolute) {
            let start: &CStr = if absolute { c"/" } else { c"." };
            let fd = openat(
                rustix::fs::CWD,
                start,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(Open::Os)?;
            self.base = Some((absolute, Arc::new(fd)));
            self.stack.clear();
        }
        let common = self
            .stack
            .iter()
            .zip(comps)
            .take_while(|((have, _), want)| have == *want)
            .count();
        self.stack.truncate(common);
        for c in &comps[common..] {
            let parent = match self.stack.last() {
                Some((_, fd)) => fd.clone(),
                None => self.base.as_ref().expect("base opened").1.clone(),
            };
            let name = CString::new(c.clone()).expect("records hold no NUL");
            let fd = dirfd::open_dir_at_only(&*parent, &name).map_err(|e| match e {
                Errno::NOENT => Open::Missing,
                Errno::NOTDIR | Errno::LOOP => match dirfd::lstat_at(&*parent, &name) {
                    Ok(f) if f.file_type == FileType::Symlink => {
                        let mut shown = if absolute {
                            PathBuf::from("/")
                        } else {
                            PathBuf::new()
                        };
                        for p in &self.stack {
                            shown.push(OsStr::from_bytes(&p.0));
                        }
                        shown.push(OsStr::from_bytes(c));
                        Open::Symlink(shown)
                    }
                    _ => Open::Os(Errno::NOTDIR),
                },
                e => Open::Os(e),
            })?;
            self.stack.push((c.clone(), Arc::new(fd)));
        }
        Ok(match self.stack.last() {
            Some((_, fd)) => fd.clone(),
            None => self.base.as_ref().expect("base opened").1.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_parent_and_name() {
        let l = split(b"/a//b/./c/").unwrap();
        assert!(l.absolute && l.dir_only);
        assert_eq!(l.parent, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(l.name, b"c");
        let l = split(b"x").unwrap();
        assert!(!l.absolute && l.parent.is_empty());
        assert_eq!(split(b"a/.."), Err(Reason::DotOrDotDot));
        assert_eq!(split(b"a/."), Err(Reason::DotOrDotDot));
        assert_eq!(split(b"/"), Err(Reason::Root));
        assert_eq!(split(b"//"), Err(Reason::Root));
        // `..` inside is the kernel's (no symlink is followed on the way).
        assert_eq!(
            split(b"a/../b").unwrap().parent,
            vec![b"a".to_vec(), b"..".to_vec()]
        );
    }

    #[test]
    fn lists_split_on_newlines_or_nuls() {
        let r = read_list(&b"a\nb c\n\nd\n"[..], false).unwrap();
        assert_eq!(r, vec![b"a".to_vec(), b"b c".to_vec(), b"d".to_vec()]);
        let r = read_list(&b"a\nb\0c\0"[..], true).unwrap();
        assert_eq!(r, vec![b"a\nb".to_vec(), b"c".to_vec()]);
    }
}
