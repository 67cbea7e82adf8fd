//! The manifest: what went into an archive, entry by entry (the facts of each original as it
//! was read, its content hash, and what squashfs cannot hold: sub-second times, ACLs and
//! other xattrs outside user./trusted./security., modes beyond what a mount may show), and
//! the trailer that carries it after the squashfs image, where the kernel, squashfuse and
//! squashfs-tools never look. Owns the trailer's layout; never touches the image itself.
//!
//! Trailer: `zstd(JSON manifest)`, then a 64-byte footer: `MAGIC` (16 bytes), the offset and
//! the length of the compressed manifest (u64 little-endian each), and the BLAKE3 hash of
//! the compressed bytes (32 bytes).

use std::io::Read;
use std::os::fd::AsFd;

use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use crate::sys::quote::PathField;

pub const MAGIC: &[u8; 16] = b"reclaim-pack-v1\0";
const FOOTER: u64 = 64;
/// A compressed manifest larger than this is not believed (a damaged or hostile trailer).
const MAX_PACKED: u64 = 1 << 30;
/// The most a manifest may inflate to: `RATIO` times its compressed size (real ones inflate
/// 5-15 times: every file's hash is 32 random bytes), at least `FLOOR`, at most `MAX_JSON`
/// (some 20 million entries). A zstd bomb (36 KB that inflates to 1.5 GiB) is refused once
/// the bound is passed, having held no more than the bound.
const RATIO: u64 = 64;
pub const FLOOR: u64 = 16 << 20;
const MAX_JSON: u64 = 4 << 30;
/// The largest window a manifest's zstd frame may ask for (zstd's own default limit; the
/// writer's level 3 uses far less).
const WINDOW_LOG_MAX: u32 = 27;

/// The kind of an entry, as one letter in the JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    #[serde(rename = "f")]
    File,
    #[serde(rename = "d")]
    Dir,
    #[serde(rename = "l")]
    Symlink,
    #[serde(rename = "p")]
    Fifo,
    #[serde(rename = "c")]
    Char,
    #[serde(rename = "b")]
    Block,
}

impl Kind {
    pub fn of_mode(mode: u32) -> Option<Kind> {
        Some(match mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            libc::S_IFIFO => Kind::Fifo,
            libc::S_IFCHR => Kind::Char,
            libc::S_IFBLK => Kind::Block,
            _ => return None,
        })
    }

    pub fn word(self) -> &'static str {
        match self {
            Kind::File => "regular file",
            Kind::Dir => "directory",
            Kind::Symlink => "symbolic link",
            Kind::Fifo => "FIFO",
            Kind::Char => "character device",
            Kind::Block => "block device",
        }
    }
}

/// A time as the kernel keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Time(pub i64, pub u32);

/// One name in the archive: the facts of the original when it was read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the packed directory ("" for the directory itself).
    #[serde(flatten)]
    pub path: PathField,
    #[serde(rename = "k")]
    pub kind: Kind,
    pub ino: u64,
    pub nlink: u32,
    /// Permission bits with setuid, setgid and sticky (`st_mode & 0o7777`).
    pub mode: u32,
    /// The bits the image holds when they differ from `mode` (a file with an ACL: never more
    /// than the ACL grants anyone, since a mount cannot show the ACL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_mode: Option<u32>,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub mtime: Time,
    pub ctime: Time,
    pub atime: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdev: Option<u64>,
    /// A symlink's target, in hex (exact bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// BLAKE3 of the content (regular files), in hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Another name of the same inode earlier in the list (hard links): its index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_to: Option<usize>,
    /// Extended attributes, name and value in hex (ACLs are `system.posix_acl_*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xattrs: Vec<(String, String)>,
    /// It changed while it was read: in the archive as read, but the original stays.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed: bool,
}

impl Entry {
    /// The mode bits the squashfs image holds.
    pub fn image_mode(&self) -> u32 {
        self.image_mode.unwrap_or(self.mode)
    }

    /// The exact relative path.
    pub fn rel(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        self.path.exact().as_os_str().as_bytes().to_vec()
    }
}

/// Whether squashfs keeps an xattr of this name (its prefixes: user., trusted., security.).
pub fn in_image(name: &str) -> bool {
    name.starts_with("user.") || name.starts_with("trusted.") || name.starts_with("security.")
}

/// What an archive holds, and of which directory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// The packed directory, absolute, as it was named.
    pub source: PathField,
    pub dev: u64,
    pub ino: u64,
    /// When the pack was written (seconds since the epoch).
    pub created: i64,
    /// The compressor of the image.
    pub compressor: String,
    pub entries: Vec<Entry>,
}

/// Why a trailer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TrailerError {
    #[error("no reclaim manifest after the image (not written by reclaim pack, or cut short)")]
    Missing,
    #[error("the manifest is damaged ({0})")]
    Damaged(String),
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(Errno),
}

/// Appends the manifest after the image in `file` (its end must be the image's end).
pub fn append(file: &std::fs::File, m: &Manifest) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let json = serde_json::to_vec(m).map_err(std::io::Error::other)?;
    let packed = zstd::bulk::compress(&json, 3)?;
    let mut f = file;
    let offset = f.seek(SeekFrom::End(0))?;
    let mut footer = Vec::with_capacity(FOOTER as usize);
    footer.extend_from_slice(MAGIC);
    footer.extend_from_slice(&offset.to_le_bytes());
    footer.extend_from_slice(&(packed.len() as u64).to_le_bytes());
    footer.extend_from_slice(blake3::hash(&packed).as_bytes());
    f.write_all(&packed)?;
    f.write_all(&footer)?;
    Ok(())
}

/// Reads the manifest from the trailer of `fd` (the whole archive); checks its hash.
pub fn read(fd: impl AsFd) -> Result<Manifest, TrailerError> {
    let fd = fd.as_fd();
    let size = crate::sys::dirfd::fstat(fd).map_err(TrailerError::Os)?.size;
    if size < FOOTER {
        return Err(TrailerError::Missing);
    }
    let mut footer = [0u8; FOOTER as usize];
    pread_exact(fd, &mut footer, size - FOOTER)?;
    if &footer[..16] != MAGIC {
        return Err(TrailerError::Missing);
    }
    let word = |i: usize| u64::from_le_bytes(footer[i..i + 8].try_into().expect("8 bytes"));
    let (offset, len) = (word(16), word(24));
    if len > MAX_PACKED || offset.checked_add(len) != Some(size - FOOTER) {
        return Err(TrailerError::Damaged("bad offset or length".into()));
    }
    if offset < image_size(fd).unwrap_or(0) {
        return Err(TrailerError::Damaged("it overlaps the image".into()));
    }
    let mut packed = vec![0u8; len as usize];
    pread_exact(fd, &mut packed, offset)?;
    if blake3::hash(&packed).as_bytes() != &footer[32..64] {
        return Err(TrailerError::Damaged("hash mismatch".into()));
    }
    let json = inflate(&packed)?;
    serde_json::from_slice(&json).map_err(|e| TrailerError::Damaged(e.to_string()))
}

/// The manifest's JSON from its compressed bytes, refused as soon as it would pass its bound
/// (`RATIO` times the compressed size, at least `FLOOR`, at most `MAX_JSON`): a frame that says
/// it is larger is refused before anything is inflated, one that does not say is stopped at
/// the bound.
fn inflate(packed: &[u8]) -> Result<Vec<u8>, TrailerError> {
    let bound = (packed.len() as u64)
        .saturating_mul(RATIO)
        .clamp(FLOOR, MAX_JSON);
    let too_big = || {
        TrailerError::Damaged(format!(
            "it would inflate beyond {bound} bytes, {RATIO} times its compressed size: not read"
        ))
    };
    let declared = zstd::zstd_safe::get_frame_content_size(packed)
        .ok()
        .flatten();
    if declared.is_some_and(|n| n > bound) {
        return Err(too_big());
    }
    let mut d = zstd::stream::read::Decoder::with_buffer(packed)
        .map_err(|e| TrailerError::Damaged(e.to_string()))?;
    d.window_log_max(WINDOW_LOG_MAX)
        .map_err(|e| TrailerError::Damaged(e.to_string()))?;
    // Grown by doubling, but never past the bound (read_to_end's doubling would reach twice
    // it before the bound is seen).
    let bound = usize::try_from(bound).unwrap_or(usize::MAX);
    let mut json = Vec::with_capacity(declared.map_or(64 << 10, |n| n as usize).min(bound));
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match d.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(TrailerError::Damaged(e.to_string())),
        };
        if json.len() + n > bound {
            return Err(too_big());
        }
        if json.len() + n > json.capacity() {
            let to = (json.capacity() * 2).max(json.len() + n).min(bound);
            json.reserve_exact(to - json.len());
        }
        json.extend_from_slice(&chunk[..n]);
    }
    Ok(json)
}

/// The bytes the squashfs image uses (its superblock's `bytes_used`), if `fd` starts with one.
pub fn image_size(fd: impl AsFd) -> Option<u64> {
    let mut sb = [0u8; 96];
    pread_exact(fd.as_fd(), &mut sb, 0).ok()?;
    (&sb[..4] == b"hsqs").then(|| u64::from_le_bytes(sb[40..48].try_into().expect("8 bytes")))
}

fn pread_exact(
    fd: std::os::fd::BorrowedFd<'_>,
    mut buf: &mut [u8],
    mut at: u64,
) -> Result<(), TrailerError> {
    while !buf.is_empty() {
        match rustix::io::pread(fd, &mut *buf, at) {
            Ok(0) => return Err(TrailerError::Damaged("cut short".into())),
            Ok(n) => {
                buf = &mut buf[n..];
                at += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(TrailerError::Os(e)),
        }
    }
    Ok(())
}

/// Hex of bytes.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bomb_is_stopped_at_its_bound() {
        let zeros = vec![0u8; 200 << 20];
        let packed = zstd::bulk::compress(&zeros, 3).unwrap();
        // The frame says how large it is: refused before inflating.
        assert!(packed.len() < 1 << 20);
        assert!(matches!(inflate(&packed), Err(TrailerError::Damaged(_))));
        // A streamed frame does not say: stopped at the bound.
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        std::io::Write::write_all(&mut enc, &zeros).unwrap();
        let streamed = enc.finish().unwrap();
        assert!(matches!(inflate(&streamed), Err(TrailerError::Damaged(_))));
        // A real one inflates.
        let json = br#"{"a":1}"#;
        assert_eq!(
            inflate(&zstd::bulk::compress(json, 3).unwrap()).unwrap(),
            json
        );
    }
}
