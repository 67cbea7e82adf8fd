//! Deterministic scratch workloads (flat directories and trees of small files) for benchmarks
//! and tests. Owns naming and layout, so a "syscall floor" can unlink the known names without
//! reading a directory. Only creates inside a root it is given; the bench's scratch directory
//! (`scratch.rs`) is emptied and removed through its own fd.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

pub mod scratch;

/// The shape of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// All files directly in the root directory.
    Flat,
    /// Files only in leaf directories, `per_leaf` each, leaves spread under a tree whose
    /// interior directories have at most `fanout` children.
    Tree { fanout: u64, per_leaf: u64 },
}

/// What to create: a shape, a number of files and the size of each file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub shape: Shape,
    pub files: u64,
    pub file_size: usize,
}

/// A directory that holds files: its path relative to the root ("" is the root itself) and how
/// many files it holds (named by [`file_name`] with indices `0..count`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub dir: PathBuf,
    pub count: u64,
}

/// Every directory (relative to the root, parents before children, root excluded) and every
/// leaf of a workload.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub dirs: Vec<PathBuf>,
    pub leaves: Vec<Leaf>,
}

/// The name of the `i`-th file of a leaf.
pub fn file_name(i: u64) -> String {
    format!("f{i}")
}

impl Spec {
    /// The full layout. Deterministic: the same spec always gives the same names.
    pub fn layout(&self) -> Layout {
        match self.shape {
            Shape::Flat => Layout {
                dirs: Vec::new(),
                leaves: vec![Leaf {
                    dir: PathBuf::new(),
                    count: self.files,
                }],
            },
            Shape::Tree { fanout, per_leaf } => {
                tree_layout(self.files, fanout.max(2), per_leaf.max(1))
            }
        }
    }

    /// Number of directories the workload creates below its root.
    pub fn dir_count(&self) -> u64 {
        self.layout().dirs.len() as u64
    }
}

fn tree_layout(files: u64, fanout: u64, per_leaf: u64) -> Layout {
    let leaves = files.div_ceil(per_leaf).max(1);
    let mut depth = 1u32;
    while fanout.saturating_pow(depth) < leaves {
        depth += 1;
    }
    let mut layout = Layout::default();
    let mut seen_prefix: Vec<Option<u64>> = vec![None; depth as usize];
    for leaf in 0..leaves {
        let mut path = PathBuf::new();
        for level in 0..depth {
            let digit = (leaf / fanout.pow(depth - 1 - level)) % fanout;
            path.push(format!("d{digit}"));
            // A directory is new whenever the prefix up to this level changes.
            let prefix = leaf / fanout.pow(depth - 1 - level);
            if seen_prefix[level as usize] != Some(prefix) {
                seen_prefix[level as usize] = Some(prefix);
                layout.dirs.push(path.clone());
            }
        }
        let count = per_leaf.min(files - leaf * per_leaf);
        layout.leaves.push(Leaf { dir: path, count });
    }
    layout
}

/// Creates the workload under `root` (which must exist and be empty) with `threads` threads.
pub fn create(root: &Path, spec: &Spec, threads: usize) -> io::Result<()> {
    let layout = spec.layout();
    let root_fd = crate::sys::dirfd::open_dir_path(root)?;
    for dir in &layout.dirs {
        let (parent, name) = match dir.parent().zip(dir.file_name()) {
            Some(pn) => pn,
            None => continue,
        };
        let parent = crate::sys::safeopen::open_beneath(
            &root_fd,
            parent.as_os_str().as_bytes(),
            OFlags::PATH | OFlags::DIRECTORY,
        )?;
        let name = CString::new(name.as_bytes()).map_err(|_| io::ErrorKind::InvalidInput)?;
        crate::sys::safeopen::mkdir_at(&parent, &name, 0o755)?;
    }
    // Split the work into chunks of at most 4096 files so a flat workload is parallel too.
    let mut chunks: Vec<(PathBuf, u64, u64)> = Vec::new();
    for leaf in &layout.leaves {
        let mut start = 0;
        while start < leaf.count {
            let end = (start + 4096).min(leaf.count);
            chunks.push((leaf.dir.clone(), start, end));
            start = end;
        }
    }
    let content = vec![b'x'; spec.file_size];
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(|| -> io::Result<()> {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((dir, start, end)) = chunks.get(i) else {
                            return Ok(());
                        };
                        let dirfd = crate::sys::safeopen::open_beneath(
                            &root_fd,
                            dir.as_os_str().as_bytes(),
                            OFlags::PATH | OFlags::DIRECTORY,
                        )?;
                        for j in *start..*end {
                            let name = CString::new(file_name(j)).expect("no NUL");
                            let fd = crate::sys::safeopen::create_at(
                                &dirfd,
                                &name,
                                OFlags::WRONLY,
                                0o644,
                                false,
                            )?;
                            if !content.is_empty() {
                                rustix::io::write(&fd, &content)?;
                            }
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("workload thread panicked"))
    })
}

/// Creates a directory chain `depth` levels deep below `root` (names `d`), using dirfds so
/// the total path may exceed PATH_MAX. Puts one file in every `file_every`-th level.
pub fn create_deep_chain(root: &Path, depth: usize, file_every: usize) -> io::Result<()> {
    let mut fd = crate::sys::dirfd::open_dir_path(root)?;
    let name = CString::new("d").expect("static name");
    for level in 0..depth {
        crate::sys::safeopen::mkdir_at(&fd, name.as_c_str(), 0o755)?;
        let child = crate::sys::dirfd::open_dir_at(&fd, name.as_c_str())?;
        if file_every > 0 && level % file_every == 0 {
            crate::sys::safeopen::create_at(&child, c"file", OFlags::WRONLY, 0o644, false)?;
        }
        fd = child;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_layout_holds_every_file_once() {
        let spec = Spec {
            shape: Shape::Tree {
                fanout: 32,
                per_leaf: 100,
            },
            files: 1_000_000,
            file_size: 0,
        };
        let layout = spec.layout();
        assert_eq!(layout.leaves.len(), 10_000);
        assert_eq!(
            layout.leaves.iter().map(|l| l.count).sum::<u64>(),
            1_000_000
        );
        // depth 3: 10 top dirs, 313 middle dirs, 10,000 leaves
        assert_eq!(layout.dirs.len(), 10 + 313 + 10_000);
        let mut dirs = layout.dirs.clone();
        dirs.sort();
        dirs.dedup();
        assert_eq!(dirs.len(), layout.dirs.len(), "no directory listed twice");
    }

    #[test]
    fn uneven_tree_has_short_last_leaf() {
        let spec = Spec {
            shape: Shape::Tree {
                fanout: 4,
                per_leaf: 10,
            },
            files: 35,
            file_size: 0,
        };
        let counts: Vec<u64> = spec.layout().leaves.iter().map(|l| l.count).collect();
        assert_eq!(counts, vec![10, 10, 10, 5]);
    }

    #[test]
    fn create_makes_the_layout() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec {
            shape: Shape::Tree {
                fanout: 3,
                per_leaf: 7,
            },
            files: 50,
            file_size: 5,
        };
        create(dir.path(), &spec, 2).unwrap();
        let mut files = 0;
        for leaf in spec.layout().leaves {
            for i in 0..leaf.count {
                let p = dir.path().join(&leaf.dir).join(file_name(i));
                assert_eq!(std::fs::metadata(&p).unwrap().len(), 5);
                files += 1;
            }
        }
        assert_eq!(files, 50);
    }
}
