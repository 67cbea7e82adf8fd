//! `early.json` in a trash: the entries a reaper freed before their grace window ended because
//! their file system ran short of space (under its floor of free space, or falling toward it),
//! so that `restore` can say why such an entry is gone and `status` and the metrics can count
//! them. It owns this file alone: written by the reaper that freed the entry (the trash's
//! owner, holding the trash's lock), replaced whole under a fresh name, bounded (a count, and
//! the latest records that fit `MAX_RECORD_BYTES`); read as hostile input (`safefile`).

use std::ffi::CStr;
use std::os::fd::AsFd;
use std::path::Path;

use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::safefile::{self, Bad};
use crate::sys::quote::PathField;
use crate::sys::space::Pressure;

pub const EARLY: &CStr = c"early.json";

/// The most the file holds: the oldest records go first (well under what `safefile` reads).
const MAX_RECORD_BYTES: usize = 48 << 10;

/// What `early.json` holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EarlyRecord {
    /// Entries of this trash freed before their grace ended, ever.
    pub count: u64,
    /// The latest of them, oldest first.
    pub recent: Vec<Early>,
}

/// One entry freed before its grace window ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Early {
    pub id: String,
    /// Its original path.
    #[serde(flatten)]
    pub original: PathField,
    pub freed_unix: f64,
    pub grace_until_unix: f64,
    /// Its file system when it was freed.
    pub space: Pressure,
}

impl Early {
    /// `freed before its grace ended: /srv had 1.1 GiB free, floor 2.0 GiB`.
    pub fn text(&self) -> String {
        format!("freed before its grace ended: {}", self.space.text())
    }
}

impl EarlyRecord {
    /// The record of the trash `dir` (of `owner`): `Ok(None)` if there is none (or it does not
    /// parse); `Err` if `early.json` is not a small regular file of the owner's.
    pub fn read(dir: impl AsFd, owner: u32) -> Result<Option<EarlyRecord>, Bad> {
        match safefile::read_json(dir, EARLY, owner) {
            Err(Bad::Missing) => Ok(None),
            r => r,
        }
    }

    /// Adds `e` to the record of the trash `dir` (of `owner`), replacing the file; what was
    /// there and is not a record of the owner's is started afresh.
    pub fn add(dir: impl AsFd, owner: u32, e: Early) -> Result<(), Errno> {
        let dir = dir.as_fd();
        let mut r = EarlyRecord::read(dir, owner)
            .ok()
            .flatten()
            .unwrap_or_default();
        r.count = r.count.saturating_add(1);
        r.recent.push(e);
        let mut text = serde_json::to_vec(&r).expect("record serializes");
        while text.len() > MAX_RECORD_BYTES && r.recent.len() > 1 {
            r.recent.remove(0);
            text = serde_json::to_vec(&r).expect("record serializes");
        }
        if text.len() > MAX_RECORD_BYTES {
            // One record larger than the bound (a path of many kilobytes): counted only.
            r.recent.clear();
            text = serde_json::to_vec(&r).expect("record serializes");
        }
        safefile::replace(dir, EARLY, &text)
    }

    /// The record of entry `id`.
    pub fn by_id(&self, id: &str) -> Option<&Early> {
        self.recent.iter().rev().find(|e| e.id == id)
    }

    /// The newest record of an entry from `path`.
    pub fn by_path(&self, path: &Path) -> Option<&Early> {
        self.recent
            .iter()
            .rev()
            .find(|e| e.original.exact() == path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn early(id: &str, path: &str) -> Early {
        Early {
            id: id.into(),
            original: PathField::new(path),
            freed_unix: 1.0,
            grace_until_unix: 2.0,
            space: Pressure {
                mount: "/srv".into(),
                avail: 1 << 30,
                floor: 2 << 30,
                falling_bps: None,
                to_floor_s: None,
            },
        }
    }

    #[test]
    fn records_are_kept_newest_last_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
        let me = rustix::process::geteuid().as_raw();
        assert_eq!(EarlyRecord::read(&dir, me), Ok(None));
        EarlyRecord::add(&dir, me, early("a", "/srv/x")).unwrap();
        EarlyRecord::add(&dir, me, early("b", "/srv/x")).unwrap();
        let r = EarlyRecord::read(&dir, me).unwrap().unwrap();
        assert_eq!(r.count, 2);
        assert_eq!(r.by_id("a").unwrap().id, "a");
        assert_eq!(r.by_path(Path::new("/srv/x")).unwrap().id, "b");
        assert_eq!(
            r.by_id("a").unwrap().text(),
            "freed before its grace ended: '/srv' had 1.0 GiB free, floor 2.0 GiB"
        );
        let long = format!("/srv/{}", "n".repeat(4000));
        for i in 0..40 {
            EarlyRecord::add(&dir, me, early(&format!("{i}"), &long)).unwrap();
        }
        let text = std::fs::read(d.path().join("early.json")).unwrap();
        assert!(text.len() <= MAX_RECORD_BYTES);
        let r = EarlyRecord::read(&dir, me).unwrap().unwrap();
        assert_eq!(r.count, 42);
        assert_eq!(r.recent.last().unwrap().id, "39");
        assert!(r.by_id("a").is_none(), "the oldest went first");
    }

    #[test]
    fn a_planted_name_is_replaced_never_written_through() {
        let d = tempfile::tempdir().unwrap();
        let dir = crate::sys::dirfd::open_dir_path(d.path()).unwrap();
        let me = rustix::process::geteuid().as_raw();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join("early.json")).unwrap();
        assert!(EarlyRecord::read(&dir, me).is_err());
        EarlyRecord::add(&dir, me, early("a", "/x")).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(EarlyRecord::read(&dir, me).unwrap().unwrap().count, 1);
    }
}
