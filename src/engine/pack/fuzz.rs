//! The readers of an archive fed hostile bytes (an archive is anyone's making: pack resumes
//! from one, unpack restores one): the manifest's trailer (`manifest::read`), the tar stream
//! an image is read back as, compared with a manifest (`verify::compare`) and unpacked
//! (`unpack::unpack_stream`). For each case: no panic, memory held bounded (`MAX_HELD`, or a
//! small multiple of the input), and nothing written outside DEST (a sibling directory and the
//! parent's listing stay as they were). Raw bytes and near-valid streams (tar headers with good
//! checksums and hostile names, types, sizes, PAX records; trailers with good footers), some
//! mutated. A modest number of cases in every run; `archives_many` (ignored: CI runs it with
//! `--include-ignored`) runs `RECLAIM_FUZZ_CASES` of each (default 50,000; with the trash's
//! records, `trash::fuzz::records_many`, some 200,000 cases in a few minutes).

#[cfg(test)]
use std::io::Write;
use std::os::fd::OwnedFd;

use proptest::prelude::*;

use super::manifest::{self, Entry, Kind, Manifest, Time};
use crate::sys::quote::PathField;
use crate::sys::safeopen;
use crate::sys::testing::peak_during;

/// What a case may hold at its peak beyond its input's size times `PER_BYTE` (a manifest may
/// inflate to 16 MiB whatever its size: `manifest::FLOOR`).
const MAX_HELD: usize = 24 << 20;
const PER_BYTE: usize = 64;

/// Cases of the ignored run (`RECLAIM_FUZZ_CASES`).
fn many() -> u32 {
    std::env::var("RECLAIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000)
}

/// One tar header of `kind` for `name` (hostile bytes welcome), `size` as the header says,
/// `link` as its link name; checksum right.
fn header(kind: u8, name: &[u8], size: u64, link: &[u8], mode: u32) -> [u8; 512] {
    let mut h = [0u8; 512];
    let n = name.len().min(100);
    h[..n].copy_from_slice(&name[..n]);
    let octal = |field: &mut [u8], v: u64| {
        let s = format!("{:0w$o}", v, w = field.len() - 1);
        let b = s.as_bytes();
        if b.len() < field.len() {
            field[..b.len()].copy_from_slice(b);
        } else {
            // Too large for octal: base-256.
            field.fill(0);
            field[0] = 0x80;
            let be = v.to_be_bytes();
            let k = field.len();
            field[k - 8..].copy_from_slice(&be);
        }
    };
    octal(&mut h[100..108], u64::from(mode));
    octal(&mut h[108..116], 61002);
    octal(&mut h[116..124], 61002);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], 1_700_000_000);
    h[156] = kind;
    let l = link.len().min(100);
    h[157..157 + l].copy_from_slice(&link[..l]);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

/// One entry of a generated stream.
#[derive(Debug, Clone)]
struct Gen {
    kind: u8,
    name: Vec<u8>,
    link: Vec<u8>,
    data: Vec<u8>,
    /// What the header says (the data's length, or a lie).
    size: u64,
    mode: u32,
    /// PAX records before it (`path=...`, `size=...`, `SCHILY.xattr...`).
    pax: Vec<(String, Vec<u8>)>,
}

fn name_part() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"a".to_vec()),
        Just(b"b".to_vec()),
        Just(b"..".to_vec()),
        Just(b".".to_vec()),
        Just(b"".to_vec()),
        Just(b"sub".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\xff\x00x".to_vec()),
        prop::collection::vec(any::<u8>(), 0..6),
    ]
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    (any::<bool>(), prop::collection::vec(name_part(), 1..4)).prop_map(|(abs, parts)| {
        let mut n = if abs { b"/".to_vec() } else { b"./".to_vec() };
        n.extend(parts.join(&b'/'));
        n
    })
}

fn gen() -> impl Strategy<Value = Gen> {
    let kind = prop::sample::select(b"0123456xgLK7S\0Z".to_vec());
    let size = prop_oneof![
        8 => Just(None),
        1 => (0u64..1u64 << 40).prop_map(Some),
        1 => Just(Some(u64::MAX >> 1)),
    ];
    let pax = prop::collection::vec(
        (
            prop::sample::select(vec![
                "path",
                "linkpath",
                "size",
                "SCHILY.xattr.user.x",
                "SCHILY.xattr.security.capability",
                "mtime",
            ]),
            prop::collection::vec(any::<u8>(), 0..24),
        )
            .prop_map(|(k, v)| (k.to_string(), v)),
        0..3,
    );
    (
        kind,
        name(),
        name(),
        prop::collection::vec(any::<u8>(), 0..700),
        size,
        0u32..0o10000,
        pax,
    )
        .prop_map(|(kind, name, link, data, size, mode, pax)| Gen {
            kind,
            size: size.unwrap_or(data.len() as u64),
            name,
            link,
            data,
            mode,
            pax,
        })
}

/// A tar stream of `entries`, then `flips` (offset, byte) applied, then cut at `cut`.
fn stream(entries: &[Gen], flips: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        if !e.pax.is_empty() {
            let mut recs = Vec::new();
            for (k, v) in &e.pax {
                let body_len = k.len() + v.len() + 3;
                let mut len = body_len + 1;
                while len.to_string().len() + body_len != len {
                    len = len.to_string().len() + body_len;
                }
                recs.extend_from_slice(format!("{len} {k}=").as_bytes());
                recs.extend_from_slice(v);
                recs.push(b'\n');
            }
            out.extend_from_slice(&header(b'x', b"pax", recs.len() as u64, b"", 0o644));
            out.extend_from_slice(&recs);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.extend_from_slice(&header(e.kind, &e.name, e.size, &e.link, e.mode));
        out.extend_from_slice(&e.data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend_from_slice(&[0; 1024]);
    for &(at, b) in flips {
        if !out.is_empty() {
            let i = at % out.len();
            out[i] ^= b;
        }
    }
    if let Some(c) = cut {
        out.truncate(c % (out.len() + 1));
    }
    out
}

fn streams() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..3000),
        (
            prop::collection::vec(gen(), 0..8),
            prop::collection::vec((any::<usize>(), 1u8..), 0..3),
            prop::option::of(any::<usize>()),
        )
            .prop_map(|(e, f, c)| stream(&e, &f, c)),
    ]
}

/// A small manifest that names some of what the generated streams hold.
fn manifest() -> Manifest {
    let entry = |path: &str, kind: Kind, size: u64, hash: Option<String>| Entry {
        path: PathField::new(path),
        kind,
        ino: 7,
        nlink: 1,
        mode: 0o644,
        image_mode: None,
        uid: 61002,
        gid: 61002,
        size,
        mtime: Time(1_700_000_000, 0),
        ctime: Time(1_700_000_000, 0),
        atime: Time(1_700_000_000, 0),
        rdev: None,
        target: None,
        hash,
        link_to: None,
        xattrs: Vec::new(),
        changed: false,
    };
    Manifest {
        version: 1,
        source: PathField::new("/x"),
        dev: 1,
        ino: 2,
        created: 0,
        compressor: "zstd".into(),
        entries: vec![
            entry("", Kind::Dir, 0, None),
            entry(
                "a",
                Kind::File,
                1,
                Some(blake3::hash(b"a").to_hex().to_string()),
            ),
            entry("sub", Kind::Dir, 0, None),
            entry("sub/b", Kind::Symlink, 0, None),
        ],
    }
}

/// A temporary place for the unpacks of a thread's cases: `outside` (a sibling with one file)
/// and a fresh `DEST` for each case, removed after it.
struct Place {
    dir: tempfile::TempDir,
    fd: OwnedFd,
}

impl Place {
    fn new() -> Place {
        // In memory where there is a tmpfs for it: the fuzz makes and removes many trees.
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/keep"), b"keep").unwrap();
        let fd = safeopen::open_dir_path(dir.path()).unwrap();
        Place { dir, fd }
    }

    /// A new, empty `DEST`, open.
    fn dest(&self) -> OwnedFd {
        safeopen::mkdir_at(&self.fd, c"DEST", 0o700).unwrap();
        safeopen::open_dir_at(&self.fd, c"DEST").unwrap()
    }

    /// Nothing was made or changed beside DEST; DEST goes.
    fn untouched(&self) -> Result<(), TestCaseError> {
        let mut names: Vec<_> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        prop_assert_eq!(names, vec!["DEST", "outside"]);
        let inside: Vec<_> = std::fs::read_dir(self.dir.path().join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        prop_assert_eq!(inside, vec!["keep"]);
        prop_assert_eq!(
            std::fs::read(self.dir.path().join("outside/keep")).unwrap(),
            b"keep"
        );
        if safeopen::remove_tree_at(&self.fd, c"DEST").is_err() {
            // Modes the archive gave keep a user (not root) out of what was made.
            let _ = std::process::Command::new("chmod")
                .args(["-R", "u+rwx"])
                .arg(self.dir.path().join("DEST"))
                .status();
            safeopen::remove_tree_at(&self.fd, c"DEST").unwrap();
        }
        Ok(())
    }
}

thread_local! {
    static PLACE: Place = Place::new();
}

/// Whatever `stream` holds: compared with a manifest, unpacked (as the archive's user too):
/// no panic, bounded memory, nothing outside DEST.
fn tar_case(stream: &[u8]) -> Result<(), TestCaseError> {
    let m = manifest();
    let bound = MAX_HELD + PER_BYTE * stream.len();
    let (_, held) = peak_during(|| super::verify::compare(stream, &m, &mut |_, _| {}));
    prop_assert!(held < bound, "compare held {} bytes", held);
    for (m, as_user) in [(Some(&m), None), (None, Some(61002))] {
        PLACE.with(|place| {
            let dest = place.dest();
            let (_, held) = peak_during(|| super::unpack::unpack_stream(stream, dest, m, as_user));
            prop_assert!(held < bound, "unpack held {} bytes", held);
            place.untouched()
        })?;
    }
    Ok(())
}

/// Two zstd frames of 1 GiB of zeros: one that says how large it is, one streamed (it does
/// not); made once.
fn bombs() -> &'static (Vec<u8>, Vec<u8>) {
    static BOMBS: std::sync::OnceLock<(Vec<u8>, Vec<u8>)> = std::sync::OnceLock::new();
    BOMBS.get_or_init(|| {
        let z = vec![0u8; 1 << 20];
        let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
        e.set_pledged_src_size(Some(1 << 30)).unwrap();
        e.include_contentsize(true).unwrap();
        for _ in 0..1024 {
            e.write_all(&z).unwrap();
        }
        let declared = e.finish().unwrap();
        let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
        for _ in 0..1024 {
            e.write_all(&z).unwrap();
        }
        (declared, e.finish().unwrap())
    })
}

/// The archive bytes `image` then a trailer: a good footer around `payload` (or `raw`).
fn trailers() -> impl Strategy<Value = Vec<u8>> {
    let json = prop_oneof![
        Just(serde_json::to_vec(&manifest()).unwrap()),
        crate::trash::safefile::fuzz::json_like(),
        prop::collection::vec(any::<u8>(), 0..500),
    ];
    let payload = prop_oneof![
        30 => json.clone()
            .prop_map(|j| zstd::bulk::compress(&j, 3).unwrap()),
        30 => prop::collection::vec(any::<u8>(), 0..300),
        // A bomb that says how large it is, and one that does not.
        1 => Just(()).prop_map(|()| bombs().0.clone()),
        1 => Just(()).prop_map(|()| bombs().1.clone()),
    ];
    (
        prop::collection::vec(any::<u8>(), 0..200),
        any::<bool>(),
        payload,
        prop::option::of((any::<u64>(), any::<u64>())),
        prop::collection::vec((any::<usize>(), 1u8..), 0..2),
    )
        .prop_map(|(mut image, hsqs, payload, lie, flips)| {
            if hsqs && image.len() >= 48 {
                image[..4].copy_from_slice(b"hsqs");
                let len = image.len() as u64;
                image[40..48].copy_from_slice(&len.to_le_bytes());
            }
            let off = image.len() as u64;
            let mut out = image;
            out.extend_from_slice(&payload);
            out.extend_from_slice(manifest::MAGIC);
            let (o, l) = lie.unwrap_or((off, payload.len() as u64));
            out.extend_from_slice(&o.to_le_bytes());
            out.extend_from_slice(&l.to_le_bytes());
            out.extend_from_slice(blake3::hash(&payload).as_bytes());
            for (at, b) in flips {
                let i = at % out.len();
                out[i] ^= b;
            }
            out
        })
}

/// Whatever the archive holds: its manifest read (or refused) with bounded memory.
fn trailer_case(bytes: &[u8]) -> Result<(), TestCaseError> {
    let f = safeopen::anonymous(c"archive").unwrap();
    (&f).write_all(bytes).unwrap();
    let (r, held) = peak_during(|| manifest::read(&f));
    prop_assert!(held < MAX_HELD + PER_BYTE * bytes.len(), "held {}", held);
    if let Ok(m) = r {
        // What parses is usable.
        for e in &m.entries {
            let _ = e.rel();
        }
        let _ = m.source.exact();
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn archive_streams_from_hostile_bytes(s in streams()) {
        tar_case(&s)?;
    }

    #[test]
    fn manifests_from_hostile_bytes(b in trailers()) {
        trailer_case(&b)?;
    }
}

#[test]
#[ignore = "RECLAIM_FUZZ_CASES (default 50,000) cases of each archive reader: a few minutes; CI runs it with --include-ignored"]
fn archives_many() {
    let config = ProptestConfig {
        cases: many(),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    // Both readers at once: most of the time is waiting on the file system.
    std::thread::scope(|s| {
        let streams = s.spawn(|| {
            proptest::test_runner::TestRunner::new(config.clone())
                .run(&streams(), |s| tar_case(&s))
                .unwrap_or_else(|e| panic!("{e}"))
        });
        proptest::test_runner::TestRunner::new(config.clone())
            .run(&trailers(), |b| trailer_case(&b))
            .unwrap_or_else(|e| panic!("{e}"));
        streams.join().expect("the stream fuzz");
    });
}
