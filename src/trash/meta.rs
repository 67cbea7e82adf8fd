//! `meta.json` of a trash entry: where the entry came from and what it holds, as known when
//! it was hidden. Written before the entry's data is renamed in; read as hostile input (see
//! `safefile`) and never trusted for safety: the reaper works on what is in the entry, never on
//! paths read from here, and `restore` checks the directory it names by its lineage. A batch
//! entry's list of paths (`held.json`, `HeldList`) is read the same way, and a name in it is
//! used only if it is one name (`HeldName::bytes`).

use std::ffi::{CStr, OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use std::time::Duration;

use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::safefile::{self, Bad};
use crate::sys::dirfd::Lineage;

pub const META: &CStr = c"meta.json";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub version: u32,
    pub id: String,
    /// The original absolute path (lossy UTF-8 for display; exact bytes in `original_hex`).
    pub original: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_hex: Option<String>,
    /// The original parent directory, which `restore` requires to be the same one: device and
    /// inode (first layout) ...
    pub parent_dev: u64,
    pub parent_ino: u64,
    /// ... and, from version 2, its owner, birth time and generation too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Lineage>,
    pub uid: u32,
    pub created_unix: f64,
    pub grace_until_unix: Option<f64>,
    /// "file", "dir", "symlink" or "other".
    pub kind: String,
    /// Allocated bytes (`st_blocks`), when known (files: at hide time; trees: not walked).
    pub allocated: Option<u64>,
    pub files: Option<u64>,
    /// How the entry is to be freed: the pacing of the `reclaim rm` that hid it.
    #[serde(default)]
    pub pacing: EntryPacing,
    /// A batch (`kind` "batch", version 3: many paths of one directory, `original`, hidden by
    /// one run, as `prune` does): how many paths it holds. Their list is `held.json`
    /// (`Held`); `data` is a directory holding each as `<slot>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u64>,
    /// The first few of them (status shows these without reading `held.json`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_first: Vec<HeldName>,
}

/// `kind` of an entry holding many paths of one directory.
pub const BATCH: &str = "batch";
/// Inside a batch entry: the list of the paths it holds.
pub const HELD: &CStr = c"held.json";
/// The most `held.json` may be (a batch is split into entries whose lists stay below it).
pub const MAX_HELD_BYTES: u64 = 32 << 20;
/// The most paths one batch entry holds (a larger batch is split into several entries).
pub const MAX_HELD: usize = 100_000;
/// How many names `held_first` keeps.
pub const HELD_FIRST: usize = 10;

/// A name in a batch's directory, exactly (lossy UTF-8, and the bytes in hex when they are not
/// UTF-8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldName {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_hex: Option<String>,
}

impl HeldName {
    pub fn new(name: &[u8]) -> Self {
        HeldName {
            name: String::from_utf8_lossy(name).into_owned(),
            name_hex: std::str::from_utf8(name)
                .is_err()
                .then(|| name.iter().map(|x| format!("{x:02x}")).collect()),
        }
    }

    /// The name's bytes, if it is one name: not empty, no `/` or NUL, not `.` or `..` (a
    /// record is the user's input: it never names a path elsewhere).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        let b = match &self.name_hex {
            Some(hex) => crate::sys::quote::unhex(hex)?,
            None => self.name.as_bytes().to_vec(),
        };
        let one = !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/') && !b.contains(&0);
        one.then_some(b)
    }
}

/// One path a batch entry holds: its name in the batch's directory, and where it is in the
/// entry (`data/<slot>`: a number, never a name from the user).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub slot: u32,
    #[serde(flatten)]
    pub name: HeldName,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
}

impl Held {
    /// Its name in the entry's `data` directory.
    pub fn slot_name(&self) -> std::ffi::CString {
        std::ffi::CString::new(self.slot.to_string()).expect("digits")
    }
}

/// `held.json`: the paths of a batch entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldList {
    pub items: Vec<Held>,
}

impl HeldList {
    /// Reads `held.json` of a batch entry of a trash of `owner` (hostile input, as
    /// `Meta::read`). `Ok(None)`: missing or not parsing.
    pub fn read(entry: &OwnedFd, owner: u32) -> Result<Option<HeldList>, Bad> {
        let want = safefile::Expect {
            owners: &[owner],
            max: MAX_HELD_BYTES,
            one_link: true,
        };
        match safefile::read_checked(entry, HELD, &want) {
            Ok(text) => Ok(serde_json::from_slice(&text).ok()),
            Err(Bad::Missing) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn text(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("held serializes")
    }

    /// Writes `held.json` (new file) into the entry directory; `sync` fsyncs it.
    pub fn write_new(&self, entry: &OwnedFd, sync: bool) -> Result<(), Errno> {
        safefile::write_new(entry, HELD, &self.text(), sync)
    }

    /// Replaces `held.json` (what is left after a partial hide or restore).
    pub fn rewrite(&self, entry: &OwnedFd) -> Result<(), Errno> {
        safefile::replace(entry, HELD, &self.text())
    }

    /// The allocated bytes and files of the paths listed, as far as known.
    pub fn totals(&self) -> (Option<u64>, Option<u64>) {
        let sum = |f: &dyn Fn(&Held) -> Option<u64>| {
            self.items
                .iter()
                .map(f)
                .try_fold(0u64, |a, b| Some(a.saturating_add(b?)))
        };
        (sum(&|h| h.allocated), sum(&|h| h.files))
    }
}

impl Meta {
    /// The original path, exactly.
    pub fn original_path(&self) -> PathBuf {
        match &self.original_hex {
            Some(hex) => {
                OsString::from_vec(crate::sys::quote::unhex(hex).unwrap_or_default()).into()
            }
            None => PathBuf::from(&self.original),
        }
    }

    pub fn set_original(&mut self, path: &std::path::Path) {
        let b = path.as_os_str().as_bytes();
        self.original = path.to_string_lossy().into_owned();
        self.original_hex = std::str::from_utf8(b)
            .is_err()
            .then(|| b.iter().map(|x| format!("{x:02x}")).collect());
    }

    /// Whether it holds many paths of one directory (`held.json`), not one.
    pub fn is_batch(&self) -> bool {
        self.kind == BATCH
    }

    /// What a batch now holds, per its list: the count, the first names and the totals.
    pub fn set_held(&mut self, list: &HeldList) {
        self.held = Some(list.items.len() as u64);
        self.held_first = list
            .items
            .iter()
            .take(HELD_FIRST)
            .map(|h| h.name.clone())
            .collect();
        (self.allocated, self.files) = list.totals();
    }

    /// Whether the grace window is still open at `now` (unix seconds).
    pub fn in_grace(&self, now: f64) -> bool {
        self.grace_until_unix.is_some_and(|g| g > now)
    }

    /// Writes `meta.json` (new file) into the entry directory; `sync` fsyncs it.
    pub fn write_new(&self, entry: &OwnedFd, sync: bool) -> Result<(), Errno> {
        let text = serde_json::to_vec_pretty(self).expect("meta serializes");
        safefile::write_new(entry, META, &text, sync)
    }

    /// Replaces `meta.json` of an entry (a new file renamed over the old one): for what was
    /// learned later, such as a tree's measured size.
    pub fn rewrite(&self, entry: &OwnedFd) -> Result<(), Errno> {
        let text = serde_json::to_vec_pretty(self).expect("meta serializes");
        safefile::replace(entry, META, &text)
    }

    /// Reads `meta.json` of an entry of a trash of `owner`. `Ok(None)`: missing, or a plain
    /// file that does not parse (a crash can leave it empty when the hide was not
    /// `--durable`): no record. `Err`: something that is not a record (a FIFO, a symlink, a
    /// link to another file, another owner's, too big): the entry is damaged.
    pub fn read(entry: &OwnedFd, owner: u32) -> Result<Option<Meta>, Bad> {
        match safefile::read_json::<Meta>(entry, META, owner) {
            Err(Bad::Missing) => Ok(None),
            r => r,
        }
    }
}

/// A new entry id: UTC time to the microsecond, pid and a counter, so ids sort oldest first
/// and two processes never collide: `20261122T081500.123456Z-4711-0`.
pub fn new_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}.{:06}Z-{}-{}",
        crate::sys::format::utc_stamp(now.as_secs()),
        now.subsec_micros(),
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether a name in a trash is an entry (as made by `new_id`).
pub fn is_entry_name(name: &[u8]) -> bool {
    name.len() > 24
        && name[..8].iter().all(u8::is_ascii_digit)
        && name[8] == b'T'
        && name.contains(&b'Z')
        && !name.contains(&b'/')
}

/// The name as an `OsStr` (for messages).
pub fn os(name: &CStr) -> &OsStr {
    OsStr::from_bytes(name.to_bytes())
}

/// How removal is to be paced, as asked: by `reclaim rm`'s flags, and recorded in each entry it
/// hides (a reaper frees the entry that way; `engine::pace::asked` turns it into what the
/// pacer takes). `meta.json` holds the budget as
/// `max_latency_ms`; a record is the user's input, so a budget there that is no duration
/// (negative, not finite, beyond 100 years) reads as not given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EntryPacing {
    /// `--fast`: no pacing at all.
    pub fast: bool,
    /// `--max-latency`, as given (`None`: the default budget).
    #[serde(
        rename = "max_latency_ms",
        with = "millis",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_latency: Option<Duration>,
    /// `--rate`: bytes freed per second at most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<u64>,
    /// `--iops`: unlinks per second at most, in trees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops: Option<u64>,
    /// Trees paced by the latency probe too (`--max-latency` was given).
    #[serde(default)]
    pub pace_trees: bool,
}

/// `max_latency_ms` of a record: a budget as milliseconds (`f64`), either way.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_secs_f64() * 1e3)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let ms = Option::<f64>::deserialize(d)?;
        Ok(ms
            .filter(|ms| *ms / 1e3 <= crate::sys::format::MAX_DURATION_SECS)
            .and_then(|ms| Duration::try_from_secs_f64(ms / 1e3).ok()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_oldest_first_and_are_recognised() {
        let a = new_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id();
        assert!(a < b, "{a} {b}");
        assert!(is_entry_name(a.as_bytes()));
        assert!(!is_entry_name(b"lock"));
        assert!(!is_entry_name(b"reaper.json"));
    }

    #[test]
    fn held_names_are_single_names_only() {
        let n = |s: &str| HeldName::new(s.as_bytes()).bytes();
        assert_eq!(n("a.log"), Some(b"a.log".to_vec()));
        for bad in ["", ".", "..", "../x", "a/b", "/etc"] {
            assert_eq!(n(bad), None, "{bad}");
        }
        let odd = HeldName::new(b"a\xffb");
        assert!(odd.name_hex.is_some());
        assert_eq!(odd.bytes(), Some(b"a\xffb".to_vec()));
        let nul = HeldName {
            name: String::new(),
            name_hex: Some("6100".into()),
        };
        assert_eq!(nul.bytes(), None);
    }

    #[test]
    fn non_utf8_originals_round_trip() {
        let mut m = Meta {
            version: 1,
            id: new_id(),
            original: String::new(),
            original_hex: None,
            parent_dev: 1,
            parent_ino: 2,
            parent: None,
            uid: 0,
            created_unix: 0.0,
            grace_until_unix: None,
            kind: "file".into(),
            allocated: Some(1),
            files: Some(1),
            pacing: EntryPacing::default(),
            held: None,
            held_first: Vec::new(),
        };
        let p = PathBuf::from(OsString::from_vec(b"/tmp/a\xffb\nc".to_vec()));
        m.set_original(&p);
        let back: Meta = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back.original_path(), p);
        m.set_original(std::path::Path::new("/tmp/plain"));
        assert!(m.original_hex.is_none());
    }
}
