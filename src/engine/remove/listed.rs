//! `--from FILE`'s removal (issue 22; docs/ARCHITECTURE.md): the listed names of each parent directory
//! (`engine::select::from` grouped them and looked each parent up once) unlinked by several
//! workers in batches, in inode order when a group is large, each parent reopened and checked
//! through a bounded cache of fds (`from::Dirs`: half the fd budget); the listed directories
//! returned as trees for the engine. A dry run only counts. Never prints (failures go to the
//! Sink).

use std::collections::HashMap;
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rustix::fs::FileType;

use super::unlink::{unlink, Entry, Paced};
use rustix::io::Errno;

use super::{Counters, DirTarget, Settings, Sink};
use crate::engine::select::from::{self, Dirs, Group};
use crate::engine::select::{tally, Selection};
use crate::sys::dirfd;
use crate::sys::error::{Failure, Reason};

/// Groups from this many names on are unlinked in inode order (as the engine's big
/// directories): the parent is listed once to learn the inode numbers.
const SORT_MIN: usize = 10_000;

/// What removing the groups' non-directories left for the caller.
#[derive(Default)]
pub struct Removed {
    /// Listed directories: removed whole by the engine (with `-r`).
    pub trees: Vec<DirTarget>,
    pub failures: Vec<Failure>,
}

/// Unlinks the listed non-directories of every group with `opts.threads` workers (a dry run
/// only counts them); returns the listed directories for the engine. `recursive`: a directory
/// is a tree to remove, else a failure (`Is a directory`). `force`: a missing name is no
/// failure. `sel` carries the audit list and the totals.
pub fn remove(
    groups: &[Group],
    opts: &Settings,
    recursive: bool,
    force: bool,
    sel: &Selection,
    counters: &Counters,
    sink: &dyn Sink,
) -> Removed {
    // Work items: (group, first name, end), batches of `opts.batch`.
    let mut work: Vec<(usize, usize, usize)> = Vec::new();
    let mut order: Vec<Vec<usize>> = Vec::with_capacity(groups.len());
    let dirs = Dirs::new(opts.fd_budget / 2);
    for (g, group) in groups.iter().enumerate() {
        order.push(inode_order(group, &dirs));
        let n = group.names.len();
        let size = opts.batch.max(1);
        let mut s = 0;
        while s < n {
            work.push((g, s, (s + size).min(n)));
            s += size;
        }
    }
    let ctx = Ctx {
        opts,
        recursive,
        force,
        sel,
        counters,
        sink,
        dirs: &dirs,
    };
    let next = AtomicUsize::new(0);
    let out = Mutex::new(Removed::default());
    let threads = opts.workers().min(work.len().max(1));
    // The workers run behind the measured concurrency's gate, as a tree's do: `opts.threads`
    // is the most it may ever let in (16 on ext4 here), and on xfs 8 unlinkers at once took
    // 1.3x as long as 2 (bench/RESULTS.md, 2026-11-26).
    let gate = opts
        .concurrency
        .as_ref()
        .filter(|_| !opts.dry_run)
        .map(|c| c.gate());
    super::measured(opts, || {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    if let Some(g) = &gate {
                        g.enter();
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= work.len() || crate::sys::interrupt::stopping() {
                        if let Some(g) = &gate {
                            g.leave(false);
                        }
                        break;
                    }
                    if let Some(g) = &gate {
                        g.begin();
                    }
                    let (g, from, to) = work[i];
                    let mut local = ctx.batch(&groups[g], &order[g][from..to]);
                    let mut all = out.lock().expect("from lock");
                    all.trees.append(&mut local.trees);
                    all.failures.append(&mut local.failures);
                    drop(all);
                    if let Some(g) = &gate {
                        g.leave(true);
                    }
                });
            }
        })
    });
    out.into_inner().expect("from lock")
}

/// What every batch of `remove` shares.
struct Ctx<'a> {
    opts: &'a Settings,
    recursive: bool,
    force: bool,
    sel: &'a Selection,
    counters: &'a Counters,
    sink: &'a dyn Sink,
    dirs: &'a Dirs,
}

impl Ctx<'_> {
    /// One batch: the names of `group` at the indices `batch`, unlinked one by one (a listed
    /// directory becomes a tree); the totals and audit records added once at the end.
    fn batch(&self, group: &Group, batch: &[usize]) -> Removed {
        let (sel, counters, sink) = (self.sel, self.counters, self.sink);
        let mut local = Removed::default();
        let mut records = Vec::new();
        let mut tally = tally::Batch::default();
        let dir = match self.dirs.get(&group.dir) {
            Ok(fd) => fd,
            Err(reason) => {
                // The directory is gone or another one now: none of its names is touched.
                for &k in batch {
                    let f = Failure {
                        path: group.names[k].shown.to_path_buf(),
                        reason: reason.clone(),
                    };
                    counters.errors.fetch_add(1, Ordering::Relaxed);
                    sink.failed(&f);
                    local.failures.push(f);
                }
                return local;
            }
        };
        for &k in batch {
            if crate::sys::interrupt::stopping() {
                break;
            }
            let from::Name {
                name,
                shown,
                dir_only,
            } = &group.names[k];
            let (name, shown, dir_only) = (&**name, *shown, *dir_only);
            let fail = |local: &mut Removed, reason: Reason| {
                let f = Failure {
                    path: shown.to_path_buf(),
                    reason,
                };
                counters.errors.fetch_add(1, Ordering::Relaxed);
                sink.failed(&f);
                local.failures.push(f);
            };
            let st = if sel.counting || dir_only {
                match sel.stat(&*dir, name) {
                    Ok(st) => Some(st),
                    Err(Errno::NOENT) if self.force => continue,
                    Err(e) => {
                        fail(&mut local, Reason::Os(e));
                        continue;
                    }
                }
            } else {
                None
            };
            let is_dir = st.is_some_and(|st| st.kind == FileType::Directory);
            if dir_only && !is_dir {
                fail(&mut local, Reason::Os(Errno::NOTDIR));
                continue;
            }
            if !is_dir && !self.opts.dry_run {
                match unlink(&*dir, name, Entry::NonDir, Paced::by(self.opts)) {
                    Ok(()) => {}
                    Err(Errno::NOENT) if self.force => continue,
                    Err(Errno::ISDIR) => {
                        local_tree(&mut local, &dir, name, shown, self.recursive, &fail);
                        continue;
                    }
                    Err(e) => {
                        fail(&mut local, Reason::Os(e));
                        continue;
                    }
                }
            } else if is_dir {
                local_tree(&mut local, &dir, name, shown, self.recursive, &fail);
                continue;
            }
            counters.files.fetch_add(1, Ordering::Relaxed);
            let bytes = st.filter(|s| s.nlink <= 1).map_or(0, |s| s.allocated);
            counters.bytes.fetch_add(bytes, Ordering::Relaxed);
            if let (Some(_), Some(st)) = (&sel.tally, st) {
                let top = shown.parent().map(PathBuf::from).unwrap_or_default();
                tally.count(&top, st.uid, false, bytes);
            }
            if let Some(list) = &sel.list {
                list.record(&mut records, shown);
            }
            if sink.wants_removed() {
                sink.removed(shown, false);
            }
        }
        if let Some(t) = &sel.tally {
            t.add(tally);
        }
        if let Some(list) = &sel.list {
            list.write(&records);
        }
        local
    }
}

/// A listed directory: a tree for the engine (`-r`), else a failure.
fn local_tree(
    local: &mut Removed,
    dir: &std::sync::Arc<std::os::fd::OwnedFd>,
    name: &CStr,
    shown: &std::path::Path,
    recursive: bool,
    fail: &dyn Fn(&mut Removed, Reason),
) {
    if !recursive {
        return fail(local, Reason::IsDirectory);
    }
    match dirfd::lstat_at(&**dir, name) {
        Ok(f) if f.file_type == FileType::Directory => local.trees.push(DirTarget {
            base: dir.clone(),
            name: name.to_owned(),
            display: shown.to_path_buf(),
            ident: f.ident,
        }),
        Ok(_) => fail(local, Reason::Changed),
        Err(e) => fail(local, Reason::Os(e)),
    }
}

/// The order to unlink a group's names in: as listed (sorted by name) for small groups, by
/// inode for large ones (the parent listed once; names it does not hold go last).
fn inode_order(group: &Group, dirs: &Dirs) -> Vec<usize> {
    let n = group.names.len();
    let mut order: Vec<usize> = (0..n).collect();
    if n < SORT_MIN {
        return order;
    }
    let Ok(dir) = dirs
        .get(&group.dir)
        .and_then(|d| dirfd::open_dir_at(&*d, c".").map_err(Reason::Os))
    else {
        return order;
    };
    let mut inos: HashMap<Vec<u8>, u64> = HashMap::with_capacity(n);
    let mut buf = dirfd::DirBuf::new(256 * 1024);
    let _ = dirfd::for_each_entry(&dir, &mut buf, |name, _, ino| {
        inos.insert(name.to_bytes().to_vec(), ino);
    });
    order.sort_by_key(|&i| {
        inos.get(group.names[i].name.to_bytes())
            .copied()
            .unwrap_or(u64::MAX)
    });
    order
}
