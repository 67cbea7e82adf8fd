//! What each file system holds in its trashes against the space it has left (DESIGN §14):
//! pending bytes and entries over every trash there (every user's, as far as `status` could
//! read them), how fast a reaper gives them back and when it will be done, the free space and
//! the floor, and how many entries were freed before their grace ended. `status`, `status
//! --json` and the service's metrics show it. Reads only; never prints.

use std::collections::BTreeMap;

pub use super::status::FsSpace;
use super::status::{Status, TrashStatus};
use crate::sys::space::Floor;
use crate::trash::Found;

/// The file systems of the trashes `found` (as `st`, their status, says of each), with their
/// space read now and the `floor` asked for: only those with something to say (entries, a
/// reaper, or entries freed early), in mount order.
pub fn by_file_system(found: &[Found], st: &Status, floor: Floor) -> Vec<FsSpace> {
    let mut by_dev: BTreeMap<u64, (FsSpace, &Found)> = BTreeMap::new();
    for f in found {
        let path = f.path.to_string_lossy();
        let Some(t) = st.trashes.iter().find(|t| t.trash == path) else {
            continue;
        };
        let (fs, _) = by_dev.entry(f.ident.dev).or_insert_with(|| {
            let fs = FsSpace {
                mount: f.mount.to_string_lossy().into_owned(),
                ..FsSpace::default()
            };
            (fs, f)
        });
        add(fs, t);
    }
    let mut out: Vec<FsSpace> = by_dev
        .into_values()
        .filter(|(fs, _)| fs.entries > 0 || fs.freed_early > 0 || fs.rate_bps > 0.0)
        .map(|(mut fs, f)| {
            read_space(&mut fs, f, floor);
            fs
        })
        .collect();
    out.sort_by(|a, b| a.mount.cmp(&b.mount));
    out
}

/// Adds trash `t` to its file system's sums (saturating: another user's child says them).
fn add(fs: &mut FsSpace, t: &TrashStatus) {
    fs.trashes += 1;
    fs.entries = fs.entries.saturating_add(t.entries);
    fs.pending_bytes = fs.pending_bytes.saturating_add(t.pending_bytes);
    fs.unknown_size = fs.unknown_size.saturating_add(t.unknown_size);
    fs.in_grace = fs
        .in_grace
        .saturating_add(t.items.iter().filter(|i| i.state == "grace").count() as u64);
    fs.failed = fs.failed.saturating_add(
        t.items
            .iter()
            .filter(|i| i.state == "failed" || i.state == "damaged")
            .count() as u64,
    );
    fs.freed_early = fs.freed_early.saturating_add(t.freed_early);
    let rate = t.reaper.as_ref().map_or(0.0, |r| r.rate_bps);
    if rate.is_finite() && rate > fs.rate_bps {
        fs.rate_bps = rate;
    }
    fs.eta_s =
        (fs.rate_bps > 0.0 && fs.unknown_size == 0).then(|| fs.pending_bytes as f64 / fs.rate_bps);
}

/// The file system's size, free space and floor, read now through its mount point (opened
/// without following a symlink; left unread if it is not the trash's file system any more).
fn read_space(fs: &mut FsSpace, f: &Found, floor: Floor) {
    let Ok(dir) = crate::sys::dirfd::open_dir_path(&f.mount) else {
        return;
    };
    if crate::sys::dirfd::fstat(&dir).map_or(true, |d| d.ident.dev != f.ident.dev) {
        return;
    }
    if let Ok(r) = crate::sys::space::read(&dir) {
        fs.size_bytes = r.total;
        fs.free_bytes = r.avail;
        fs.floor_bytes = floor.bytes(r.total);
        fs.short = fs.floor_bytes.is_some_and(|b| r.avail < b);
    }
}
