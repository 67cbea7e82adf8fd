//! The messages ranks exchange, and their bytes: little-endian integers and length-prefixed
//! byte strings (names are bytes, not text). Decoding never trusts a length: a short or
//! malformed message is an error, never a panic or a huge allocation.

use std::ffi::CString;
use std::path::PathBuf;

use rustix::io::Errno;

use crate::engine::pace::controller::Verdict;
use crate::engine::walk::{Handoff, Work};
use crate::sys::error::{Failure, Reason};

/// Totals a rank reports (files, directories, bytes, errors).
pub type Counts = [u64; 4];

/// What a rank sees at one tree's path: enough to tell one shared directory from look-alikes
/// (a node-local copy made the same way has the same inode numbers, not the same birth).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeId {
    /// Index of the tree among the arguments that are trees.
    pub index: u32,
    pub ino: u64,
    /// Birth time in nanoseconds (`statx` btime); 0 where the file system does not say.
    pub born_ns: u64,
    /// The file system's type (`statfs` f_type).
    pub fs_type: u64,
}

impl TreeId {
    /// Whether `other` is the same directory as far as both can tell.
    pub fn same(&self, other: &TreeId) -> bool {
        self.index == other.index
            && self.ino == other.ino
            && self.fs_type == other.fs_type
            && (self.born_ns == 0 || other.born_ns == 0 || self.born_ns == other.born_ns)
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Msg {
    /// A rank's view of the trees before any work: (argument index, inode) each, or why it
    /// cannot take part.
    Trees(Result<Vec<TreeId>, String>),
    /// Rank 0: a file of this name was just made at the top of every tree; say which you see.
    Mark(String),
    /// Which trees' mark a rank sees (to rank 0).
    Marked(Vec<bool>),
    /// Rank 0: everyone sees the same trees; start.
    Go,
    /// Rank 0: do nothing, for this reason.
    Abort(String),
    /// An idle rank asks for work: at most this many pieces (the workers it has now: it
    /// cannot hand on what it was given, so what it takes beyond them waits for it alone).
    Steal(u32),
    /// Work for the rank that asked (empty: none to give).
    Work(Vec<Handoff>),
    /// Work handed over as `token` is finished.
    Done {
        token: u64,
        kept: bool,
        summary: Vec<u8>,
    },
    /// Counts done since the last report (to rank 0).
    Progress(Counts),
    /// Rank 0: every root is finished.
    Stop,
    /// A rank's last counts, its host, and what it has to report (to rank 0).
    Final {
        counts: Counts,
        /// The workers it removed with (its measured concurrency; 0: not known).
        workers: u64,
        host: String,
        payload: Vec<u8>,
    },
    /// Rank 0: everyone reported; leave.
    Exit,
    /// Rank 0's latency governor judged a window: every rank acts on it (one judgement for
    /// the job: see `pace::tree::Joint`).
    Verdict(Verdict),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed message from another rank ({0})")]
pub struct Malformed(&'static str);

impl Malformed {
    pub fn new(what: &'static str) -> Self {
        Malformed(what)
    }
}

#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
        self
    }
}

pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("too short"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    pub fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// A count of items each at least `min` bytes long (so a forged count cannot make a huge
    /// allocation).
    pub fn count(&mut self, min: usize) -> Result<usize, Malformed> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min.max(1)) > self.0.len() {
            return Err(Malformed("count beyond the message"));
        }
        Ok(n)
    }
    fn name(&mut self) -> Result<CString, Malformed> {
        CString::new(self.bytes()?).map_err(|_| Malformed("NUL in a name"))
    }
    pub fn end(&self) -> Result<(), Malformed> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Malformed("trailing bytes"))
        }
    }
}

fn counts(w: &mut Writer, c: &Counts) {
    for v in c {
        w.u64(*v);
    }
}

fn read_counts(r: &mut Reader) -> Result<Counts, Malformed> {
    Ok([r.u64()?, r.u64()?, r.u64()?, r.u64()?])
}

impl Msg {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        match self {
            Msg::Trees(Ok(trees)) => {
                w.u8(0).u8(0).u32(trees.len() as u32);
                for t in trees {
                    w.u32(t.index).u64(t.ino).u64(t.born_ns).u64(t.fs_type);
                }
            }
            Msg::Trees(Err(why)) => {
                w.u8(0).u8(1).bytes(why.as_bytes());
            }
            Msg::Go => {
                w.u8(1);
            }
            Msg::Mark(name) => {
                w.u8(10).bytes(name.as_bytes());
            }
            Msg::Marked(seen) => {
                w.u8(11).u32(seen.len() as u32);
                for s in seen {
                    w.u8(*s as u8);
                }
            }
            Msg::Abort(why) => {
                w.u8(2).bytes(why.as_bytes());
            }
            Msg::Steal(want) => {
                w.u8(3).u32(*want);
            }
            Msg::Work(hs) => {
                w.u8(4).u32(hs.len() as u32);
                for h in hs {
                    w.u64(h.token).u32(h.root as u32).u32(h.chain.len() as u32);
                    for (name, ino) in &h.chain {
                        w.bytes(name.to_bytes()).u64(*ino);
                    }
                    match &h.work {
                        Work::Dir(name) => {
                            w.u8(0).bytes(name.to_bytes());
                        }
                        Work::Batch(names) => {
                            w.u8(1).u32(names.len() as u32);
                            for n in names {
                                w.bytes(n.to_bytes());
                            }
                        }
                    }
                }
            }
            Msg::Done {
                token,
                kept,
                summary,
            } => {
                w.u8(5).u64(*token).u8(*kept as u8).bytes(summary);
            }
            Msg::Progress(c) => {
                w.u8(6);
                counts(&mut w, c);
            }
            Msg::Stop => {
                w.u8(7);
            }
            Msg::Final {
                counts: c,
                workers,
                host,
                payload,
            } => {
                w.u8(8);
                counts(&mut w, c);
                w.u64(*workers);
                w.bytes(host.as_bytes()).bytes(payload);
            }
            Msg::Exit => {
                w.u8(9);
            }
            Msg::Verdict(v) => {
                w.u8(12).u8(match v {
                    Verdict::Good => 0,
                    Verdict::Miss => 1,
                    Verdict::Unknown => 2,
                });
            }
        }
        w.0
    }

    pub fn decode(bytes: &[u8]) -> Result<Msg, Malformed> {
        let mut r = Reader(bytes);
        let msg = match r.u8()? {
            0 => match r.u8()? {
                0 => {
                    let n = r.count(28)?;
                    let mut trees = Vec::with_capacity(n);
                    for _ in 0..n {
                        trees.push(TreeId {
                            index: r.u32()?,
                            ino: r.u64()?,
                            born_ns: r.u64()?,
                            fs_type: r.u64()?,
                        });
                    }
                    Msg::Trees(Ok(trees))
                }
                _ => Msg::Trees(Err(text(r.bytes()?))),
            },
            1 => Msg::Go,
            10 => Msg::Mark(text(r.bytes()?)),
            11 => {
                let n = r.count(1)?;
                Msg::Marked(
                    (0..n)
                        .map(|_| r.u8().map(|b| b != 0))
                        .collect::<Result<_, _>>()?,
                )
            }
            2 => Msg::Abort(text(r.bytes()?)),
            3 => Msg::Steal(r.u32()?),
            4 => {
                let n = r.count(17)?;
                let mut hs = Vec::with_capacity(n);
                for _ in 0..n {
                    let token = r.u64()?;
                    let root = r.u32()? as usize;
                    let depth = r.count(12)?;
                    let mut chain = Vec::with_capacity(depth);
                    for _ in 0..depth {
                        chain.push((r.name()?, r.u64()?));
                    }
                    let work = match r.u8()? {
                        0 => Work::Dir(r.name()?),
                        1 => {
                            let k = r.count(4)?;
                            let mut names = Vec::with_capacity(k);
                            for _ in 0..k {
                                names.push(r.name()?);
                            }
                            Work::Batch(names)
                        }
                        _ => return Err(Malformed("work kind")),
                    };
                    hs.push(Handoff {
                        token,
                        root,
                        chain,
                        work,
                    });
                }
                Msg::Work(hs)
            }
            5 => Msg::Done {
                token: r.u64()?,
                kept: r.u8()? != 0,
                summary: r.bytes()?.to_vec(),
            },
            6 => Msg::Progress(read_counts(&mut r)?),
            7 => Msg::Stop,
            8 => Msg::Final {
                counts: read_counts(&mut r)?,
                workers: r.u64()?,
                host: text(r.bytes()?),
                payload: r.bytes()?.to_vec(),
            },
            9 => Msg::Exit,
            12 => Msg::Verdict(match r.u8()? {
                0 => Verdict::Good,
                1 => Verdict::Miss,
                2 => Verdict::Unknown,
                _ => return Err(Malformed("verdict")),
            }),
            _ => return Err(Malformed("message kind")),
        };
        r.end()?;
        Ok(msg)
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Failures as bytes (a rank's report to rank 0).
pub fn encode_failures(failures: &[Failure]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut w = Writer::default();
    w.u32(failures.len() as u32);
    for f in failures {
        w.bytes(f.path.as_os_str().as_bytes());
        let (kind, errno, text): (u8, i32, &str) = match &f.reason {
            Reason::Os(e) => (0, e.raw_os_error(), ""),
            Reason::IsDirectory => (1, 0, ""),
            Reason::DotOrDotDot => (2, 0, ""),
            Reason::Root => (3, 0, ""),
            Reason::SymlinkWithSlash => (4, 0, ""),
            Reason::Changed => (5, 0, ""),
            Reason::MountPoint => (6, 0, ""),
            Reason::OtherDevice => (7, 0, ""),
            Reason::Freeing(s) => (8, 0, s),
            Reason::GraceRefused(s) => (9, 0, s),
            Reason::Job(s) => (10, 0, s),
            Reason::SymlinkInPath(p) => (11, 0, p.to_str().unwrap_or_default()),
            Reason::Kept(s) => (12, 0, s),
            Reason::NulInPath => (13, 0, ""),
            Reason::ListIsDevice => (14, 0, ""),
            Reason::NoBirthTime(n) => (15, (*n).min(i32::MAX as u64) as i32, ""),
            Reason::ListUnreadable(e) => (16, e.raw_os_error(), ""),
            Reason::RootUnknown(e) => (17, e.raw_os_error(), ""),
        };
        w.u8(kind).u32(errno as u32).bytes(text.as_bytes());
    }
    w.0
}

pub fn decode_failures(bytes: &[u8]) -> Result<Vec<Failure>, Malformed> {
    use std::os::unix::ffi::OsStrExt;
    let mut r = Reader(bytes);
    let n = r.count(13)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
        let kind = r.u8()?;
        let errno = r.u32()? as i32;
        let t = text(r.bytes()?);
        let reason = match kind {
            0 => Reason::Os(Errno::from_raw_os_error(errno)),
            1 => Reason::IsDirectory,
            2 => Reason::DotOrDotDot,
            3 => Reason::Root,
            4 => Reason::SymlinkWithSlash,
            5 => Reason::Changed,
            6 => Reason::MountPoint,
            7 => Reason::OtherDevice,
            8 => Reason::Freeing(t),
            9 => Reason::GraceRefused(t),
            10 => Reason::Job(t),
            11 => Reason::SymlinkInPath(t.into()),
            12 => Reason::Kept(t),
            13 => Reason::NulInPath,
            14 => Reason::ListIsDevice,
            15 => Reason::NoBirthTime(errno.max(0) as u64),
            16 => Reason::ListUnreadable(Errno::from_raw_os_error(errno)),
            17 => Reason::RootUnknown(Errno::from_raw_os_error(errno)),
            _ => return Err(Malformed("failure kind")),
        };
        out.push(Failure { path, reason });
    }
    r.end()?;
    Ok(out)
}

/// The subvolumes a rank met, as bytes (its report to rank 0): path, then 1 and the id, how
/// (0 `snap_destroy_v2`, 1 `snap_destroy`) and the nested ids when deleted whole, or 0 and why
/// it was walked.
pub fn encode_subvolumes(subvolumes: &[crate::engine::remove::Subvolume]) -> Vec<u8> {
    use crate::sys::btrfs::Destroyed;
    use std::os::unix::ffi::OsStrExt;
    let mut w = Writer::default();
    w.u32(subvolumes.len() as u32);
    for s in subvolumes {
        w.bytes(s.path.as_os_str().as_bytes());
        match &s.deleted {
            Ok(d) => {
                w.u8(1).u64(d.id).u8(match d.how {
                    Destroyed::SnapDestroyV2 => 0,
                    Destroyed::SnapDestroy => 1,
                });
                w.u32(d.nested.len() as u32);
                for n in &d.nested {
                    w.u64(*n);
                }
            }
            Err(why) => {
                w.u8(0).bytes(why.as_bytes());
            }
        }
    }
    w.0
}

pub fn decode_subvolumes(bytes: &[u8]) -> Result<Vec<crate::engine::remove::Subvolume>, Malformed> {
    use crate::engine::subvolume::Deleted;
    use crate::sys::btrfs::Destroyed;
    use std::os::unix::ffi::OsStrExt;
    let mut r = Reader(bytes);
    let n = r.count(5)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(r.bytes()?));
        let deleted = match r.u8()? {
            1 => {
                let id = r.u64()?;
                let how = match r.u8()? {
                    0 => Destroyed::SnapDestroyV2,
                    1 => Destroyed::SnapDestroy,
                    _ => return Err(Malformed("subvolume deletion kind")),
                };
                let k = r.count(8)?;
                let nested = (0..k).map(|_| r.u64()).collect::<Result<Vec<u64>, _>>()?;
                Ok(Deleted { id, how, nested })
            }
            0 => Err(text(r.bytes()?)),
            _ => return Err(Malformed("subvolume outcome")),
        };
        out.push(crate::engine::remove::Subvolume { path, deleted });
    }
    r.end()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(m: Msg) {
        let bytes = m.encode();
        assert_eq!(Msg::decode(&bytes).unwrap(), m);
        // Every truncation is an error, never a panic.
        for cut in 0..bytes.len() {
            assert!(Msg::decode(&bytes[..cut]).is_err(), "{m:?} cut at {cut}");
        }
    }

    #[test]
    fn every_message_round_trips_and_truncations_fail() {
        round(Msg::Trees(Ok(vec![
            TreeId {
                index: 0,
                ino: 12,
                born_ns: 1,
                fs_type: 0x6969,
            },
            TreeId {
                index: 3,
                ino: u64::MAX,
                born_ns: 0,
                fs_type: 2,
            },
        ])));
        round(Msg::Trees(Err("rank 2: no such tree".into())));
        round(Msg::Go);
        round(Msg::Mark(".reclaim-mpi-0a1b".into()));
        round(Msg::Marked(vec![true, false]));
        round(Msg::Abort("different trees".into()));
        round(Msg::Steal(7));
        round(Msg::Work(vec![
            Handoff {
                token: 7,
                root: 1,
                chain: vec![(c"a".to_owned(), 5), (c"b\xff".to_owned(), 6)],
                work: Work::Dir(c"c".to_owned()),
            },
            Handoff {
                token: 8,
                root: 0,
                chain: vec![],
                work: Work::Batch(vec![c"x".to_owned(), c"y".to_owned()]),
            },
        ]));
        round(Msg::Done {
            token: 9,
            kept: true,
            summary: vec![1, 2, 3],
        });
        round(Msg::Progress([1, 2, 3, 4]));
        round(Msg::Stop);
        round(Msg::Final {
            counts: [5, 6, 7, 8],
            workers: 12,
            host: "node7".into(),
            payload: b"abc".to_vec(),
        });
        round(Msg::Exit);
        round(Msg::Verdict(Verdict::Miss));
        round(Msg::Verdict(Verdict::Good));
        assert!(Msg::decode(&[12, 7]).is_err(), "an unknown verdict");
    }

    #[test]
    fn forged_counts_do_not_allocate() {
        let mut w = Writer::default();
        w.u8(4).u32(u32::MAX);
        assert!(Msg::decode(&w.0).is_err());
    }

    #[test]
    fn failures_round_trip() {
        let f = vec![
            Failure {
                path: "a/b".into(),
                reason: Reason::Os(Errno::ACCESS),
            },
            Failure {
                path: "a/m".into(),
                reason: Reason::MountPoint,
            },
            Failure {
                path: "a/f".into(),
                reason: Reason::Freeing("x".into()),
            },
            Failure {
                path: "a/old".into(),
                reason: Reason::NoBirthTime(1_000_000),
            },
            Failure {
                path: "a".into(),
                reason: Reason::NoBirthTime(0),
            },
            Failure {
                path: "list".into(),
                reason: Reason::ListUnreadable(Errno::NOENT),
            },
            Failure {
                path: "t".into(),
                reason: Reason::RootUnknown(Errno::ACCESS),
            },
        ];
        assert_eq!(decode_failures(&encode_failures(&f)).unwrap(), f);
    }

    #[test]
    fn subvolumes_round_trip_and_truncations_are_errors() {
        use crate::engine::remove::Subvolume;
        use crate::engine::subvolume::Deleted;
        use crate::sys::btrfs::Destroyed;
        use std::os::unix::ffi::OsStrExt;
        let s = vec![
            Subvolume {
                path: PathBuf::from("t/d3/sv"),
                deleted: Ok(Deleted {
                    id: 257,
                    how: Destroyed::SnapDestroyV2,
                    nested: vec![258, 300],
                }),
            },
            Subvolume {
                path: PathBuf::from(std::ffi::OsStr::from_bytes(b"t/\xff/old")),
                deleted: Ok(Deleted {
                    id: 9,
                    how: Destroyed::SnapDestroy,
                    nested: vec![],
                }),
            },
            Subvolume {
                path: PathBuf::from("t/d5/walked"),
                deleted: Err("another file system is mounted inside it".into()),
            },
        ];
        let bytes = encode_subvolumes(&s);
        assert_eq!(decode_subvolumes(&bytes).unwrap(), s);
        for cut in 0..bytes.len() {
            assert!(decode_subvolumes(&bytes[..cut]).is_err(), "{cut}");
        }
        assert!(decode_subvolumes(&encode_subvolumes(&[]))
            .unwrap()
            .is_empty());
    }
}
