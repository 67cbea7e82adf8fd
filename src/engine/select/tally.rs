//! What a selection removed (or would remove), per top-level directory below each argument and
//! per owner: the purge report sites mail to each user (`--dry-run`, `--json`). Workers add a
//! batch at a time; nothing here does I/O except looking up user names for the report.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::sys::quote::PathField;

/// Files, directories and allocated bytes (of entries with one link: what removal frees).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    pub files: u64,
    pub dirs: u64,
    pub bytes: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.files += o.files;
        self.dirs += o.dirs;
        self.bytes += o.bytes;
    }

    fn count(&mut self, dir: bool, bytes: u64) {
        if dir {
            self.dirs += 1;
        } else {
            self.files += 1;
        }
        self.bytes += bytes;
    }
}

/// The running totals of one run.
#[derive(Debug, Default)]
pub struct Tally {
    tops: Mutex<HashMap<PathBuf, Totals>>,
    owners: Mutex<HashMap<u32, Totals>>,
}

/// Totals gathered by one worker over one batch, added to the `Tally` at once.
#[derive(Debug, Default)]
pub struct Batch {
    tops: HashMap<PathBuf, Totals>,
    owners: HashMap<u32, Totals>,
}

impl Batch {
    /// One removed entry under the top-level directory `top` (the argument itself for the
    /// non-directories directly in it), owned by `uid`; `bytes` it frees.
    pub fn count(&mut self, top: &PathBuf, uid: u32, dir: bool, bytes: u64) {
        match self.tops.get_mut(top) {
            Some(t) => t.count(dir, bytes),
            None => self.tops.entry(top.clone()).or_default().count(dir, bytes),
        }
        self.owners.entry(uid).or_default().count(dir, bytes);
    }

    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }
}

impl Tally {
    pub fn add(&self, b: Batch) {
        if b.is_empty() {
            return;
        }
        let mut tops = self.tops.lock().expect("tally lock");
        for (k, v) in b.tops {
            tops.entry(k).or_default().add(&v);
        }
        drop(tops);
        let mut owners = self.owners.lock().expect("tally lock");
        for (k, v) in b.owners {
            owners.entry(k).or_default().add(&v);
        }
    }

    /// Adds another process's report (a rank under MPI).
    pub fn absorb(&self, r: &Report) {
        let mut b = Batch::default();
        for t in &r.by_top {
            b.tops.insert(t.path.exact(), t.totals);
        }
        for o in &r.by_owner {
            b.owners.insert(o.uid, o.totals);
        }
        self.add(b);
    }

    /// The report: biggest first (bytes, then entries), then by path or uid.
    pub fn report(&self) -> Report {
        let mut by_top: Vec<TopLine> = self
            .tops
            .lock()
            .expect("tally lock")
            .iter()
            .map(|(p, t)| TopLine {
                path: PathField::new(p),
                totals: *t,
            })
            .collect();
        by_top.sort_by(|a, b| {
            (b.totals.bytes, b.totals.files + b.totals.dirs)
                .cmp(&(a.totals.bytes, a.totals.files + a.totals.dirs))
                .then_with(|| a.path.path.cmp(&b.path.path))
        });
        let mut by_owner: Vec<OwnerLine> = self
            .owners
            .lock()
            .expect("tally lock")
            .iter()
            .map(|(uid, t)| OwnerLine {
                uid: *uid,
                user: super::owner::user_name(*uid),
                totals: *t,
            })
            .collect();
        by_owner.sort_by(|a, b| {
            (b.totals.bytes, b.totals.files + b.totals.dirs)
                .cmp(&(a.totals.bytes, a.totals.files + a.totals.dirs))
                .then_with(|| a.uid.cmp(&b.uid))
        });
        Report { by_top, by_owner }
    }
}

/// Totals per top-level directory and per owner (in `--json` as `"selection"`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    pub by_top: Vec<TopLine>,
    pub by_owner: Vec<OwnerLine>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TopLine {
    #[serde(flatten)]
    pub path: PathField,
    #[serde(flatten)]
    pub totals: Totals,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OwnerLine {
    pub uid: u32,
    /// The user name, if the passwd database has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(flatten)]
    pub totals: Totals,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_add_up_biggest_first() {
        let t = Tally::default();
        let (a, b) = (PathBuf::from("/s/alice"), PathBuf::from("/s/bob"));
        let mut x = Batch::default();
        x.count(&a, 1000, false, 4096);
        x.count(&a, 1000, true, 4096);
        x.count(&b, 1001, false, 100);
        t.add(x);
        let mut y = Batch::default();
        y.count(&b, 1001, false, 10_000);
        t.add(y);
        let r = t.report();
        assert_eq!(r.by_top[0].path.path, "/s/bob");
        assert_eq!(
            r.by_top[0].totals,
            Totals {
                files: 2,
                dirs: 0,
                bytes: 10_100
            }
        );
        assert_eq!(r.by_owner[1].uid, 1000);
        assert_eq!(r.by_owner[1].totals.dirs, 1);
        let again = Tally::default();
        again.absorb(&r);
        assert_eq!(again.report(), r);
    }
}
