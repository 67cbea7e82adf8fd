//! A scan shared by the ranks of an MPI job: the walk as one rank (`scan_shared`), and the
//! part each rank sends to rank 0: its tallies, the inodes with several links it counted, its
//! top lists as paths, its errors and the mount points it left; encoded, decoded (as
//! untrusted input: every count bounded by the bytes left) and merged, a further link of an
//! inode another rank counted once more taken back out. Reads no file but through the walk.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::histogram::Histogram;
use super::tally::{Counts, TopFile, TopN};
use super::walk::{SNode, ScanError, ScanWalkOutcome, Scanner, Tally, TopDir};
use crate::engine::walk::{self, Root};
use crate::sys::dirfd;

/// The walk as one rank of an MPI job `t`: the ranks agree on the trees, walk them together,
/// and rank 0 (`leads`) merges every rank's counts.
pub(super) fn scan_shared(
    scanner: &Scanner<'_>,
    mut first: Tally,
    roots: Vec<Root>,
    walk_opts: &walk::WalkOptions,
    t: &dyn crate::engine::spread::Transport,
    leads: bool,
    on_warning: &(dyn Fn(&dyn std::fmt::Display) + Sync),
) -> ScanWalkOutcome {
    let (opts, live, on_error) = (&scanner.opts, scanner.live, scanner.on_error);
    // Every rank sees the same directories, or none scans.
    let trees = crate::engine::spread::Trees {
        roots: roots
            .iter()
            .map(|r| (&*r.base, r.name.as_c_str(), r.display.as_path()))
            .collect(),
        // A scan writes nothing.
        dry_run: true,
    };
    let agreed = crate::engine::spread::agree(t, &trees, None);
    drop(trees);
    if let Err(e) = agreed {
        let errors = roots
            .iter()
            .map(|r| ScanError {
                path: r.display.clone(),
                doing: "cannot scan",
                reason: e.to_string(),
            })
            .collect::<Vec<_>>();
        if leads {
            errors.iter().for_each(on_error);
        }
        return Partial::new(first, opts.top, errors, Vec::new()).outcome(Vec::new());
    }
    for r in &roots {
        // Work below a root this rank never opens is checked against its mount.
        if let Ok(st) = dirfd::fstat(&*r.base) {
            r.set_mnt_id(st.mnt_id);
        }
    }
    let counts = || {
        [
            live.names.load(Ordering::Relaxed),
            live.dirs.load(Ordering::Relaxed),
            live.allocated.load(Ordering::Relaxed),
            live.errors.load(Ordering::Relaxed),
        ]
    };
    let add = |c: crate::engine::spread::wire::Counts| {
        live.names.fetch_add(c[0], Ordering::Relaxed);
        live.dirs.fetch_add(c[1], Ordering::Relaxed);
        live.allocated.fetch_add(c[2], Ordering::Relaxed);
        live.errors.fetch_add(c[3], Ordering::Relaxed);
    };
    let job = crate::engine::spread::Job {
        transport: t,
        roots: roots.len(),
        counts: &counts,
        add: &add,
        warn: on_warning,
        verdicts: None,
    };
    let first_path = roots.first().map(|r| r.display.clone());
    // Whole directories only: a directory's counts (files, small files) stay in one rank.
    let (workers, reports) = walk::run_shared(scanner, roots, walk_opts, leads, false, |w, ev| {
        crate::engine::spread::drive(&job, w, ev)
    });
    for w in workers {
        first.merge(w);
    }
    let (mut errors, skipped) = scanner.take_failures();
    if !leads && crate::sys::interrupt::stopping() {
        // What this rank handed back undone is not counted: rank 0 must say so.
        if let Some(path) = first_path {
            errors.push(ScanError {
                path,
                doing: "cannot scan",
                reason: crate::engine::spread::stopped_line(t),
            });
        }
    }
    let mut mine = Partial::new(first, opts.top, errors, skipped);
    let reports = crate::engine::spread::conclude(&job, reports, mine.encode());
    for (rank, bytes) in reports.payloads {
        match Partial::decode(&bytes, opts.top) {
            Ok(p) => mine.merge(p),
            Err(e) => {
                let e = ScanError {
                    path: PathBuf::from(format!("(rank {rank})")),
                    doing: "cannot read the report of",
                    reason: e.to_string(),
                };
                on_error(&e);
                mine.errors.push(e);
            }
        }
    }
    mine.outcome(if leads { reports.ranks } else { Vec::new() })
}

/// What one rank found, in a form ranks can send and merge: the tallies, and the top lists as
/// directories (paths and counts) with their tiebreaks.
pub(super) struct Partial {
    per_root: Vec<Counts>,
    links: Vec<Link>,
    histogram: Histogram,
    tops: [TopN<TopDir>; 3],
    large: TopN<TopFile>,
    pub(super) errors: Vec<ScanError>,
    skipped: Vec<PathBuf>,
}

/// The `doing` of errors another rank reports (they are `&'static str`s).
const DOINGS: [&str; 7] = [
    "cannot open directory",
    "cannot read directory",
    "cannot reopen directory",
    "cannot stat",
    "cannot open",
    "not following",
    "cannot scan",
];

impl Partial {
    pub(super) fn new(
        t: Tally,
        top: usize,
        errors: Vec<ScanError>,
        skipped: Vec<PathBuf>,
    ) -> Partial {
        let dirs = |list: TopN<Arc<SNode>>| {
            let mut out = TopN::new(top);
            out.offered = list.offered;
            for (count, tiebreak, d) in list.into_ranked() {
                out.keep(count, tiebreak, || TopDir {
                    path: d.path(),
                    files: d.data.files.load(Ordering::Relaxed),
                    small_files: d.data.small.load(Ordering::Relaxed),
                    tree_allocated: d.data.tree_allocated.load(Ordering::Relaxed),
                    tree_files: d.data.tree_files.load(Ordering::Relaxed),
                });
            }
            out
        };
        let mut large = TopN::new(top);
        large.offered = t.large.offered;
        for (count, tiebreak, (dir, name, size)) in t.large.into_ranked() {
            large.keep(count, tiebreak, || TopFile {
                path: dir.child_path(&name),
                allocated: count,
                size,
            });
        }
        Partial {
            per_root: t.per_root,
            links: t.links,
            histogram: t.histogram,
            tops: [dirs(t.top_bytes), dirs(t.top_files), dirs(t.top_small)],
            large,
            errors,
            skipped,
        }
    }

    pub(super) fn merge(&mut self, o: Partial) {
        for (a, b) in self.per_root.iter_mut().zip(&o.per_root) {
            a.merge(b);
        }
        self.histogram.merge(&o.histogram);
        // An inode another rank counted too, under another name: its bytes once, this name a
        // hard link (as one process counts it).
        let mut seen: HashSet<(u64, u64)> = self.links.iter().map(|l| (l.fs, l.ino)).collect();
        for l in o.links {
            if seen.insert((l.fs, l.ino)) {
                self.links.push(l);
                continue;
            }
            if let Some(c) = self.per_root.get_mut(l.root as usize) {
                c.allocated_bytes = c.allocated_bytes.saturating_sub(l.allocated);
                c.apparent_bytes = c.apparent_bytes.saturating_sub(l.size);
                if l.file {
                    c.hard_links += 1;
                    self.histogram.remove(l.size, l.allocated);
                }
            }
        }
        for (a, b) in self.tops.iter_mut().zip(o.tops) {
            a.merge(b);
        }
        self.large.merge(o.large);
        self.errors.extend(o.errors);
        self.skipped.extend(o.skipped);
    }

    pub(super) fn outcome(self, ranks: Vec<crate::engine::spread::Rank>) -> ScanWalkOutcome {
        let [top_bytes, top_files, top_small] = self.tops;
        let ranked = [
            top_bytes.offered,
            top_files.offered,
            top_small.offered,
            self.large.offered,
        ];
        let sorted = |t: TopN<TopDir>| t.into_sorted().into_iter().map(|(_, d)| d).collect();
        let mut skipped_mounts = self.skipped;
        skipped_mounts.sort();
        let mut errors = self.errors;
        errors.sort_by(|a, b| a.path.cmp(&b.path));
        ScanWalkOutcome {
            per_root: self.per_root,
            histogram: self.histogram,
            top_bytes: sorted(top_bytes),
            top_files: sorted(top_files),
            top_small: sorted(top_small),
            largest: self
                .large
                .into_sorted()
                .into_iter()
                .map(|(_, f)| f)
                .collect(),
            ranked,
            errors,
            skipped_mounts,
            ranks,
            pack_candidates: Vec::new(),
            pack_candidates_total: 0,
        }
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        let mut w = crate::engine::spread::wire::Writer::default();
        w.u32(self.per_root.len() as u32);
        for c in &self.per_root {
            c.to_words().iter().for_each(|v| {
                w.u64(*v);
            });
        }
        w.u32(self.links.len() as u32);
        for l in &self.links {
            w.u64(l.fs)
                .u64(l.ino)
                .u32(l.root)
                .u8(l.file as u8)
                .u64(l.allocated)
                .u64(l.size);
        }
        for v in self.histogram.to_words() {
            w.u64(v);
        }
        for list in &self.tops {
            let ranked: Vec<_> = list.ranked().collect();
            w.u64(list.offered);
            w.u32(ranked.len() as u32);
            for (count, tiebreak, d) in ranked {
                w.u64(count)
                    .u64(tiebreak)
                    .bytes(d.path.as_os_str().as_bytes());
                w.u64(d.files)
                    .u64(d.small_files)
                    .u64(d.tree_allocated)
                    .u64(d.tree_files);
            }
        }
        let large: Vec<_> = self.large.ranked().collect();
        w.u64(self.large.offered);
        w.u32(large.len() as u32);
        for (count, tiebreak, f) in large {
            w.u64(count)
                .u64(tiebreak)
                .bytes(f.path.as_os_str().as_bytes())
                .u64(f.size);
        }
        w.u32(self.errors.len() as u32);
        for e in &self.errors {
            let doing = DOINGS.iter().position(|d| *d == e.doing).unwrap_or(1);
            w.bytes(e.path.as_os_str().as_bytes())
                .u8(doing as u8)
                .bytes(e.reason.as_bytes());
        }
        w.u32(self.skipped.len() as u32);
        for p in &self.skipped {
            w.bytes(p.as_os_str().as_bytes());
        }
        w.0
    }

    pub(super) fn decode(
        bytes: &[u8],
        top: usize,
    ) -> Result<Partial, crate::engine::spread::wire::Malformed> {
        use crate::engine::spread::wire::{Malformed, Reader};
        use std::os::unix::ffi::OsStrExt;
        let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
        let mut r = Reader(bytes);
        let n = r.count(88)?;
        let mut per_root = Vec::with_capacity(n);
        for _ in 0..n {
            let mut words = [0u64; 11];
            for v in &mut words {
                *v = r.u64()?;
            }
            per_root.push(Counts::from_words(&words));
        }
        let k = r.count(37)?;
        let mut links = Vec::with_capacity(k);
        for _ in 0..k {
            links.push(Link {
                fs: r.u64()?,
                ino: r.u64()?,
                root: r.u32()?,
                file: r.u8()? != 0,
                allocated: r.u64()?,
                size: r.u64()?,
            });
        }
        let words = (0..3 * 65)
            .map(|_| r.u64())
            .collect::<Result<Vec<_>, _>>()?;
        let histogram = Histogram::from_words(&words).ok_or(Malformed::new("histogram"))?;
        let mut tops = [TopN::new(top), TopN::new(top), TopN::new(top)];
        for list in &mut tops {
            list.offered = r.u64()?;
            let k = r.count(52)?;
            for _ in 0..k {
                let (count, tiebreak) = (r.u64()?, r.u64()?);
                let d = TopDir {
                    path: path(r.bytes()?),
                    files: r.u64()?,
                    small_files: r.u64()?,
                    tree_allocated: r.u64()?,
                    tree_files: r.u64()?,
                };
                list.keep(count, tiebreak, || d);
            }
        }
        let mut large = TopN::new(top);
        large.offered = r.u64()?;
        let k = r.count(28)?;
        for _ in 0..k {
            let (count, tiebreak) = (r.u64()?, r.u64()?);
            let f = TopFile {
                path: path(r.bytes()?),
                allocated: count,
                size: r.u64()?,
            };
            large.keep(count, tiebreak, || f);
        }
        let k = r.count(9)?;
        let mut errors = Vec::with_capacity(k);
        for _ in 0..k {
            let p = path(r.bytes()?);
            let doing = DOINGS
                .get(r.u8()? as usize)
                .ok_or(Malformed::new("error kind"))?;
            errors.push(ScanError {
                path: p,
                doing,
                reason: String::from_utf8_lossy(r.bytes()?).into_owned(),
            });
        }
        let k = r.count(4)?;
        let mut skipped = Vec::with_capacity(k);
        for _ in 0..k {
            skipped.push(path(r.bytes()?));
        }
        r.end()?;
        Ok(Partial {
            per_root,
            links,
            histogram,
            tops,
            large,
            errors,
            skipped,
        })
    }
}

/// An inode with several links, counted (bytes, histogram) under one of its names.
#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    /// The file system: the index of the first root on it, the same on every rank (device
    /// numbers of one network file system differ from client to client).
    pub(super) fs: u64,
    pub(super) ino: u64,
    pub(super) root: u32,
    pub(super) file: bool,
    pub(super) allocated: u64,
    pub(super) size: u64,
}
