//! `reclaim pack`'s engine: a tree of small files into one verified squashfs archive, and the
//! originals removed only when proven packed. Plain options in, progress events and a typed
//! outcome or error out; it never prints and knows nothing of the command line.
//!
//! The protocol (each step a point where a `kill -9` may land):
//! 1. The tree is listed and read beneath its directory's fd (`source`: `openat2` without
//!    symlinks or other mounts, in parallel); what squashfs cannot hold (sockets) refuses the
//!    pack up front, by name.
//! 2. The archive is written under a temporary name beside its final one (`.NAME.partial-*`,
//!    `O_EXCL`, relative to its directory's verified fd, `flock`ed while written) by
//!    `tar2sqfs` from reclaim's own tar stream (`write`), with the manifest after the image.
//!    A crash here leaves the tree whole and a partial file the next run removes.
//! 3. The file is fsynced, then read back through `sqfs2tar` and compared with the manifest
//!    (`verify`): every entry, content by BLAKE3.
//! 4. Only then it is renamed to its final name (never replacing) and the directory fsynced:
//!    from here the archive under its final name is the record of the pack.
//! 5. The originals are removed by the removal engine (parallel, paced), each only if
//!    unchanged since it was read and, for a file, its bytes proven the archive's under a
//!    write lease (`unlink`). A crash here leaves every file at its path or in the archive;
//!    the same command again finds the archive, verifies it and finishes.
//!
//! An archive found under the final name is resumed from only if it is provably the caller's
//! own (`trust`), and the archive is written only where no one else may take it away. With
//! `mount`, the archive is mounted and checked before any original goes, and attached to the
//! packed directory only if nothing stayed (`mount`).

pub mod acl;
pub mod candidates;
pub mod guard;
pub mod manifest;
pub mod mount;
mod removal;
pub mod source;
pub mod tools;
pub mod trust;
pub mod unlink;
pub mod unpack;
pub mod verify;
pub mod write;

#[cfg(test)]
mod fuzz;

use removal::{no_leases, remove_originals};

use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;

use crate::sys::dirfd::{self, Ident};
use crate::sys::error::Failure;
use crate::sys::quote::{quote, PathField};
use crate::sys::safeopen;
use manifest::{Kind, Manifest};
pub use tools::Compressor;

/// What to pack, and how.
#[derive(Clone, Debug, Default)]
pub struct PackOptions {
    /// The directory to pack, as named.
    pub dir: PathBuf,
    /// The archive (default: beside the directory, `DIR.sqfs`).
    pub to: Option<PathBuf>,
    pub compressor: Compressor,
    /// Readers (default: the profile's workers for the directory's file system).
    pub threads: Option<usize>,
    /// Mount the archive on the directory (checked before any original goes; attached only if
    /// nothing stayed).
    pub mount: bool,
    /// Write and verify the archive, remove nothing.
    pub keep_originals: bool,
    /// Removal unpaced.
    pub fast: bool,
    /// Latency target of the removal's pacing (default: the profile decides; 20 ms if paced).
    pub max_latency: Option<Duration>,
    /// Unlinks per second at most.
    pub iops: Option<u64>,
    /// The file system class to assume instead of the detected one.
    pub profile: Option<crate::engine::profile::Class>,
}

/// Progress, as it happens.
#[derive(Clone, Debug)]
pub enum Event {
    /// The tree is listed: entries to pack.
    Listed { entries: u64 },
    /// Entries and bytes written into the archive so far.
    Packing { entries: u64, bytes: u64 },
    /// Entries and bytes read back and compared so far.
    Verifying { entries: u64, bytes: u64 },
    /// The archive is complete, verified and under its final name.
    Archived,
    /// Originals removed so far.
    Removing { files: u64, dirs: u64 },
    /// An archive of this directory was found: resuming with it.
    Resuming,
}

/// What a pack did.
#[derive(Debug, Default)]
pub struct PackOutcome {
    pub archive: PathBuf,
    /// The archive was already there (an earlier run's): verified again, removal finished.
    pub resumed: bool,
    /// The directory was already gone: nothing to do.
    pub already_done: bool,
    pub entries: u64,
    pub files: u64,
    /// Apparent bytes of the regular files packed.
    pub bytes: u64,
    pub archive_bytes: u64,
    pub compressor: String,
    pub removed_files: u64,
    pub removed_dirs: u64,
    /// Entries that stay where they are, and why (changed, new, unreadable).
    pub stayed: Vec<Failure>,
    /// A stop signal ended the removal: what is left is finished by the same command again.
    pub interrupted: Option<i32>,
    /// With `mount`: how and where the archive is mounted ...
    pub mounted: Option<mount::Mounted>,
    /// ... or why it is not (entries stayed, a stop signal).
    pub not_mounted: Option<String>,
    /// What only `reclaim unpack` restores exactly (a mount shows less): entries with
    /// sub-second or out-of-range times, with ACLs, with xattrs squashfs does not hold.
    pub subsecond: u64,
    pub acls: u64,
    pub other_xattrs: u64,
}

/// Why nothing was removed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// A bad argument (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The tree holds what the archive cannot: each path and why.
    #[error("{} entr{} squashfs cannot hold; nothing was packed", .0.len(), if .0.len() == 1 { "y" } else { "ies" })]
    Refused(Vec<(PathBuf, String)>),
    #[error("{}: {}", quote(.0), crate::sys::error::errno_text(*.1))]
    Os(PathBuf, Errno),
    #[error("{0}")]
    Tool(#[from] tools::ToolError),
    #[error("writing the archive: {0}")]
    Write(#[from] write::WriteError),
    #[error("the archive failed verification: {0}; it was removed and nothing else was touched")]
    Verify(#[from] verify::VerifyError),
    /// An archive of an earlier run that does not verify: it stays as it is.
    #[error("the archive {} failed verification: {}; it stays where it is, as it is", quote(.0), .1)]
    ResumeRefused(PathBuf, verify::VerifyError),
    /// An archive under the final name that cannot be proven the caller's own.
    #[error("{}: not trusted to resume from: {}; nothing was removed (move it away, or give another --to)", quote(.0), .1)]
    NotOurs(PathBuf, String),
    /// The archive would be where someone else could take it away.
    #[error("{}: {}; give --to in a directory of your own (nothing was written)", quote(.0), .1)]
    Placement(PathBuf, String),
    /// The directory is gone, and what has the archive's name does not say it was packed.
    #[error("{}: {}; {} {}", quote(.0), crate::sys::error::errno_text(Errno::NOENT), quote(.1), .2)]
    NotPacked(PathBuf, PathBuf, String),
    /// The archive is complete, but mounting it (asked for) failed: nothing was removed.
    #[error("the archive {} is complete and verified, but it cannot be mounted: {}; nothing was removed (without --mount the originals are removed; `reclaim unpack` restores a copy from it)", quote(.0), .1)]
    Mount(PathBuf, mount::CannotMount),
    #[error("{}: {}", quote(.0), .1)]
    Exists(PathBuf, String),
    #[error("another reclaim pack is writing {}", quote(.0))]
    Busy(PathBuf),
    /// Stopped before the archive was complete: the tree is whole, the partial file removed.
    #[error("interrupted before the archive was complete")]
    Interrupted(i32),
}

impl PackError {
    /// A usage error (exit 2) rather than a failure (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, PackError::Usage(_) | PackError::Exists(..))
    }
}

/// The directory to pack, resolved.
struct Place {
    display: PathBuf,
    parent: Arc<OwnedFd>,
    name: CString,
    ident: Ident,
}

/// The archive's place.
pub(crate) struct Target {
    display: PathBuf,
    parent: OwnedFd,
    name: CString,
}

fn abs(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Splits a path into its parent (opened, following symlinks as `rm` does for parents) and
/// its last component.
fn split(path: &Path) -> Result<(OwnedFd, CString), PackError> {
    let usage = |why: &str| PackError::Usage(format!("{}: {why}", quote(path)));
    let name = path
        .file_name()
        .filter(|n| *n != "." && *n != "..")
        .ok_or_else(|| usage("name a directory by its own name (not '.', '..' or '/')"))?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let fd =
        safeopen::open_dir_path_only(parent).map_err(|e| PackError::Os(parent.to_path_buf(), e))?;
    Ok((
        fd,
        CString::new(name.as_bytes()).map_err(|_| usage("a NUL in the name"))?,
    ))
}

fn resolve_dir(dir: &Path) -> Result<Place, PackError> {
    let display = abs(dir);
    let trimmed = PathBuf::from(OsStr::from_bytes(
        display
            .as_os_str()
            .as_bytes()
            .strip_suffix(b"/")
            .unwrap_or(display.as_os_str().as_bytes()),
    ));
    let (parent, name) = split(&trimmed)?;
    let st = rustix::fs::statat(&parent, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| PackError::Os(display.clone(), e))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => {}
        FileType::Symlink => {
            return Err(PackError::Usage(format!(
                "{}: a symbolic link; name the directory itself (links are never followed)",
                quote(&display)
            )))
        }
        _ => {
            return Err(PackError::Usage(format!(
                "{}: not a directory",
                quote(&display)
            )))
        }
    }
    let root = rustix::fs::stat("/").map_err(|e| PackError::Os("/".into(), e))?;
    if (st.st_dev, st.st_ino) == (root.st_dev, root.st_ino) {
        return Err(PackError::Usage("refusing to pack '/'".into()));
    }
    let up = rustix::fs::fstat(&parent).map_err(|e| PackError::Os(display.clone(), e))?;
    if up.st_dev != st.st_dev {
        return Err(PackError::Usage(format!(
            "{}: a mount point; pack a directory inside it",
            quote(&display)
        )));
    }
    Ok(Place {
        display: trimmed,
        parent: Arc::new(parent),
        name,
        ident: Ident {
            dev: st.st_dev,
            ino: st.st_ino,
        },
    })
}

fn resolve_target(o: &PackOptions, place: &Place) -> Result<Target, PackError> {
    let display = match &o.to {
        Some(t) => abs(t),
        None => {
            let mut s = place.display.as_os_str().to_owned();
            s.push(".sqfs");
            PathBuf::from(s)
        }
    };
    let (parent, name) = split(&display)?;
    // Only where no one else may take it away once the originals are gone (with --keep
    // nothing goes: anywhere).
    if !o.keep_originals {
        trust::placement(&parent).map_err(|w| PackError::Placement(display.clone(), w.0))?;
    }
    // Never inside the tree it holds: walk up from its directory.
    let mut fd =
        safeopen::open_dir_at_only(&parent, c".").map_err(|e| PackError::Os(display.clone(), e))?;
    for _ in 0..4096 {
        let st = rustix::fs::fstat(&fd).map_err(|e| PackError::Os(display.clone(), e))?;
        if (st.st_dev, st.st_ino) == (place.ident.dev, place.ident.ino) {
            return Err(PackError::Usage(format!(
                "{}: the archive cannot go inside the directory it packs",
                quote(&display)
            )));
        }
        let up = safeopen::open_dir_at_only(&fd, c"..")
            .map_err(|e| PackError::Os(display.clone(), e))?;
        let ust = rustix::fs::fstat(&up).map_err(|e| PackError::Os(display.clone(), e))?;
        if (ust.st_dev, ust.st_ino) == (st.st_dev, st.st_ino) {
            break;
        }
        fd = up;
    }
    Ok(Target {
        display,
        parent,
        name,
    })
}

/// Packs `o.dir` (or resumes an earlier pack of it); `on` sees the progress.
pub fn pack(o: &PackOptions, on: &(dyn Fn(Event) + Sync)) -> Result<PackOutcome, PackError> {
    let place = match resolve_dir(&o.dir) {
        Ok(p) => p,
        // Gone: done already if its archive says so.
        Err(PackError::Os(_, Errno::NOENT)) => return already_packed(o),
        Err(e) => return Err(e),
    };
    let target = resolve_target(o, &place)?;
    match existing(&target, &place)? {
        Some((file, size, m)) => {
            on(Event::Resuming);
            let mut out = outcome_of(&target.display, &m, size);
            out.resumed = true;
            verify::verify(&file, &m, &mut |n, b| {
                on(Event::Verifying {
                    entries: n,
                    bytes: b,
                })
            })
            .map_err(|e| match e {
                verify::VerifyError::Interrupted => stopped(),
                e => PackError::ResumeRefused(target.display.clone(), e),
            })?;
            on(Event::Archived);
            finish(o, &place, &target, (&file, &m), &mut out, on)?;
            Ok(out)
        }
        None => fresh(o, &place, &target, on),
    }
}

/// The archive is verified under its final name: the originals are removed (with `mount`:
/// the archive mounted and checked first, attached only if nothing stayed).
fn finish(
    o: &PackOptions,
    place: &Place,
    target: &Target,
    (file, m): (&OwnedFd, &Manifest),
    out: &mut PackOutcome,
    on: &(dyn Fn(Event) + Sync),
) -> Result<(), PackError> {
    if o.keep_originals {
        return Ok(());
    }
    // A file system without leases cannot prove any file unwritten: nothing goes, said once.
    if let Some(why) = no_leases(place, m) {
        out.stayed.push(Failure {
            path: place.display.clone(),
            reason: crate::sys::error::Reason::Kept(format!(
                "no original removed: {why}; the archive is complete"
            )),
        });
        if o.mount {
            out.not_mounted = mount::why_not_mounted(out);
        }
        return Ok(());
    }
    if !o.mount || !out.stayed.is_empty() {
        // What could not be packed stays: a mount would hide it.
        remove_originals(o, place, m, out, on, None);
        if o.mount {
            out.not_mounted = mount::why_not_mounted(out);
        }
        return Ok(());
    }
    let root = open_root(place)?;
    let mounting = mount::Mounting::start(file, &root, (&place.parent, &place.name), m)
        .map_err(|why| PackError::Mount(target.display.clone(), why))?;
    let under = mounting.removal_root(&root);
    remove_originals(o, place, m, out, on, under);
    mounting.finish(&root, out);
    Ok(())
}

/// The directory is gone: if its archive is there, provably the caller's own and a pack of
/// it, the pack is done. Never opened by path: a FIFO there is refused at once.
fn already_packed(o: &PackOptions) -> Result<PackOutcome, PackError> {
    let display = abs(&o.dir);
    let archive = o.to.clone().map(|t| abs(&t)).unwrap_or_else(|| {
        let mut s = display.as_os_str().to_owned();
        s.push(".sqfs");
        PathBuf::from(s)
    });
    let gone = || PackError::Os(display.clone(), Errno::NOENT);
    let not_done = |why: String| PackError::NotPacked(display.clone(), archive.clone(), why);
    let Ok((parent, name)) = split(&archive) else {
        return Err(gone());
    };
    let (fd, size) = match trust::open_own(&parent, &name) {
        Ok(Some(v)) => v,
        Ok(None) => return Err(gone()),
        Err(why) => return Err(not_done(format!("is not trusted: {}", why.0))),
    };
    let m = manifest::read(&fd).map_err(|e| not_done(format!("is not a pack of it ({e})")))?;
    if m.source.exact() != display {
        return Err(not_done(format!("is a pack of {}", m.source)));
    }
    let mut out = outcome_of(&archive, &m, size);
    out.already_done = true;
    Ok(out)
}

/// The archive already at the final name, if it is a pack of this directory and provably the
/// caller's own (`trust`): its fd, size and manifest.
fn existing(target: &Target, place: &Place) -> Result<Option<(OwnedFd, u64, Manifest)>, PackError> {
    let (fd, size) = match trust::open_own(&target.parent, &target.name) {
        Ok(Some(v)) => v,
        Ok(None) => return Ok(None),
        Err(why) => return Err(PackError::NotOurs(target.display.clone(), why.0)),
    };
    let m = match manifest::read(&fd) {
        Ok(m) => m,
        Err(manifest::TrailerError::Missing) => {
            return Err(PackError::Exists(
                target.display.clone(),
                format!(
                    "exists and is not a pack of {}; give another --to",
                    quote(&place.display)
                ),
            ))
        }
        Err(e) => return Err(PackError::NotOurs(target.display.clone(), e.to_string())),
    };
    if (m.dev, m.ino) != (place.ident.dev, place.ident.ino) || m.source.exact() != place.display {
        return Err(PackError::Exists(
            target.display.clone(),
            format!(
                "exists and is a pack of {} (another directory); give another --to",
                m.source
            ),
        ));
    }
    Ok(Some((fd, size, m)))
}

fn outcome_of(archive: &Path, m: &Manifest, archive_bytes: u64) -> PackOutcome {
    let mut out = PackOutcome {
        archive: archive.to_path_buf(),
        compressor: m.compressor.clone(),
        archive_bytes,
        ..PackOutcome::default()
    };
    for e in &m.entries {
        out.entries += 1;
        if e.kind == Kind::File {
            out.files += 1;
            if e.link_to.is_none() {
                out.bytes += e.size;
            }
        }
        if e.mtime.1 != 0 || e.mtime.0 != write::image_time(e.mtime) as i64 {
            out.subsecond += 1;
        }
        if e.xattrs
            .iter()
            .any(|(n, _)| n.starts_with("system.posix_acl_"))
        {
            out.acls += 1;
        }
        if e.xattrs
            .iter()
            .any(|(n, _)| !manifest::in_image(n) && !n.starts_with("system.posix_acl_"))
        {
            out.other_xattrs += 1;
        }
    }
    out
}

/// How long a partial file's lock is waited for before another pack is said to be writing:
/// a pack killed with -9 leaves its `tar2sqfs` holding it until that reads the end of its
/// input and exits (a rerun right after the kill found it held: `pack::kill_9_anywhere_*`).
const HELD_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// A partial file of an earlier run that no process holds any more (its `flock` is free, or
/// freed within `HELD_WAIT`) and that belongs to us: removed. One that stays held: another
/// pack is writing.
fn clear_partials(target: &Target, prefix: &[u8]) -> Result<(), PackError> {
    let dir = safeopen::reopen_dir(&target.parent)
        .map_err(|e| PackError::Os(target.display.clone(), e))?;
    let mut names = Vec::new();
    let mut buf = dirfd::DirBuf::new(64 << 10);
    dirfd::for_each_entry(&dir, &mut buf, |n, _, _| {
        if n.to_bytes().starts_with(prefix) {
            names.push(n.to_owned());
        }
    })
    .map_err(|e| PackError::Os(target.display.clone(), e))?;
    let me = rustix::process::geteuid().as_raw();
    for n in names {
        let Ok((fd, st)) = safeopen::open_file_at(&dir, &n, safeopen::Access::Read) else {
            continue;
        };
        if st.st_uid != me {
            continue;
        }
        match lock_within(&fd, HELD_WAIT) {
            Ok(()) => {
                let _ = safeopen::unlink_at(&dir, &n);
            }
            Err(_) => return Err(PackError::Busy(target.display.clone())),
        }
    }
    Ok(())
}

/// Takes `fd`'s exclusive `flock`, trying again for up to `wait`.
fn lock_within(fd: &OwnedFd, wait: std::time::Duration) -> rustix::io::Result<()> {
    let t0 = std::time::Instant::now();
    loop {
        match rustix::fs::flock(fd, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Err(_) if t0.elapsed() < wait => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            r => return r,
        }
    }
}

/// The partial file: removed on every way out but success.
struct Partial<'a> {
    parent: &'a OwnedFd,
    name: CString,
    file: std::fs::File,
    done: bool,
}

impl Drop for Partial<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = safeopen::unlink_at(self.parent, &self.name);
        }
    }
}

/// The stop signal that ended the run, as an error.
fn stopped() -> PackError {
    PackError::Interrupted(crate::sys::interrupt::requested().unwrap_or(libc::SIGINT))
}

fn fresh(
    o: &PackOptions,
    place: &Place,
    target: &Target,
    on: &(dyn Fn(Event) + Sync),
) -> Result<PackOutcome, PackError> {
    let mut prefix = b".".to_vec();
    prefix.extend_from_slice(target.name.as_bytes());
    prefix.extend_from_slice(b".partial-");
    clear_partials(target, &prefix)?;
    // The tree first: what it cannot hold is said before anything is written.
    let (root, listing) = list_tree(place)?;
    on(Event::Listed {
        entries: listing.items.len() as u64,
    });
    let mut partial = open_partial(target, prefix)?;
    let (entries, stayed) = write_archive(o, place, &root, &listing, &partial, on)?;
    let m = Manifest {
        version: 1,
        source: PathField::new(&place.display),
        dev: place.ident.dev,
        ino: place.ident.ino,
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
        compressor: match o.compressor {
            Compressor::Zstd(l) => format!("zstd level {l}"),
            c => c.name().to_string(),
        },
        entries,
    };
    let m = seal(target, &mut partial, &m, on)?;
    on(Event::Archived);
    let size = rustix::fs::fstat(&partial.file).map_or(0, |st| st.st_size as u64);
    let mut out = outcome_of(&target.display, &m, size);
    out.stayed = stayed;
    let file = OwnedFd::from(partial.file.try_clone().map_err(|e| {
        PackError::Os(
            target.display.clone(),
            Errno::from_io_error(&e).unwrap_or(Errno::IO),
        )
    })?);
    finish(o, place, target, (&file, &m), &mut out, on)?;
    Ok(out)
}

/// Opens the directory to pack (still the one checked) and lists it; what squashfs cannot
/// hold refuses the pack, by name.
fn list_tree(place: &Place) -> Result<(OwnedFd, source::Listing), PackError> {
    let root = open_root(place)?;
    let show = |rel: &[u8]| place.display.join(OsStr::from_bytes(rel));
    let listing = source::walk(&root).map_err(|e| match e {
        source::WalkError::Interrupted => stopped(),
        source::WalkError::Os(rel, e) => PackError::Os(show(&rel), e),
        source::WalkError::Mount(rel) => PackError::Refused(vec![(
            show(&rel),
            "a mount point of another file system: pack stays on one file system (pack it on its own)".into(),
        )]),
    })?;
    if !listing.refused.is_empty() {
        return Err(PackError::Refused(
            listing
                .refused
                .iter()
                .map(|(r, why)| (show(r), why.clone()))
                .collect(),
        ));
    }
    Ok((root, listing))
}

/// Opens the directory to pack, checked to be the one resolved.
fn open_root(place: &Place) -> Result<OwnedFd, PackError> {
    let root = dirfd::open_dir_at(&*place.parent, place.name.as_c_str())
        .map_err(|e| PackError::Os(place.display.clone(), e))?;
    let st = dirfd::fstat(&root).map_err(|e| PackError::Os(place.display.clone(), e))?;
    if st.ident != place.ident {
        return Err(PackError::Os(place.display.clone(), Errno::STALE));
    }
    Ok(root)
}

/// Creates the partial archive beside the final one: `prefix` and a unique tail, `O_EXCL`,
/// locked while it is written.
fn open_partial(target: &Target, prefix: Vec<u8>) -> Result<Partial<'_>, PackError> {
    let mut tmp = prefix;
    tmp.extend_from_slice(format!("{}-{:08x}", std::process::id(), rand32()).as_bytes());
    let tmp = CString::new(tmp).expect("no NUL");
    let fd =
        safeopen::create_at(&target.parent, &tmp, OFlags::RDWR, 0o600, false).map_err(|e| {
            PackError::Os(
                target
                    .display
                    .with_file_name(OsStr::from_bytes(tmp.as_bytes())),
                e,
            )
        })?;
    rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(|_| PackError::Busy(target.display.clone()))?;
    Ok(Partial {
        parent: &target.parent,
        name: tmp,
        file: std::fs::File::from(fd),
        done: false,
    })
}

/// Reads every listed entry (in parallel, in order) into `tar2sqfs` writing `partial`: the
/// manifest's entries, and the entries that could not be read (they stay).
fn write_archive(
    o: &PackOptions,
    place: &Place,
    root: &OwnedFd,
    listing: &source::Listing,
    partial: &Partial<'_>,
    on: &(dyn Fn(Event) + Sync),
) -> Result<(Vec<manifest::Entry>, Vec<Failure>), PackError> {
    let show = |rel: &[u8]| place.display.join(OsStr::from_bytes(rel));
    let profile = crate::engine::profile::Profile::asked(o.profile, root);
    let readers = o.threads.unwrap_or(profile.workers).max(1);
    let jobs = crate::engine::profile::cpus();
    let mut child = tools::tar2sqfs(partial.file.as_fd(), o.compressor, jobs)?;
    let mut writer = write::Writer::new(&mut child);
    let mut stayed: Vec<Failure> = Vec::new();
    let mut refused: Vec<(PathBuf, String)> = Vec::new();
    let mut n = 0u64;
    let window = (readers * 8).max(64);
    let r = source::read_in_order(root, &listing.items, readers, window, |i, got| {
        let rel = &listing.items[i].rel;
        match got {
            source::Got::Read(r) => writer.add(*r)?,
            source::Got::Gone => {}
            source::Got::Refused(why) => refused.push((show(rel), why)),
            source::Got::Failed(e) => stayed.push(Failure {
                path: show(rel),
                reason: crate::sys::error::Reason::Kept(format!(
                    "not packed: {}",
                    crate::sys::error::errno_text(e)
                )),
            }),
        }
        n += 1;
        if n.is_multiple_of(1024) {
            on(Event::Packing {
                entries: n,
                bytes: writer.bytes,
            });
        }
        Ok::<(), write::WriteError>(())
    });
    if r.is_err() || crate::sys::interrupt::stopping() {
        let _ = child.kill();
        let _ = tools::wait("tar2sqfs", child);
        return Err(r.err().map_or_else(stopped, PackError::from));
    }
    on(Event::Packing {
        entries: n,
        bytes: writer.bytes,
    });
    let written = writer.finish();
    let waited = tools::wait("tar2sqfs", child);
    let entries = written?;
    waited?;
    if !refused.is_empty() {
        return Err(PackError::Refused(refused));
    }
    if !entries.first().is_some_and(|e| e.path.path.is_empty()) {
        return Err(PackError::Os(place.display.clone(), Errno::NOENT));
    }
    Ok((entries, stayed))
}

/// Appends the manifest `m` to the written image, fsyncs it, reads it back and compares every
/// entry, then gives it its final name (never over another file) and fsyncs the directory:
/// the manifest as read back from the disk.
fn seal(
    target: &Target,
    partial: &mut Partial<'_>,
    m: &Manifest,
    on: &(dyn Fn(Event) + Sync),
) -> Result<Manifest, PackError> {
    let tmp_display = target
        .display
        .with_file_name(OsStr::from_bytes(partial.name.as_bytes()));
    let io = |e: std::io::Error| {
        PackError::Os(
            tmp_display.clone(),
            Errno::from_io_error(&e).unwrap_or(Errno::IO),
        )
    };
    manifest::append(&partial.file, m).map_err(io)?;
    partial.file.sync_all().map_err(io)?;
    if crate::sys::interrupt::stopping() {
        return Err(stopped());
    }
    // Read back what is on disk: the trailer, then every entry.
    let m = manifest::read(&partial.file)
        .map_err(|e| PackError::Verify(verify::VerifyError::Read(format!("the manifest: {e}"))))?;
    verify::verify(&partial.file, &m, &mut |n, b| {
        on(Event::Verifying {
            entries: n,
            bytes: b,
        })
    })
    .map_err(|e| match e {
        verify::VerifyError::Interrupted => stopped(),
        e => PackError::Verify(e),
    })?;
    if crate::sys::interrupt::stopping() {
        return Err(stopped());
    }
    crate::sys::rename::noreplace(
        &target.parent,
        partial.name.as_c_str(),
        &target.parent,
        target.name.as_c_str(),
        crate::sys::rename::Into::Shared,
    )
    .map_err(|e| match e {
        Errno::EXIST => PackError::Exists(
            target.display.clone(),
            "appeared while packing; nothing was removed".into(),
        ),
        e => PackError::Os(target.display.clone(), e),
    })?;
    partial.done = true;
    let dir = safeopen::reopen_dir(&target.parent)
        .map_err(|e| PackError::Os(target.display.clone(), e))?;
    rustix::fs::fsync(&dir).map_err(|e| PackError::Os(target.display.clone(), e))?;
    Ok(m)
}

fn rand32() -> u32 {
    let mut b = [0u8; 4];
    let _ = rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty());
    u32::from_le_bytes(b)
}
