//! Where a file's bytes are on disk (FIEMAP) and what freeing a range of them costs the file
//! system, in "metadata units": roughly one metadata block to read or rewrite. Freeing is cheap
//! or dear by layout, not by bytes: a contiguous 16 GB file on ext4 frees a few bitmap blocks,
//! the same file block-mapped on ext3 must read 4,096 indirect blocks first. On a file system
//! mounted with online discard, every freed byte also costs the device a discard: there the
//! cost grows with the bytes too, and long extents are cut in byte-bounded pieces. Reads only.

use std::os::fd::{AsFd, AsRawFd};

use rustix::io::Errno;

/// One mapped extent (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub len: u64,
    /// Shared with another file or a snapshot (`FIEMAP_EXTENT_SHARED`): removing this file
    /// only drops a reference, it frees nothing of it.
    pub shared: bool,
}

/// How the file system maps a file's blocks, which decides what freeing costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// ext2/ext3 style: one indirect block per 1,024 data blocks must be read and freed.
    Blocks,
    /// ext4 extents: a tree leaf holds 340 extents; cost is per region of bitmaps touched.
    Ext4Extents,
    /// xfs, btrfs and others: every extent is a free-space btree update.
    Extents,
}

/// Bytes covered by one indirect block (1,024 pointers to 4 KiB blocks).
const INDIRECT_SPAN: u64 = 4 << 20;
/// A region of the disk whose allocation metadata is one block (an ext4 block group's bitmap
/// covers 128 MiB; used as the same locality unit elsewhere).
const REGION: u64 = 128 << 20;

/// Bytes of online discard that cost one metadata unit. Discarding 2 GiB stalled a
/// neighbour's fdatasync 110-140 ms on ext4 and 400-520 ms on xfs and btrfs (bench/RESULTS.md,
/// 2026-11-26): 1-4 ms per 16 MiB, about one random metadata read or write on the same disk.
/// Also the size of the pieces a long extent is cut in where discards cost.
pub const DISCARD_SPAN: u64 = 16 << 20;

/// A file's extents, ascending by logical offset, its mapping kind, and whether freeing its
/// blocks sends discards to the device (its mount's `Mount::online_discard`).
#[derive(Clone, Debug)]
pub struct Layout {
    pub extents: Vec<Extent>,
    pub mapping: Mapping,
    pub discard: bool,
}

impl Layout {
    /// Reads the layout of the open file `fd` (FIEMAP, no sync: only allocated extents).
    ///
    /// Block-mapped files are not mapped: FIEMAP would read every indirect block of the file
    /// at once, which on ext3 *is* most of the cost of freeing it (one random read per 4 MiB),
    /// unpaced. They are priced by bytes instead, and each step reads only its own indirect
    /// blocks, inside the paced truncate.
    pub fn read(fd: impl AsFd) -> Result<Layout, Errno> {
        let mapping = mapping_of(&fd);
        let extents = match mapping {
            Mapping::Blocks => {
                let size = rustix::fs::fstat(&fd)?.st_size as u64;
                vec![Extent {
                    logical: 0,
                    physical: 0,
                    len: size,
                    shared: false,
                }]
            }
            _ => fiemap(&fd)?,
        };
        Ok(Layout {
            extents,
            mapping,
            discard: online_discard(&fd),
        })
    }

    /// Bytes of extents shared with other files or snapshots (not freed by removing this one).
    pub fn shared_bytes(&self) -> u64 {
        self.extents
            .iter()
            .filter(|e| e.shared)
            .map(|e| e.len)
            .sum()
    }

    /// Cost of freeing everything below `end`.
    pub fn cost_below(&self, end: u64) -> f64 {
        let mut c = Cutter::new(self);
        for e in self.extents.iter().rev() {
            if e.logical >= end {
                continue;
            }
            let len = e.len.min(end - e.logical);
            c.add(e.physical, len, e.shared);
        }
        c.cost
    }

    /// The offset to truncate to so that freeing `[cut, end)` costs about `budget` units (at
    /// least one piece, so every step makes progress). Cuts fall on extent boundaries, or on
    /// indirect-block spans inside long extents of block-mapped files, or on `DISCARD_SPAN`s
    /// inside long extents where freeing them discards.
    pub fn cut(&self, end: u64, budget: f64) -> u64 {
        let mut c = Cutter::new(self);
        for e in self.extents.iter().rev() {
            if e.logical >= end {
                continue;
            }
            let top = e.logical + e.len.min(end - e.logical);
            let mut piece_end = top;
            while piece_end > e.logical {
                let piece_start = match self.mapping {
                    // Split inside the extent at indirect-block spans.
                    Mapping::Blocks => {
                        let s = (piece_end - 1) / INDIRECT_SPAN * INDIRECT_SPAN;
                        s.max(e.logical)
                    }
                    // Split at discard spans: the discard is the cost.
                    _ if self.discard && !e.shared => {
                        let s = (piece_end - 1) / DISCARD_SPAN * DISCARD_SPAN;
                        s.max(e.logical)
                    }
                    _ => e.logical,
                };
                let phys = e.physical + (piece_start - e.logical);
                let before = c.cost;
                c.add(phys, piece_end - piece_start, e.shared);
                if c.cost > budget && before > 0.0 {
                    return piece_end;
                }
                piece_end = piece_start;
            }
        }
        0
    }
}

/// Whether the file system holding `fd` is mounted with online discard.
fn online_discard(fd: &impl AsFd) -> bool {
    crate::sys::dirfd::fstat(fd)
        .ok()
        .and_then(|f| crate::sys::mounts::by_id(f.mnt_id))
        .is_some_and(|m| m.online_discard())
}

/// Accumulates the cost of the pieces freed by one step.
struct Cutter {
    mapping: Mapping,
    discard: bool,
    cost: f64,
    regions: std::collections::HashSet<u64>,
}

impl Cutter {
    fn new(layout: &Layout) -> Self {
        Cutter {
            mapping: layout.mapping,
            discard: layout.discard,
            cost: 0.0,
            regions: Default::default(),
        }
    }

    /// A piece of `len` bytes at `physical`; `shared` pieces stay allocated for their other
    /// owners (nothing is discarded).
    fn add(&mut self, physical: u64, len: u64, shared: bool) {
        self.cost += match self.mapping {
            Mapping::Blocks => len as f64 / INDIRECT_SPAN as f64,
            Mapping::Ext4Extents => 1.0 / 340.0,
            Mapping::Extents => 1.0 / 16.0,
        };
        if self.discard && !shared {
            self.cost += len as f64 / DISCARD_SPAN as f64;
        }
        let first = physical / REGION;
        let last = (physical + len.max(1) - 1) / REGION;
        for r in first..=last {
            if self.regions.insert(r) {
                self.cost += 1.0;
            }
        }
    }
}

/// ext2/3/4 `statfs` magic.
const EXT_MAGIC: i64 = 0xEF53;
/// `EXT4_EXTENTS_FL` in the inode flags (`FS_IOC_GETFLAGS`).
const EXTENTS_FL: libc::c_long = 0x0008_0000;

fn mapping_of(fd: &impl AsFd) -> Mapping {
    // f_type's integer type differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    let is_ext = rustix::fs::fstatfs(fd).is_ok_and(|s| s.f_type as i64 == EXT_MAGIC);
    if !is_ext {
        return Mapping::Extents;
    }
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one long into `flags`, which outlives the call.
    let rc = unsafe {
        libc::ioctl(
            fd.as_fd().as_raw_fd(),
            libc::FS_IOC_GETFLAGS,
            &mut flags as *mut libc::c_long,
        )
    };
    if rc == 0 && flags & EXTENTS_FL == 0 {
        Mapping::Blocks
    } else {
        Mapping::Ext4Extents
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

#[repr(C)]
struct Fiemap<const N: usize> {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; N],
}

/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_EXTENT_LAST: u32 = 0x1;
const FIEMAP_EXTENT_SHARED: u32 = 0x2000;
const BATCH: usize = 512;

fn fiemap(fd: &impl AsFd) -> Result<Vec<Extent>, Errno> {
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        let mut fm = Box::new(Fiemap::<BATCH> {
            fm_start: start,
            fm_length: u64::MAX - start,
            fm_flags: 0,
            fm_mapped_extents: 0,
            fm_extent_count: BATCH as u32,
            fm_reserved: 0,
            fm_extents: [FiemapExtent::default(); BATCH],
        });
        // SAFETY: the kernel writes at most fm_extent_count extents into the boxed buffer,
        // which lives until after the call.
        let rc = unsafe {
            libc::ioctl(
                fd.as_fd().as_raw_fd(),
                FS_IOC_FIEMAP as _,
                &mut *fm as *mut Fiemap<BATCH>,
            )
        };
        if rc != 0 {
            return Err(Errno::from_raw_os_error(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ));
        }
        let n = fm.fm_mapped_extents as usize;
        if n == 0 {
            break;
        }
        let mut last = false;
        for e in &fm.fm_extents[..n] {
            out.push(Extent {
                logical: e.fe_logical,
                physical: e.fe_physical,
                len: e.fe_length,
                shared: e.fe_flags & FIEMAP_EXTENT_SHARED != 0,
            });
            last |= e.fe_flags & FIEMAP_EXTENT_LAST != 0;
        }
        let end = fm.fm_extents[n - 1].fe_logical + fm.fm_extents[n - 1].fe_length;
        if last || end <= start {
            break;
        }
        start = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn contiguous(bytes: u64, mapping: Mapping) -> Layout {
        Layout {
            extents: vec![Extent {
                logical: 0,
                physical: 0,
                len: bytes,
                shared: false,
            }],
            mapping,
            discard: false,
        }
    }

    /// `n` 1 MiB extents each followed by a 1 MiB gap on disk (the lab's fragmented file).
    fn fragmented(n: u64, mapping: Mapping) -> Layout {
        Layout {
            extents: (0..n)
                .map(|i| Extent {
                    logical: i * MIB,
                    physical: 2 * i * MIB,
                    len: MIB,
                    shared: false,
                })
                .collect(),
            mapping,
            discard: false,
        }
    }

    #[test]
    fn block_mapped_costs_per_indirect_block() {
        let l = contiguous(16 << 30, Mapping::Blocks);
        // 4,096 indirect blocks + 128 regions.
        assert_eq!(l.cost_below(16 << 30).round() as u64, 4096 + 128);
        let l = contiguous(16 << 30, Mapping::Ext4Extents);
        assert!(l.cost_below(16 << 30) < 130.0);
    }

    #[test]
    fn cut_frees_about_the_budget_and_always_progresses() {
        let l = contiguous(1 << 30, Mapping::Blocks);
        // 10 units ~ 9 indirect spans + 1 region.
        let cut = l.cut(1 << 30, 10.0);
        assert_eq!((1u64 << 30) - cut, 9 * INDIRECT_SPAN);
        // A budget below one piece still frees one piece.
        assert_eq!(l.cut(1 << 30, 0.01), (1 << 30) - INDIRECT_SPAN);
        // Repeated cuts reach zero.
        let mut end = 1u64 << 30;
        let mut steps = 0;
        while end > 0 {
            let next = l.cut(end, 50.0);
            assert!(next < end);
            end = next;
            steps += 1;
        }
        assert!(steps <= 6, "{steps} steps");
    }

    #[test]
    fn fragmentation_costs_more_on_extent_file_systems() {
        let frag = fragmented(4096, Mapping::Extents);
        let contig = contiguous(4096 * MIB, Mapping::Extents);
        assert!(frag.cost_below(4096 * MIB) > 4.0 * contig.cost_below(4096 * MIB));
        // Cuts fall on extent boundaries.
        let cut = frag.cut(4096 * MIB, 10.0);
        assert_eq!(cut % MIB, 0);
        assert!(cut < 4096 * MIB);
    }

    #[test]
    fn cut_ignores_what_is_already_gone() {
        let l = fragmented(100, Mapping::Ext4Extents);
        let cut = l.cut(50 * MIB, 1000.0);
        assert_eq!(cut, 0);
        let cut = l.cut(50 * MIB + 512 * 1024, 0.01);
        assert_eq!(cut, 50 * MIB);
    }

    #[test]
    fn online_discard_prices_by_bytes_and_cuts_long_extents() {
        // A contiguous 2 GiB file: one unit per 128 MiB region without discard, cut only at
        // extent boundaries; 128 more with it, freed in pieces of whole discard spans.
        let mut l = contiguous(2 << 30, Mapping::Ext4Extents);
        let plain = l.cost_below(2 << 30);
        assert!((16.0..18.0).contains(&plain), "{plain}");
        assert_eq!(l.cut(2 << 30, 10.0), 0, "one piece without discard");
        l.discard = true;
        let total = l.cost_below(2 << 30);
        assert!((plain + 128.0..plain + 129.0).contains(&total), "{total}");
        let cut = l.cut(2 << 30, 10.0);
        assert!(cut > 0 && cut.is_multiple_of(DISCARD_SPAN), "{cut}");
        let freed = (2u64 << 30) - cut;
        assert!(freed <= 10 * DISCARD_SPAN, "{freed}");
        // Every step progresses, and the steps reach zero.
        let mut end = 2u64 << 30;
        let mut steps = 0;
        while end > 0 {
            let next = l.cut(end, 8.0);
            assert!(next < end);
            end = next;
            steps += 1;
        }
        assert!((16..=40).contains(&steps), "{steps} steps");
        // xfs/btrfs-style extents too.
        let mut x = contiguous(1 << 30, Mapping::Extents);
        x.discard = true;
        assert!(x.cost_below(1 << 30) >= 64.0);
        assert!(x.cut(1 << 30, 4.0) > 0);
    }

    #[test]
    fn shared_extents_cost_no_discard() {
        let mut l = contiguous(256 << 20, Mapping::Extents);
        l.extents[0].shared = true;
        l.discard = true;
        assert!(l.cost_below(256 << 20) < 4.0);
        assert_eq!(l.cut(256 << 20, 2.0), 0, "a shared extent is one piece");
    }

    #[test]
    fn reads_a_real_layout() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![1u8; 3 << 20]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        f.sync_all().unwrap();
        match Layout::read(&f) {
            Ok(l) => {
                let mapped: u64 = l.extents.iter().map(|e| e.len).sum();
                assert!(mapped >= 3 << 20, "{l:?}");
            }
            // tmpfs and some others have no FIEMAP.
            Err(e) => assert_eq!(e, Errno::OPNOTSUPP),
        }
    }
}
