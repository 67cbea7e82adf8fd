//! Writing the archive: the tar stream of what the readers read, fed to `tar2sqfs`
//! (squashfs-tools-ng), which writes the squashfs image into the temporary file reclaim
//! created; and the manifest of every entry as it was read. Owns the mapping from an entry
//! to its tar record (paths, hard links, PAX xattrs, the mode and time the image can hold);
//! never reads the tree itself nor names a path for a syscall.

use std::collections::HashMap;
use std::io::{BufWriter, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::process::{Child, ChildStdin};

use super::manifest::{self, Entry, Kind, Time};
use super::source::{Content, Read as Got, Stat};
use crate::sys::quote::PathField;

/// The tar stream into `tar2sqfs`, and the manifest it describes.
pub struct Writer {
    tar: tar::Builder<BufWriter<ChildStdin>>,
    pub entries: Vec<Entry>,
    /// First name of each inode with several links: its index in `entries`.
    links: HashMap<u64, usize>,
    pub bytes: u64,
}

/// Why the stream could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{}: {}", crate::sys::quote::quote(std::ffi::OsStr::from_bytes(.0)), .1)]
    Entry(Vec<u8>, std::io::Error),
    #[error("tar2sqfs stopped reading: {0}")]
    Pipe(std::io::Error),
}

impl Writer {
    pub fn new(child: &mut Child) -> Writer {
        let stdin = child.stdin.take().expect("tar2sqfs's stdin is piped");
        let mut tar = tar::Builder::new(BufWriter::with_capacity(1 << 20, stdin));
        tar.mode(tar::HeaderMode::Complete);
        Writer {
            tar,
            entries: Vec::new(),
            links: HashMap::new(),
            bytes: 0,
        }
    }

    /// Appends one entry read from the tree.
    pub fn add(&mut self, r: Got) -> Result<(), WriteError> {
        let Got {
            rel,
            stat,
            xattrs,
            target,
            content,
            mut changed,
        } = r;
        let err = |e: std::io::Error| WriteError::Entry(rel.clone(), e);
        let mut entry = entry_of(&rel, &stat, &xattrs, target.as_deref());
        let path_bytes = tar_path(&rel);
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&path_bytes));
        let mut h = tar::Header::new_gnu();
        h.set_mode(entry.image_mode());
        h.set_uid(stat.uid.into());
        h.set_gid(stat.gid.into());
        h.set_mtime(image_time(stat.mtime));
        h.set_size(0);
        // Another name of an inode already in the stream: a hard link to its first name.
        if stat.kind != Kind::Dir && stat.nlink > 1 {
            if let Some(&first) = self.links.get(&stat.ino) {
                entry.link_to = Some(first);
                entry.size = self.entries[first].size;
                entry.hash = self.entries[first].hash.clone();
                h.set_entry_type(tar::EntryType::Link);
                let to = tar_path(&self.entries[first].rel());
                self.tar
                    .append_link(&mut h, path, std::ffi::OsStr::from_bytes(&to))
                    .map_err(err)?;
                self.entries.push(entry);
                return Ok(());
            }
            self.links.insert(stat.ino, self.entries.len());
        }
        let image_xattrs: Vec<(String, &[u8])> = xattrs
            .iter()
            .filter(|(n, _)| manifest::in_image(n))
            .map(|(n, v)| (format!("SCHILY.xattr.{n}"), v.as_slice()))
            .collect();
        if !image_xattrs.is_empty() {
            self.tar
                .append_pax_extensions(image_xattrs.iter().map(|(k, v)| (k.as_str(), *v)))
                .map_err(err)?;
        }
        match stat.kind {
            Kind::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                self.tar
                    .append_data(&mut h, path, std::io::empty())
                    .map_err(err)?;
            }
            Kind::Symlink => {
                h.set_entry_type(tar::EntryType::Symlink);
                let t = target.unwrap_or_default();
                self.tar
                    .append_link(&mut h, path, std::ffi::OsStr::from_bytes(&t))
                    .map_err(err)?;
            }
            Kind::Fifo | Kind::Char | Kind::Block => {
                h.set_entry_type(match stat.kind {
                    Kind::Fifo => tar::EntryType::Fifo,
                    Kind::Char => tar::EntryType::Char,
                    _ => tar::EntryType::Block,
                });
                if stat.kind != Kind::Fifo {
                    h.set_device_major(rustix::fs::major(stat.rdev))
                        .map_err(err)?;
                    h.set_device_minor(rustix::fs::minor(stat.rdev))
                        .map_err(err)?;
                }
                self.tar
                    .append_data(&mut h, path, std::io::empty())
                    .map_err(err)?;
            }
            Kind::File => {
                let (hash, same) = self
                    .append_file(&mut h, path, content, &stat)
                    .map_err(err)?;
                changed |= !same;
                entry.hash = Some(hash.to_hex().to_string());
            }
        }
        entry.changed = changed;
        self.entries.push(entry);
        Ok(())
    }

    /// Appends a regular file's content (exactly `stat.size` bytes); its hash, and whether
    /// it was unchanged while it was read.
    fn append_file(
        &mut self,
        h: &mut tar::Header,
        path: &std::path::Path,
        content: Content,
        stat: &Stat,
    ) -> std::io::Result<(blake3::Hash, bool)> {
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(stat.size);
        let got = match content {
            Content::Bytes(data, hash) => {
                // Exactly the size declared: a file that changed size is padded or cut (and
                // stays, `changed`).
                let mut data = data;
                data.resize(stat.size as usize, 0);
                self.tar.append_data(h, path, &data[..])?;
                (hash, true)
            }
            Content::Open(fd) => self.stream_large(h, path, fd, stat)?,
            Content::None => (blake3::hash(&[]), true),
        };
        self.bytes += stat.size;
        Ok(got)
    }

    /// Streams a large file from its fd, hashing what goes into the stream (exactly
    /// `stat.size` bytes); returns the hash and whether the file was unchanged throughout.
    fn stream_large(
        &mut self,
        h: &mut tar::Header,
        path: &std::path::Path,
        fd: OwnedFd,
        stat: &Stat,
    ) -> std::io::Result<(blake3::Hash, bool)> {
        struct Hashing<R> {
            inner: R,
            hasher: blake3::Hasher,
            left: u64,
            short: bool,
        }
        impl<R: Read> Read for Hashing<R> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.left == 0 {
                    return Ok(0);
                }
                let want = buf.len().min(self.left as usize);
                let mut n = self.inner.read(&mut buf[..want])?;
                if n == 0 {
                    // Shrunk while read: zeros up to the declared size.
                    self.short = true;
                    n = want;
                    buf[..n].fill(0);
                }
                self.hasher.update(&buf[..n]);
                self.left -= n as u64;
                Ok(n)
            }
        }
        let file = std::fs::File::from(fd);
        let mut r = Hashing {
            inner: std::io::BufReader::with_capacity(1 << 20, &file),
            hasher: blake3::Hasher::new(),
            left: stat.size,
            short: false,
        };
        self.tar.append_data(h, path, &mut r)?;
        let after = Stat::of_fd(&file).ok().flatten();
        let same = !r.short && after == Some(*stat);
        Ok((r.hasher.finalize(), same))
    }

    /// Ends the stream (tar's two zero blocks) and closes the pipe.
    pub fn finish(self) -> Result<Vec<Entry>, WriteError> {
        let mut inner = self.tar.into_inner().map_err(WriteError::Pipe)?;
        inner.flush().map_err(WriteError::Pipe)?;
        drop(inner);
        Ok(self.entries)
    }
}

/// The tar path of a relative path: "./" for the root (tar2sqfs then keeps its attributes).
fn tar_path(rel: &[u8]) -> Vec<u8> {
    if rel.is_empty() {
        b"./".to_vec()
    } else {
        rel.to_vec()
    }
}

/// A time as the image holds it: whole seconds within squashfs's unsigned 32 bits (the
/// manifest keeps the exact time).
pub fn image_time(t: Time) -> u64 {
    t.0.clamp(0, i64::from(u32::MAX)) as u64
}

/// The manifest's record of an entry read from the tree (no content hash or link yet).
fn entry_of(rel: &[u8], stat: &Stat, xattrs: &[(String, Vec<u8>)], target: Option<&[u8]>) -> Entry {
    let acl = xattrs
        .iter()
        .find(|(n, _)| n == super::acl::ACCESS)
        .map(|(_, v)| v.as_slice());
    let image_mode = match acl {
        Some(v) => super::acl::image_mode(stat.mode, v).or(Some(stat.mode & 0o7700)),
        None => None,
    }
    .filter(|m| *m != stat.mode);
    Entry {
        path: PathField::new(std::ffi::OsStr::from_bytes(rel)),
        kind: stat.kind,
        ino: stat.ino,
        nlink: stat.nlink,
        mode: stat.mode,
        image_mode,
        uid: stat.uid,
        gid: stat.gid,
        size: if stat.kind == Kind::Dir { 0 } else { stat.size },
        mtime: stat.mtime,
        ctime: stat.ctime,
        atime: stat.atime,
        rdev: matches!(stat.kind, Kind::Char | Kind::Block).then_some(stat.rdev),
        target: target.map(manifest::hex),
        hash: None,
        link_to: None,
        xattrs: xattrs
            .iter()
            .map(|(n, v)| (n.clone(), manifest::hex(v)))
            .collect(),
        changed: false,
    }
}
