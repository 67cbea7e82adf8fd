//! `reclaim scan --export FILE`: the scanned tree in ncdu's JSON export format (`ncdu -o`,
//! format 1.2), which ncdu (`-f`), gdu and dua load for browsing later.
//!
//! Built as the walk goes: each batch of a directory's entries is serialized as it is statted
//! and appended to an unnamed spill file (`O_TMPFILE`) beside FILE; memory holds one small
//! record per directory (its own fields and where its entries lie in the spill file), never
//! the entries themselves. Once the walk is over, the records are walked once to copy the
//! pieces into a new file under a random name (`O_CREAT|O_EXCL|O_NOFOLLOW`) in FILE's
//! directory, which is fsynced and renamed over FILE: a symlink at FILE is replaced, never
//! followed, and FILE is either the old one or the complete export. FILE's directory must not
//! be inside the scanned tree (the export would change what it describes). It never writes
//! anywhere else and never reads what it did not write.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::sys::dirfd::{self, Facts, Ident};
use crate::sys::error::errno_text;

/// Why there is no export.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot export to {}: {why}", crate::sys::quote::quote(.file))]
    Refused { file: PathBuf, why: String },
    #[error("cannot export to {}: {}", crate::sys::quote::quote(.file), errno_text(*.errno))]
    Os { file: PathBuf, errno: Errno },
}

/// One directory of the export: its own fields, the pieces of the spill file that hold its
/// non-directory entries (each starting with a comma), and its subdirectories.
#[derive(Default, Debug)]
pub struct DirRecord {
    name: Vec<u8>,
    asize: u64,
    dsize: u64,
    ino: u64,
    /// Set where it differs from the parent's (and on the root).
    dev: Option<u64>,
    read_error: bool,
    pieces: Vec<(u64, u64)>,
    children: Vec<DirRecord>,
}

/// The export being built.
pub struct Export {
    file: PathBuf,
    dir: OwnedFd,
    name: CString,
    spill: Mutex<(File, u64)>,
    root: Mutex<Option<DirRecord>>,
}

impl Export {
    /// Checks that FILE can be written outside the scanned trees (`trees`: their device and
    /// inode) and opens the spill file beside it.
    pub fn prepare(file: &Path, trees: &[Ident]) -> Result<Export, ExportError> {
        let refuse = |why: &str| ExportError::Refused {
            file: file.to_path_buf(),
            why: why.into(),
        };
        let os = |errno| ExportError::Os {
            file: file.to_path_buf(),
            errno,
        };
        let Some(name) = file.file_name() else {
            return Err(refuse("it names no file"));
        };
        let name = CString::new(name.as_bytes()).map_err(|_| os(Errno::INVAL))?;
        let parent = match file.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = dirfd::open_dir_path(parent).map_err(os)?;
        if !super::estimate::outside(&dir, trees) {
            return Err(refuse(
                "it is inside the scanned tree (the export would change what it describes)",
            ));
        }
        match dirfd::lstat_at(&dir, &name) {
            Ok(st) if st.file_type == rustix::fs::FileType::Directory => {
                return Err(os(Errno::ISDIR))
            }
            _ => {}
        }
        let spill =
            crate::sys::safeopen::create_unnamed_in(&dir, OFlags::RDWR, 0o600).map_err(os)?;
        Ok(Export {
            file: file.to_path_buf(),
            dir,
            name,
            spill: Mutex::new((File::from(spill), 0)),
            root: Mutex::new(None),
        })
    }

    /// Appends serialized entries to the spill file; where they lie, or None (an error:
    /// remembered, reported by `finish`).
    pub fn spill(&self, bytes: &[u8]) -> Option<(u64, u64)> {
        if bytes.is_empty() {
            return None;
        }
        let mut s = self.spill.lock().expect("spill lock");
        let at = s.1;
        if s.0.write_all(bytes).is_err() {
            // A failed write leaves the offset unknown: every later piece fails too.
            s.1 = u64::MAX;
            return None;
        }
        s.1 = at.saturating_add(bytes.len() as u64);
        (at != u64::MAX).then_some((at, bytes.len() as u64))
    }

    /// The root directory is finished: the tree is complete.
    pub fn set_root(&self, rec: DirRecord) {
        *self.root.lock().expect("root lock") = Some(rec);
    }

    /// Writes FILE from the records and the spill file.
    pub fn finish(self) -> Result<PathBuf, ExportError> {
        let os = |errno| ExportError::Os {
            file: self.file.clone(),
            errno,
        };
        let (mut spill, end) = self.spill.into_inner().expect("spill lock");
        if end == u64::MAX {
            return Err(os(Errno::IO));
        }
        let Some(root) = self.root.into_inner().expect("root lock") else {
            return Err(ExportError::Refused {
                file: self.file.clone(),
                why: "the scan was not finished".into(),
            });
        };
        let tmp = CString::new(format!(
            ".{}.{}.tmp",
            String::from_utf8_lossy(self.name.as_bytes()),
            crate::trash::safefile::random_hex(8)
        ))
        .expect("no NUL in a temp name");
        let fd = crate::sys::safeopen::create_at(&self.dir, &tmp, OFlags::WRONLY, 0o644, false)
            .map_err(os)?;
        let written = (|| -> std::io::Result<()> {
            let mut out = BufWriter::with_capacity(1 << 16, File::from(fd));
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            writeln!(
                out,
                "[1,2,{{\"progname\":\"reclaim\",\"progver\":\"{}\",\"timestamp\":{now}}},",
                env!("CARGO_PKG_VERSION")
            )?;
            write_dir(&mut out, &mut spill, &root)?;
            out.write_all(b"]\n")?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()
        })();
        let done = written
            .map_err(|e| os(Errno::from_io_error(&e).unwrap_or(Errno::IO)))
            .and_then(|()| {
                crate::sys::safeopen::rename::plain(&self.dir, &tmp, &self.dir, &self.name)
                    .map_err(os)
            });
        if done.is_err() {
            let _ = crate::sys::safeopen::unlink_at(&self.dir, &tmp);
        } else {
            let _ = rustix::fs::fsync(&self.dir);
        }
        done.map(|()| self.file.clone())
    }
}

/// Writes one directory: `[{its fields},entries...,subdirectories...]`. Recursion depth is
/// the tree's depth; deep trees get a thread with a large stack from the caller.
fn write_dir(out: &mut impl Write, spill: &mut File, d: &DirRecord) -> std::io::Result<()> {
    out.write_all(b"[{\"name\":")?;
    string(out, &d.name)?;
    write!(out, ",\"asize\":{},\"dsize\":{}", d.asize, d.dsize)?;
    if let Some(dev) = d.dev {
        write!(out, ",\"dev\":{dev}")?;
    }
    write!(out, ",\"ino\":{}", d.ino)?;
    if d.read_error {
        out.write_all(b",\"read_error\":true")?;
    }
    out.write_all(b"}")?;
    for &(at, len) in &d.pieces {
        spill.seek(SeekFrom::Start(at))?;
        let copied = std::io::copy(&mut (&mut *spill).take(len), out)?;
        if copied != len {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    for c in &d.children {
        out.write_all(b",\n")?;
        write_dir(out, spill, c)?;
    }
    out.write_all(b"]")
}

/// A name as a JSON string the way ncdu writes them: `"` and `\` escaped, control bytes as
/// `\u00XX`, every other byte (a non-UTF-8 one too) as it is.
pub fn string(out: &mut impl Write, name: &[u8]) -> std::io::Result<()> {
    out.write_all(b"\"")?;
    for &b in name {
        match b {
            b'"' => out.write_all(b"\\\"")?,
            b'\\' => out.write_all(b"\\\\")?,
            0..=0x1f | 0x7f => write!(out, "\\u{b:04x}")?,
            _ => out.write_all(&[b])?,
        }
    }
    out.write_all(b"\"")
}

/// A directory's record from its `statx` (`parent_dev`: its parent's device, None at a root).
pub fn dir_record(name: &[u8], st: &Facts, parent_dev: Option<u64>) -> DirRecord {
    DirRecord {
        name: name.to_vec(),
        asize: st.size,
        dsize: st.allocated,
        ino: st.ident.ino,
        dev: (parent_dev != Some(st.ident.dev)).then_some(st.ident.dev),
        ..DirRecord::default()
    }
}

impl DirRecord {
    pub fn set_read_error(&mut self) {
        self.read_error = true;
    }
    pub fn add_piece(&mut self, piece: (u64, u64)) {
        self.pieces.push(piece);
    }
    pub fn add_child(&mut self, child: DirRecord) {
        self.children.push(child);
    }
}

/// Appends `,{entry}` for a non-directory to `out`.
pub fn entry(out: &mut Vec<u8>, name: &CStr, st: &Facts, dir_dev: u64) {
    out.extend_from_slice(b",\n{\"name\":");
    let _ = string(out, name.to_bytes());
    let _ = write!(out, ",\"asize\":{},\"dsize\":{}", st.size, st.allocated);
    if st.ident.dev != dir_dev {
        let _ = write!(out, ",\"dev\":{}", st.ident.dev);
    }
    let _ = write!(out, ",\"ino\":{}", st.ident.ino);
    if st.nlink > 1 {
        let _ = write!(out, ",\"hlnkc\":true,\"nlink\":{}", st.nlink);
    }
    if st.file_type != rustix::fs::FileType::RegularFile {
        out.extend_from_slice(b",\"notreg\":true");
    }
    out.push(b'}');
}

/// Appends `,{entry}` for an entry not counted: `why` is ncdu's `excluded` value
/// (`pattern`, `othfs`).
pub fn excluded(out: &mut Vec<u8>, name: &CStr, why: &str) {
    out.extend_from_slice(b",\n{\"name\":");
    let _ = string(out, name.to_bytes());
    let _ = write!(out, ",\"excluded\":\"{why}\"}}");
}

/// The display name of a root for the export: the PATH as given.
pub fn root_name(display: &Path) -> Vec<u8> {
    OsStr::as_bytes(display.as_os_str()).to_vec()
}
