//! Proving an archive: every entry read back through the format's reader (`sqfs2tar`) and
//! compared with the manifest, which records the originals as they were read: kind, mode,
//! owner, time (to the second), size, content hash (BLAKE3), symlink target, hard-link
//! structure, device numbers and the xattrs squashfs holds. Every manifest entry must be
//! found exactly once, and nothing else. Reads only.

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;

use super::manifest::{self, Entry, Kind, Manifest};
use super::tools;

/// Why an archive is not proven.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{}: {}", show(.0), .1)]
    Differs(Vec<u8>, String),
    #[error("{} is in the archive but not in the manifest", show(.0))]
    Extra(Vec<u8>),
    #[error("{} is missing from the archive", show(.0))]
    Missing(Vec<u8>),
    #[error("reading it back: {0}")]
    Read(String),
    #[error(transparent)]
    Tool(#[from] tools::ToolError),
    #[error("interrupted")]
    Interrupted,
}

fn show(rel: &[u8]) -> String {
    if rel.is_empty() {
        "the top directory".into()
    } else {
        crate::sys::quote::quote(std::ffi::OsStr::from_bytes(rel))
    }
}

/// The tar path `sqfs2tar -r .` gives, as a relative path ("" for the root).
fn rel_of(tar_path: &[u8]) -> Vec<u8> {
    let p = tar_path.strip_prefix(b"./").unwrap_or(tar_path);
    let p = if p == b"." { &b""[..] } else { p };
    p.strip_suffix(b"/").unwrap_or(p).to_vec()
}

/// Reads `archive` back and compares it with `m`; `progress(entries, bytes)` now and then.
pub fn verify(
    archive: impl AsFd,
    m: &Manifest,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), VerifyError> {
    let mut child = tools::sqfs2tar(archive.as_fd())?;
    let out = child.stdout.take().expect("piped");
    let stream = super::guard::Guard::new(out);
    let r = compare(
        std::io::BufReader::with_capacity(1 << 20, stream),
        m,
        progress,
    );
    // A comparison that stopped early leaves the reader blocked on a full pipe: end it.
    if r.is_err() {
        let _ = child.kill();
    }
    let waited = tools::wait("sqfs2tar", child);
    r?;
    waited?;
    Ok(())
}

pub(super) fn compare(
    stream: impl Read,
    m: &Manifest,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), VerifyError> {
    let index: HashMap<Vec<u8>, usize> = m
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.rel(), i))
        .collect();
    let mut seen = vec![false; m.entries.len()];
    let mut data_seen: HashMap<u64, bool> = HashMap::new();
    let mut archive = tar::Archive::new(stream);
    let (mut n, mut bytes) = (0u64, 0u64);
    let entries = archive
        .entries()
        .map_err(|e| VerifyError::Read(e.to_string()))?;
    for entry in entries {
        if crate::sys::interrupt::stopping() {
            return Err(VerifyError::Interrupted);
        }
        let mut entry = entry.map_err(|e| VerifyError::Read(e.to_string()))?;
        let rel = rel_of(&entry.path_bytes());
        let Some(&i) = index.get(&rel) else {
            return Err(VerifyError::Extra(rel));
        };
        if std::mem::replace(&mut seen[i], true) {
            return Err(VerifyError::Differs(rel, "in the archive twice".into()));
        }
        let want = &m.entries[i];
        let kind = check_meta(&mut entry, want, &rel)?;
        if let Some(size) = check_body(&mut entry, want, kind, &rel, (m, &index))? {
            data_seen.insert(want.ino, true);
            bytes += size;
        }
        n += 1;
        if n % 1024 == 0 {
            progress(n, bytes);
        }
    }
    progress(n, bytes);
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(VerifyError::Missing(m.entries[i].rel()));
    }
    // Every inode's content was read once (a group of hard links only as links would not).
    if let Some(e) = m
        .entries
        .iter()
        .find(|e| e.kind == Kind::File && !data_seen.contains_key(&e.ino))
    {
        return Err(VerifyError::Missing(e.rel()));
    }
    Ok(())
}

/// Checks what the tar header of `entry` says (type, mode, owner, time, the xattrs squashfs
/// holds) against the manifest's `want`; its kind.
fn check_meta(
    entry: &mut tar::Entry<'_, impl Read>,
    want: &Entry,
    rel: &[u8],
) -> Result<Kind, VerifyError> {
    let differs = |what: String| VerifyError::Differs(rel.to_vec(), what);
    let h = entry.header().clone();
    let kind = match h.entry_type() {
        tar::EntryType::Regular | tar::EntryType::Continuous => Kind::File,
        tar::EntryType::Link => Kind::File,
        tar::EntryType::Directory => Kind::Dir,
        tar::EntryType::Symlink => Kind::Symlink,
        tar::EntryType::Fifo => Kind::Fifo,
        tar::EntryType::Char => Kind::Char,
        tar::EntryType::Block => Kind::Block,
        t => return Err(differs(format!("unexpected tar entry type {t:?}"))),
    };
    if kind != want.kind {
        return Err(differs(format!(
            "a {} in the archive, a {} in the tree",
            kind.word(),
            want.kind.word()
        )));
    }
    let num = |r: std::io::Result<u64>| r.map_err(|e| VerifyError::Read(e.to_string()));
    let got = (
        num(h.mode().map(u64::from))? as u32 & 0o7777,
        num(h.uid())?,
        num(h.gid())?,
        num(h.mtime())?,
    );
    let expect = (
        want.image_mode(),
        u64::from(want.uid),
        u64::from(want.gid),
        super::write::image_time(want.mtime),
    );
    if got != expect {
        return Err(differs(format!(
            "mode, owner or time differ (archive {:o} {}:{} {}, tree {:o} {}:{} {})",
            got.0, got.1, got.2, got.3, expect.0, expect.1, expect.2, expect.3
        )));
    }
    // Xattrs squashfs holds, as PAX records.
    let mut xattrs: Vec<(String, String)> = Vec::new();
    if let Some(pax) = entry
        .pax_extensions()
        .map_err(|e| VerifyError::Read(e.to_string()))?
    {
        for ext in pax {
            let ext = ext.map_err(|e| VerifyError::Read(e.to_string()))?;
            if let Some(name) = ext.key().ok().and_then(|k| k.strip_prefix("SCHILY.xattr.")) {
                xattrs.push((name.to_string(), manifest::hex(ext.value_bytes())));
            }
        }
    }
    xattrs.sort();
    let want_x: Vec<(String, String)> = want
        .xattrs
        .iter()
        .filter(|(n, _)| manifest::in_image(n))
        .cloned()
        .collect();
    // A hard link's entry carries no xattrs of its own.
    if h.entry_type() != tar::EntryType::Link && xattrs != want_x {
        return Err(differs("extended attributes differ".into()));
    }
    Ok(kind)
}

/// Checks what `entry` holds (link, symlink target, device numbers, content by BLAKE3)
/// against `want`; the bytes of content read, if it carried the inode's data.
fn check_body(
    entry: &mut tar::Entry<'_, impl Read>,
    want: &Entry,
    kind: Kind,
    rel: &[u8],
    (m, index): (&Manifest, &HashMap<Vec<u8>, usize>),
) -> Result<Option<u64>, VerifyError> {
    let differs = |what: String| VerifyError::Differs(rel.to_vec(), what);
    let h = entry.header().clone();
    let num = |r: std::io::Result<u64>| r.map_err(|e| VerifyError::Read(e.to_string()));
    match h.entry_type() {
        tar::EntryType::Link => {
            let to = rel_of(&entry.link_name_bytes().unwrap_or_default());
            let same = index
                .get(&to)
                .is_some_and(|&j| m.entries[j].ino == want.ino && m.entries[j].kind == Kind::File);
            if !same || want.nlink < 2 {
                return Err(differs("hard link structure differs".into()));
            }
        }
        tar::EntryType::Symlink => {
            let t = entry.link_name_bytes().unwrap_or_default();
            if Some(manifest::hex(&t)) != want.target {
                return Err(differs("symlink target differs".into()));
            }
        }
        tar::EntryType::Char | tar::EntryType::Block => {
            let dev = rustix::fs::makedev(
                num(h.device_major().map(|d| u64::from(d.unwrap_or(0))))? as u32,
                num(h.device_minor().map(|d| u64::from(d.unwrap_or(0))))? as u32,
            );
            if Some(dev) != want.rdev {
                return Err(differs("device numbers differ".into()));
            }
        }
        _ if kind == Kind::File => {
            if entry.size() != want.size {
                return Err(differs(format!(
                    "size {} in the archive, {} when read",
                    entry.size(),
                    want.size
                )));
            }
            let mut hasher = blake3::Hasher::new();
            let mut buf = vec![0u8; 256 << 10];
            loop {
                let k = entry
                    .read(&mut buf)
                    .map_err(|e| VerifyError::Read(e.to_string()))?;
                if k == 0 {
                    break;
                }
                hasher.update(&buf[..k]);
            }
            if Some(hasher.finalize().to_hex().to_string()) != want.hash {
                return Err(differs("content differs (BLAKE3)".into()));
            }
            return Ok(Some(want.size));
        }
        _ => {}
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::rel_of;

    #[test]
    fn tar_paths_become_relative_paths() {
        assert_eq!(rel_of(b"./"), b"");
        assert_eq!(rel_of(b"."), b"");
        assert_eq!(rel_of(b"./a/b"), b"a/b");
        assert_eq!(rel_of(b"./d/"), b"d");
    }
}
