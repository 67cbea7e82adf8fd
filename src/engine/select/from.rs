//! `--from FILE` (`-` = stdin; `-0`: NUL-separated, else one path per line): remove exactly
//! the listed paths, the `find | xargs rm` pipeline in one process. The list is read up to a
//! bound (`MAX_LIST`). The paths are grouped by parent directory; each parent is looked up
//! from `/` (or the working directory) with `openat2(RESOLVE_NO_SYMLINKS)`, so a symlinked
//! component is refused instead of followed, and identified by device and inode; the same
//! parent spelled twice (`a/./b`, `a/b`) is one group; a path listed twice is removed once
//! and counted as a duplicate. No fd is held per parent: the removal reopens each one when its
//! names' turn comes, through a bounded cache (`Dirs`, least recently used out), and checks it
//! is the same directory, so any number of parents works under a low `ulimit -n`. The
//! unlinking is the engine's (`engine::remove::listed`). Never prints, never removes.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{CStr, CString, OsStr};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{FileType, OFlags};
use rustix::io::Errno;

use crate::sys::dirfd::{self, Ident};
use crate::sys::error::{Failure, Reason};

/// A list as read: one buffer holding every record followed by a NUL (its separator
/// replaced), so that a name at the end of a record is a C string in place: 200,000 paths
/// are one allocation, not a million.
pub struct List {
    buf: Vec<u8>,
    /// Each record's bytes in `buf` (its NUL follows).
    records: Vec<(usize, usize)>,
}

impl List {
    fn len(&self) -> usize {
        self.records.len()
    }

    fn record(&self, i: usize) -> &[u8] {
        let (a, b) = self.records[i];
        &self.buf[a..b]
    }

    /// Record `i` and its NUL.
    fn record_nul(&self, i: usize) -> &[u8] {
        let (a, b) = self.records[i];
        &self.buf[a..=b]
    }
}

/// The most a list may hold (some 20 million paths): a list is read whole, and `/dev/zero`
/// through a pipe would never end.
pub const MAX_LIST: u64 = 1 << 30;

/// Reads the records of a list: NUL-terminated with `nul`, else lines. Empty records (a
/// trailing newline, blank lines) are skipped. A list longer than `MAX_LIST` is refused
/// (`EFBIG`) having held no more.
pub fn read_list(r: impl Read, nul: bool) -> std::io::Result<List> {
    let mut buf = Vec::new();
    r.take(MAX_LIST + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_LIST {
        return Err(Errno::FBIG.into());
    }
    let sep = if nul { 0 } else { b'\n' };
    if buf.last().is_some_and(|&b| b != sep) {
        buf.push(sep);
    }
    let mut records = Vec::new();
    let mut start = 0;
    for (i, b) in buf.iter_mut().enumerate() {
        if *b == sep {
            if i > start {
                records.push((start, i));
            }
            *b = 0;
            start = i + 1;
        }
    }
    Ok(List { buf, records })
}

/// One listed path, split (borrowed from its record).
struct Listed<'a> {
    absolute: bool,
    /// What precedes the name, as written (`a//./b`).
    parent: &'a [u8],
    /// The last component, as written ...
    last: &'a [u8],
    /// ... and as a C string: in place where the record ends with it (no trailing '/').
    name: Cow<'a, CStr>,
    /// Given with a trailing '/': must be a directory.
    dir_only: bool,
}

fn split(record_nul: &[u8]) -> Result<Listed<'_>, Reason> {
    let path = &record_nul[..record_nul.len() - 1];
    if path.contains(&0) {
        return Err(Reason::NulInPath);
    }
    let absolute = path.first() == Some(&b'/');
    let mut end = path.len();
    while end > 1 && path[end - 1] == b'/' {
        end -= 1;
    }
    let trimmed = &path[..end];
    let dir_only = end < path.len();
    let (parent, last) = match trimmed.iter().rposition(|&b| b == b'/') {
        Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
        None => (&trimmed[..0], trimmed),
    };
    // The last component as written: `.`/`..` and `/` itself are refused (as rm does).
    if last == b"." || last == b".." {
        return Err(Reason::DotOrDotDot);
    }
    if last.is_empty() {
        return Err(Reason::Root);
    }
    let name = if dir_only {
        Cow::Owned(CString::new(last).expect("checked: no NUL"))
    } else {
        Cow::Borrowed(
            CStr::from_bytes_with_nul(&record_nul[record_nul.len() - 1 - last.len()..])
                .expect("checked: one NUL, at the end"),
        )
    };
    Ok(Listed {
        absolute,
        parent,
        last,
        name,
        dir_only,
    })
}

/// One parent as written, and the paths listed under it (their indices in the list).
struct Spelling<'a> {
    absolute: bool,
    parent: &'a [u8],
    under: Vec<(usize, Listed<'a>)>,
}

/// One parent to open (its components), and its spellings (indices of `Spelling`s).
struct Parent<'a> {
    absolute: bool,
    comps: Vec<&'a [u8]>,
    spellings: Vec<usize>,
}

/// A parent's components as the kernel walks them (no empty ones, no `.`).
fn components(parent: &[u8]) -> Vec<&[u8]> {
    parent
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .collect()
}

/// The listed paths, grouped by the directory that holds them.
pub struct Groups<'a> {
    pub groups: Vec<Group<'a>>,
    /// Paths that cannot be removed as listed (missing parents, symlinked components, ...).
    pub failures: Vec<Failure>,
    /// Paths listed more than once (removed once).
    pub duplicates: u64,
    /// Paths whose parent was missing (`-f` says nothing about them).
    pub missing: Vec<PathBuf>,
}

/// The names of one directory, in the order listed.
pub struct Group<'a> {
    /// The directory, as it was looked up (reopened through `Dirs`).
    pub dir: Dir,
    pub names: Vec<Name<'a>>,
}

/// A listed path's directory: how to reach it again and what it was.
#[derive(Clone, Debug)]
pub struct Dir {
    absolute: bool,
    /// Its components joined by `/` ("." for the start itself).
    rel: CString,
    ident: Ident,
}

/// One listed name of a group.
pub struct Name<'a> {
    pub name: Cow<'a, CStr>,
    /// The path as listed, for messages.
    pub shown: &'a Path,
    /// Listed with a trailing '/': must be a directory.
    pub dir_only: bool,
}

fn shown(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

/// Splits, groups by parent and opens: one verified open of each parent (the distinct
/// parents opened in sorted order, so that neighbours share the opens of their common
/// components); the groups and the names in each keep the list's order.
pub fn group(list: &List) -> Groups<'_> {
    let mut out = Groups {
        groups: Vec::new(),
        failures: Vec::new(),
        duplicates: 0,
        missing: Vec::new(),
    };
    // Each distinct parent as written, with the records under it.
    let mut index: HashMap<(bool, &[u8]), usize> = HashMap::new();
    let mut written: Vec<Spelling<'_>> = Vec::new();
    for i in 0..list.len() {
        match split(list.record_nul(i)) {
            Ok(l) => {
                let k = *index.entry((l.absolute, l.parent)).or_insert_with(|| {
                    written.push(Spelling {
                        absolute: l.absolute,
                        parent: l.parent,
                        under: Vec::new(),
                    });
                    written.len() - 1
                });
                written[k].under.push((i, l));
            }
            Err(reason) => out.failures.push(Failure {
                path: shown(list.record(i)).to_path_buf(),
                reason,
            }),
        }
    }
    // Spellings of one parent (`a/./b`, `a//b`, `a/b`) open once; the parents sorted by
    // component.
    let mut parents: Vec<(bool, Vec<&[u8]>, usize)> = written
        .iter()
        .enumerate()
        .map(|(k, w)| (w.absolute, components(w.parent), k))
        .collect();
    parents.sort_unstable();
    let mut runs: Vec<Parent<'_>> = Vec::new();
    for (absolute, comps, k) in parents {
        match runs.last_mut() {
            Some(r) if r.absolute == absolute && r.comps == comps => r.spellings.push(k),
            _ => runs.push(Parent {
                absolute,
                comps,
                spellings: vec![k],
            }),
        }
    }
    let opened = open_parents(&runs);
    let mut run_of = vec![0; written.len()];
    for (r, p) in runs.iter().enumerate() {
        for &k in &p.spellings {
            run_of[k] = r;
        }
    }
    // The groups in the order their parents first appear in the list (as the unlink floor
    // takes them: bench/select.sh).
    let mut by_ident: HashMap<Ident, usize> = HashMap::new();
    let mut seen: Vec<HashSet<&[u8]>> = Vec::new();
    for (k, Spelling { under, .. }) in written.into_iter().enumerate() {
        let r = run_of[k];
        match &opened[r] {
            Ok(dir) => {
                let g = match by_ident.get(&dir.ident).copied() {
                    Some(g) => g,
                    None => {
                        out.groups.push(Group {
                            dir: dir.clone(),
                            names: Vec::with_capacity(under.len()),
                        });
                        seen.push(HashSet::with_capacity(under.len()));
                        by_ident.insert(dir.ident, out.groups.len() - 1);
                        out.groups.len() - 1
                    }
                };
                for (i, l) in under {
                    if !seen[g].insert(l.last) {
                        out.duplicates += 1;
                        continue;
                    }
                    out.groups[g].names.push(Name {
                        name: l.name,
                        shown: shown(list.record(i)),
                        dir_only: l.dir_only,
                    });
                }
            }
            Err(why) => {
                for (i, _) in under {
                    let path = shown(list.record(i)).to_path_buf();
                    match why {
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

/// Parents per worker of `open_parents`, at least.
const RUNS_PER_OPENER: usize = 32;
/// Openers at most.
const OPENERS: usize = 16;

/// Looks up each parent with up to `OPENERS` threads, each taking a contiguous share of the
/// sorted parents: a cold lookup is a disk read (a round trip on a network file system), and
/// 2,000 parents looked up one after another were a quarter of a 200,000-path removal on xfs.
/// No fd outlives its lookup.
fn open_parents(runs: &[Parent<'_>]) -> Vec<Result<Dir, Open>> {
    let threads = (runs.len() / RUNS_PER_OPENER).clamp(1, OPENERS);
    let share = runs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .chunks(share)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|p| {
                            let rel = join_components(&p.comps);
                            let fd = open_parent(p.absolute, &rel, &p.comps)?;
                            let ident = dirfd::fstat(&fd).map_err(Open::Os)?.ident;
                            Ok(Dir {
                                absolute: p.absolute,
                                rel,
                                ident,
                            })
                        })
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

/// `comps` joined by `/` ("." for none).
fn join_components(comps: &[&[u8]]) -> CString {
    if comps.is_empty() {
        return c".".to_owned();
    }
    CString::new(comps.join(&b'/')).expect("records hold no NUL")
}

/// Opens the directory `rel` from `/` (`absolute`) or the working directory as `O_PATH`,
/// never through a symlink (`openat2(RESOLVE_NO_SYMLINKS)`): a symlinked component is said
/// by the prefix that is one (`comps`, the components of `rel`).
fn open_parent(absolute: bool, rel: &CStr, comps: &[&[u8]]) -> Result<OwnedFd, Open> {
    let start: &Path = if absolute {
        Path::new("/")
    } else {
        Path::new(".")
    };
    let base = dirfd::open_dir_path_only(start).map_err(Open::Os)?;
    let flags = OFlags::PATH | OFlags::DIRECTORY;
    match crate::sys::safeopen::open_no_symlinks(&base, rel.to_bytes(), flags) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT) => Err(Open::Missing),
        Err(Errno::LOOP | Errno::NOTDIR) => Err(symlink_in(&base, absolute, comps)),
        Err(e) => Err(Open::Os(e)),
    }
}

/// Which component of `comps` below `base` is a symbolic link (the lookup refused one), else
/// why the way is blocked.
fn symlink_in(base: &OwnedFd, absolute: bool, comps: &[&[u8]]) -> Open {
    let mut shown = if absolute {
        PathBuf::from("/")
    } else {
        PathBuf::new()
    };
    let mut dir = match rustix::io::dup(base) {
        Ok(fd) => fd,
        Err(e) => return Open::Os(e),
    };
    for c in comps {
        shown.push(OsStr::from_bytes(c));
        let Ok(name) = CString::new(*c) else {
            return Open::Os(Errno::INVAL);
        };
        match dirfd::lstat_at(&dir, &name) {
            Ok(f) if f.file_type == FileType::Symlink => return Open::Symlink(shown),
            Ok(f) if f.file_type != FileType::Directory => return Open::Os(Errno::NOTDIR),
            Ok(_) => {}
            Err(Errno::NOENT) => return Open::Missing,
            Err(e) => return Open::Os(e),
        }
        dir = match dirfd::open_dir_at_only(&dir, &name) {
            Ok(fd) => fd,
            Err(e) => return Open::Os(e),
        };
    }
    Open::Os(Errno::LOOP)
}

/// The directories of the groups, open while their names are worked on: at most `capacity`
/// fds, the least recently used closed first (a worker still using one keeps it until done).
/// Each is reopened as it was looked up and checked to be the same directory.
pub struct Dirs {
    capacity: usize,
    open: std::sync::Mutex<OpenDirs>,
}

/// The open directories, and their use order (the least recent first).
type OpenDirs = (HashMap<Ident, Arc<OwnedFd>>, VecDeque<Ident>);

impl Dirs {
    pub fn new(capacity: usize) -> Dirs {
        Dirs {
            capacity: capacity.max(1),
            open: std::sync::Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }

    /// The directory `d`, open (reopened if it was closed, and checked to be the same).
    pub fn get(&self, d: &Dir) -> Result<Arc<OwnedFd>, Reason> {
        {
            let mut g = self.open.lock().expect("dirs lock");
            if let Some(fd) = g.0.get(&d.ident).cloned() {
                if g.1.back() != Some(&d.ident) {
                    g.1.retain(|i| *i != d.ident);
                    g.1.push_back(d.ident);
                }
                return Ok(fd);
            }
        }
        let fd = match open_parent(d.absolute, &d.rel, &[]) {
            Ok(fd) => fd,
            Err(Open::Missing) => return Err(Reason::Os(Errno::NOENT)),
            // A component made a symbolic link (or no directory) since it was looked up.
            Err(Open::Symlink(_) | Open::Os(Errno::LOOP | Errno::NOTDIR)) => {
                return Err(Reason::Changed)
            }
            Err(Open::Os(e)) => return Err(Reason::Os(e)),
        };
        if dirfd::fstat(&fd).map(|f| f.ident) != Ok(d.ident) {
            return Err(Reason::Changed);
        }
        let fd = Arc::new(fd);
        let mut g = self.open.lock().expect("dirs lock");
        g.0.insert(d.ident, fd.clone());
        g.1.push_back(d.ident);
        while g.0.len() > self.capacity {
            match g.1.pop_front() {
                Some(old) => {
                    g.0.remove(&old);
                }
                None => break,
            }
        }
        Ok(fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (absolute, parent components, name, dir_only) of one path.
    type Parts = (bool, Vec<Vec<u8>>, Vec<u8>, bool);

    fn sp(path: &[u8]) -> Result<Parts, Reason> {
        let mut rec = path.to_vec();
        rec.push(0);
        let l = split(&rec)?;
        assert_eq!(l.name.to_bytes(), l.last);
        Ok((
            l.absolute,
            components(l.parent)
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect(),
            l.last.to_vec(),
            l.dir_only,
        ))
    }

    #[test]
    fn paths_split_into_parent_and_name() {
        let (absolute, parent, name, dir_only) = sp(b"/a//b/./c/").unwrap();
        assert!(absolute && dir_only);
        assert_eq!(parent, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(name, b"c");
        let (absolute, parent, name, dir_only) = sp(b"x").unwrap();
        assert!(!absolute && parent.is_empty() && !dir_only);
        assert_eq!(name, b"x");
        assert_eq!(sp(b"a/.."), Err(Reason::DotOrDotDot));
        assert_eq!(sp(b"a/."), Err(Reason::DotOrDotDot));
        assert_eq!(sp(b"a/./"), Err(Reason::DotOrDotDot));
        assert_eq!(sp(b"/"), Err(Reason::Root));
        assert_eq!(sp(b"//"), Err(Reason::Root));
        assert_eq!(sp(b"a\0b"), Err(Reason::NulInPath));
        // `..` inside is the kernel's (no symlink is followed on the way).
        assert_eq!(
            sp(b"a/../b").unwrap().1,
            vec![b"a".to_vec(), b"..".to_vec()]
        );
    }

    fn records(l: &List) -> Vec<Vec<u8>> {
        (0..l.len()).map(|i| l.record(i).to_vec()).collect()
    }

    #[test]
    fn lists_split_on_newlines_or_nuls() {
        let r = read_list(&b"a\nb c\n\nd\n"[..], false).unwrap();
        assert_eq!(
            records(&r),
            vec![b"a".to_vec(), b"b c".to_vec(), b"d".to_vec()]
        );
        let r = read_list(&b"a\nb\0c\0"[..], true).unwrap();
        assert_eq!(records(&r), vec![b"a\nb".to_vec(), b"c".to_vec()]);
        // The last record needs no separator; each is followed by a NUL in the buffer.
        let r = read_list(&b"x\ny"[..], false).unwrap();
        assert_eq!(records(&r), vec![b"x".to_vec(), b"y".to_vec()]);
        assert!((0..r.len()).all(|i| r.record_nul(i).last() == Some(&0)));
        assert_eq!(read_list(&b""[..], true).unwrap().len(), 0);
    }
}
