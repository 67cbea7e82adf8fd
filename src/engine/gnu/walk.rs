//! GNU `rm`'s removal, step by step as coreutils' `remove.c` drives gnulib's fts (with
//! `FTS_CWDFD | FTS_NOSTAT | FTS_PHYSICAL`): arguments in the order given, a directory's
//! entries in the order the file system lists them (by inode number above 10,000 entries,
//! except on tmpfs, NFS and CIFS), each directory after its entries, empty directories as soon
//! as they are met, the same prompts, `-v` lines and messages, and a directory whose entry
//! could not be removed left alone without a second message.
//!
//! Unlike fts it never changes directory or follows a symlink: every entry is reached through
//! its parent's directory fd (an argument through the current directory, as `rm` does), and a
//! directory is entered only when the fd opened for it has the device and inode that `lstat`
//! saw. Directories deeper than the fd budget are reopened through `..` and verified.
//! What it says and asks goes through `Talk`; it never prints.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, CWD};
use rustix::io::Errno;

use super::{nonexistent, Interactive, Question, Rules, Said, Status, Talk};
use crate::engine::remove::unlink::{unlink, Entry, Paced};
use crate::engine::shrink::TreeFiles;
use crate::sys::dirfd::{self, DirBuf, Facts, Ident};
use crate::sys::error::Reason;

/// Where an entry is reached: a directory fd (or the current directory) and a name in it.
#[derive(Clone, Copy)]
struct At<'a> {
    dir: BorrowedFd<'a>,
    name: &'a CStr,
}

/// One directory being emptied.
struct Frame {
    /// The path as `rm` prints it.
    path: Vec<u8>,
    /// Its name in the parent frame's directory (the whole argument for an argument).
    name: CString,
    /// Open for reading; `None` when closed to stay within the fd budget.
    fd: Option<OwnedFd>,
    ident: Ident,
    entries: Vec<(CString, FileType)>,
    next: usize,
    /// An entry below could not be removed or was kept: do not ask about or remove this one.
    marked: bool,
}

/// What a directory's first visit decided.
enum Pre {
    Done(Status),
    /// Enter it: its entries, then the directory itself.
    Enter(Frame),
    /// Do not enter it (another device under `--one-file-system`, or a directory that
    /// cannot be read), but visit it after.
    Post {
        unread: Unread,
    },
}

/// Why a directory's last visit comes without its entries having been seen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unread {
    /// They were seen (or it was not to be entered: another device).
    No,
    /// It could not be opened or read (fts' `FTS_DNR` with this errno).
    Dnr(Errno),
    /// `-d` without `-r`, and the user may not read it: not judged by its listing (coreutils
    /// 9.2+): asked about as an inaccessible directory, and `rmdir` says whether it was empty.
    Inaccessible,
}

impl Unread {
    /// The errno of fts' `FTS_DNR`, if it was one.
    fn dnr(self) -> Option<Errno> {
        match self {
            Unread::Dnr(e) => Some(e),
            Unread::No | Unread::Inaccessible => None,
        }
    }
}

/// What `prompt` knows or may learn of a directory's entries (gnulib's `directory_status`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// Not asked for.
    Unasked,
    /// To be read: whether it is empty decides the question.
    Read,
    /// The user may not read it, and `-d` is in effect (coreutils 9.2+).
    Inaccessible,
}

/// A directory's listing as gnulib's `directory_status` judges it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum DirStatus {
    Empty,
    /// Has an entry, or could not be read for another reason than permission.
    NotEmpty,
    /// Opening it for reading was refused (`EACCES`).
    Unreadable,
}

/// Removes operands as GNU `rm` does; holds what every step needs.
pub struct Remover<'o, T: Talk> {
    o: &'o Rules,
    talk: T,
    /// Root cannot be write-protected out of anything (gnulib's `can_write_any_file`).
    superuser: bool,
    root: Option<Ident>,
    frames: Vec<Frame>,
    buf: DirBuf,
    /// Directory fds kept open at most (deeper ones are reopened through `..`).
    fd_budget: usize,
    open_fds: usize,
    /// The device of the argument being removed (`--one-file-system`).
    dev: u64,
    /// Hands whole directories to the parallel engine (`whole.rs`) when nothing needs GNU's
    /// order: no `-v`, no prompt, no `--one-file-system` (GNU's own walk looks at each mount
    /// point on its way).
    whole_trees: bool,
    /// Frees large regular files gently (paced shrinking, as `reclaim rm` does) instead of
    /// unlinking them at once.
    large: Arc<TreeFiles>,
}

impl<'o, T: Talk> Remover<'o, T> {
    /// A remover by `o`, talking through `talk`; `root`: the identity of `/` (asked for a
    /// recursive removal, which refuses it).
    pub fn new(o: &'o Rules, talk: T, root: Option<Ident>) -> Self {
        let nofile = crate::sys::limits::raise_nofile();
        let mut r = Remover {
            o,
            talk,
            superuser: rustix::process::geteuid().is_root(),
            root,
            frames: Vec::new(),
            buf: DirBuf::new(64 * 1024),
            fd_budget: nofile.saturating_sub(64).clamp(8, 1 << 16) as usize,
            open_fds: 0,
            dev: 0,
            whole_trees: false,
            // Paced by the latency other I/O sees, as a large file of `reclaim rm`.
            large: Arc::new(TreeFiles::new(
                crate::trash::meta::EntryPacing::default().pacing(),
                false,
            )),
        };
        r.whole_trees = !o.verbose && !o.one_file_system && !r.may_prompt();
        r
    }

    /// Whether any prompt could be shown (then order matters even without `-v`).
    pub fn may_prompt(&self) -> bool {
        match self.o.interactive {
            Interactive::Never => false,
            Interactive::Always => true,
            Interactive::Sometimes => self.o.stdin_tty && !self.o.ignore_missing && !self.superuser,
        }
    }

    /// Done: the voice, to flush what it holds.
    pub fn into_talk(self) -> T {
        self.talk
    }

    /// Removes one operand (an fts root) and everything below it.
    pub fn operand(&mut self, arg: &OsStr) -> Status {
        let path = crate::engine::target::trim_slashes(arg.as_bytes()).to_vec();
        let Ok(name) = CString::new(path.clone()) else {
            // A name with a NUL cannot come from argv.
            return Status::Error;
        };
        let at = At {
            dir: CWD,
            name: &name,
        };
        let mut status = self.visit(at, &path, true);
        if !self.frames.is_empty() {
            status.update(self.run());
        }
        status
    }

    /// Works through the stack until the operand's directory is done.
    fn run(&mut self) -> Status {
        let mut status = Status::Ok;
        while let Some(top) = self.frames.last_mut() {
            if crate::sys::interrupt::stopping() {
                // Ctrl-C: stop between two entries; what is left stays as it is.
                self.frames.clear();
                self.open_fds = 0;
                return Status::Error;
            }
            if top.next < top.entries.len() {
                let i = top.next;
                top.next += 1;
                let (name, kind) =
                    std::mem::replace(&mut top.entries[i], (CString::default(), FileType::Unknown));
                let s = self.child(&name, kind);
                status.update(s);
                continue;
            }
            let frame = self.pop();
            status.update(self.finish(frame));
        }
        status
    }

    /// One entry of the directory on top of the stack.
    fn child(&mut self, name: &CStr, kind: FileType) -> Status {
        let top = self.frames.last().expect("a directory is open");
        let path = join(&top.path, name.to_bytes());
        let fd = top.fd.as_ref().expect("the top directory is open");
        // SAFETY: the fd is owned by the top frame, which stays on the stack (and open: the
        // budget closes only outer frames) until this entry is done; `push` comes last.
        let dir = unsafe { BorrowedFd::borrow_raw(std::os::fd::AsRawFd::as_raw_fd(fd)) };
        let at = At { dir, name };
        // FTS_NOSTAT: a known non-directory type is trusted; directories and unknowns are stated.
        if kind != FileType::Directory && kind != FileType::Unknown {
            return self.leaf(at, &path, false, None);
        }
        self.visit(at, &path, false)
    }

    /// An entry whose type is to be learned by `lstat` (fts' `fts_stat`): a directory gets
    /// its first visit (and is entered, or visited again at once), anything else, or what
    /// cannot be stated, is removed as a non-directory.
    fn visit(&mut self, at: At<'_>, path: &[u8], top: bool) -> Status {
        match dirfd::lstat_at(at.dir, at.name) {
            Ok(f) if f.file_type == FileType::Directory => {
                if top {
                    self.dev = f.ident.dev;
                }
                match self.pre(at, path, &f, top) {
                    Pre::Done(s) => s,
                    Pre::Post { unread } => self.post(at, path, &f, top, unread),
                    Pre::Enter(frame) => {
                        self.push(frame);
                        Status::Ok
                    }
                }
            }
            Err(_) | Ok(_) => self.leaf(at, path, false, None),
        }
    }

    /// An operand that is no directory to remove recursively: `.` or `..`, `/` (or what
    /// resolves to it), a mount point under `--preserve-root=all`. Says why (and is true).
    fn top_refused(&mut self, path: &[u8], f: &Facts) -> bool {
        let o = self.o;
        if dot_or_dotdot(last_component(path)) {
            self.talk.say(Said::DotOrDotDot(path));
            return true;
        }
        if self.root == Some(f.ident) {
            self.talk.say(Said::Root {
                path,
                preserve_root: o.preserve_root,
            });
            return true;
        }
        if o.preserve_all_root {
            let mut parent = path.to_vec();
            if parent.last() != Some(&b'/') {
                parent.push(b'/');
            }
            parent.extend_from_slice(b"..");
            match CString::new(parent.clone())
                .ok()
                .and_then(|p| dirfd::lstat_at(CWD, &p).ok())
            {
                None => {
                    self.talk.say(Said::ParentUnstated {
                        parent: &parent,
                        path,
                    });
                    return true;
                }
                Some(p) if p.ident.dev != self.dev => {
                    self.talk.say(Said::OtherDevice {
                        path,
                        preserve_all_root: true,
                    });
                    return true;
                }
                Some(_) => {}
            }
        }
        false
    }

    /// A directory's first visit (fts' `FTS_D`).
    fn pre(&mut self, at: At<'_>, path: &[u8], f: &Facts, top: bool) -> Pre {
        let o = self.o;
        // `-d` alone: coreutils 9.2+ does not judge a directory the user may not read by its
        // listing; `rmdir` says whether it was empty.
        let status = (o.remove_empty_dirs && !o.recursive).then(|| dir_status(at));
        let removable =
            o.recursive || matches!(status, Some(DirStatus::Empty | DirStatus::Unreadable));
        if !removable {
            let e = if o.remove_empty_dirs {
                Errno::NOTEMPTY
            } else {
                Errno::ISDIR
            };
            self.cannot_remove(path, e);
            self.mark_ancestors();
            return Pre::Done(Status::Error);
        }
        if top && self.top_refused(path, f) {
            return Pre::Done(Status::Error);
        }
        if status == Some(DirStatus::Unreadable) {
            return Pre::Post {
                unread: Unread::Inaccessible,
            };
        }
        let (mut s, empty) = self.prompt(at, path, true, true, Listing::Read, false);
        if s == Status::Ok && empty == Some(true) {
            s = self.excise(at, path, true, None);
            if s == Status::Ok {
                return Pre::Done(Status::Ok);
            }
        }
        if s != Status::Ok {
            self.mark_ancestors();
            return Pre::Done(s);
        }
        if self.frames.iter().any(|fr| fr.ident == f.ident) {
            self.talk.say(Said::Circular(path));
            return Pre::Done(Status::Error);
        }
        if o.one_file_system && !top && f.ident.dev != self.dev {
            return Pre::Post { unread: Unread::No };
        }
        if self.whole_trees {
            // The whole tree, the directory itself included.
            let s = self.whole(at, path, f.ident);
            if s != Status::Ok {
                self.mark_ancestors();
            }
            return Pre::Done(s);
        }
        let fd = match open_for_reading(at) {
            Ok(fd) => fd,
            Err(e) => {
                return Pre::Post {
                    unread: Unread::Dnr(e),
                }
            }
        };
        match dirfd::fstat(&fd) {
            Ok(g) if g.ident == f.ident => {}
            Ok(_) | Err(_) => {
                // Replaced between lstat and open: not the directory that was asked about.
                self.talk.say(Said::TraversalFailed(path));
                self.mark_ancestors();
                return Pre::Done(Status::Error);
            }
        }
        let entries = match self.list(&fd) {
            Ok(e) => e,
            Err(e) => {
                return Pre::Post {
                    unread: Unread::Dnr(e),
                }
            }
        };
        Pre::Enter(Frame {
            path: path.to_vec(),
            name: at.name.to_owned(),
            fd: Some(fd),
            ident: f.ident,
            entries,
            next: 0,
            marked: false,
        })
    }

    /// A directory's last visit (fts' `FTS_DP`/`FTS_DNR`): ask, then remove it.
    fn post(&mut self, at: At<'_>, path: &[u8], f: &Facts, top: bool, unread: Unread) -> Status {
        self.post_marked(at, path, f.ident.dev, top, unread, false)
    }

    fn post_marked(
        &mut self,
        at: At<'_>,
        path: &[u8],
        dev: u64,
        top: bool,
        unread: Unread,
        marked: bool,
    ) -> Status {
        if unread == Unread::No && self.o.one_file_system && !top && dev != self.dev {
            self.mark_ancestors();
            self.talk.say(Said::OtherDevice {
                path,
                preserve_all_root: false,
            });
            return Status::Error;
        }
        // With `-d`, a directory that could not be read is asked about as inaccessible
        // (coreutils 9.2+), with `-r` too.
        let listing = match unread {
            Unread::Inaccessible => Listing::Inaccessible,
            Unread::Dnr(Errno::ACCESS) if self.o.remove_empty_dirs => Listing::Inaccessible,
            Unread::No | Unread::Dnr(_) => Listing::Unasked,
        };
        let (s, _) = self.prompt(at, path, true, false, listing, marked);
        if s != Status::Ok {
            return s;
        }
        self.excise(at, path, true, unread.dnr())
    }

    /// A frame whose entries are done: remove the directory from its parent.
    fn finish(&mut self, frame: Frame) -> Status {
        let top = self.frames.is_empty();
        let parent_fd = match self.frames.last() {
            Some(p) => p.fd.as_ref().map(|fd| fd.as_fd()),
            None => Some(CWD),
        };
        let Some(dir) = parent_fd else {
            // reopen() guarantees the parent is open before a child is popped.
            return Status::Error;
        };
        // SAFETY: the parent frame (or the current directory) owns the fd, and nothing below
        // closes or pops it.
        let dir = unsafe { BorrowedFd::borrow_raw(std::os::fd::AsRawFd::as_raw_fd(&dir)) };
        let at = At {
            dir,
            name: &frame.name,
        };
        self.post_marked(
            at,
            &frame.path,
            frame.ident.dev,
            top,
            Unread::No,
            frame.marked,
        )
    }

    /// A non-directory, or a directory that could not be read (fts' `FTS_F`, `FTS_NS`,
    /// `FTS_SL`, `FTS_DNR`, …).
    fn leaf(&mut self, at: At<'_>, path: &[u8], is_dir: bool, dnr: Option<Errno>) -> Status {
        let (s, _) = self.prompt(at, path, is_dir, false, Listing::Unasked, false);
        if s != Status::Ok {
            return s;
        }
        if !is_dir {
            if let Some(s) = self.gently(at, path) {
                return s;
            }
        }
        self.excise(at, path, is_dir, dnr)
    }

    /// A large regular file (an operand, or in a small directory, as the engine decides) is
    /// freed by the shrinker, paced; `None` for everything else (then it is unlinked).
    fn gently(&mut self, at: At<'_>, path: &[u8]) -> Option<Status> {
        let large = self.large.clone();
        let small_dir = self
            .frames
            .last()
            .is_none_or(|f| f.entries.len() <= crate::engine::remove::LARGE_FILE_DIR_MAX);
        if !small_dir {
            return None;
        }
        let facts = dirfd::lstat_at(at.dir, at.name).ok()?;
        if !crate::engine::shrink::candidate(&facts, crate::engine::shrink::Found::InTree) {
            return None;
        }
        // The shrinker hides the file under a name in its own directory first: an operand's
        // directory is opened by its path (as rm reaches it), a child's is the frame's fd.
        let (dir, name) = if self.frames.is_empty() {
            let bytes = at.name.to_bytes();
            let (parent, base) = match bytes.iter().rposition(|&b| b == b'/') {
                Some(i) => (&bytes[..i.max(1)], &bytes[i + 1..]),
                None => (&b"."[..], bytes),
            };
            let fd =
                crate::sys::dirfd::open_dir_path_only(Path::new(OsStr::from_bytes(parent))).ok()?;
            (fd, CString::new(base).ok()?)
        } else {
            (
                rustix::io::fcntl_dupfd_cloexec(at.dir, 3).ok()?,
                at.name.to_owned(),
            )
        };
        match large.remove(&dir, &name, &facts, Path::new(OsStr::from_bytes(path))) {
            Ok(_) => {
                if self.o.verbose {
                    self.talk.removed(path, false);
                }
                Some(Status::Ok)
            }
            Err(Reason::Os(e)) if self.o.ignore_missing && nonexistent(e) => Some(Status::Ok),
            Err(reason) => {
                self.talk.say(Said::CannotRemove(path, &reason));
                self.mark_ancestors();
                Some(Status::Error)
            }
        }
    }

    /// coreutils' `prompt`: whether to go on with `at` (descend into it when `descend`).
    /// Returns the decision and, when `listing` is `Read`, whether it is an empty directory.
    fn prompt(
        &mut self,
        at: At<'_>,
        path: &[u8],
        is_dir: bool,
        descend: bool,
        listing: Listing,
        marked: bool,
    ) -> (Status, Option<bool>) {
        let o = self.o;
        let status = (listing == Listing::Read).then(|| dir_status(at));
        let empty = status.map(|s| s == DirStatus::Empty);
        let is_empty = empty == Some(true);
        // Inaccessible: known so (`-d` alone), or found so now (`-rd`: then coreutils 9.2+ does
        // not ask to descend into what cannot be read, and asks about it on its last visit).
        let inaccessible = listing == Listing::Inaccessible
            || (o.remove_empty_dirs && status == Some(DirStatus::Unreadable));
        if marked {
            return (Status::Declined, empty);
        }
        if o.interactive == Interactive::Never {
            return (Status::Ok, empty);
        }
        let mut stat: Option<Result<Facts, Errno>> = None;
        let lstat = |stat: &mut Option<Result<Facts, Errno>>| {
            *stat.get_or_insert_with(|| dirfd::lstat_at(at.dir, at.name))
        };
        #[derive(PartialEq)]
        enum Ty {
            Unknown,
            Dir,
            Link,
        }
        let mut ty = if is_dir { Ty::Dir } else { Ty::Unknown };
        let always = o.interactive == Interactive::Always;
        // 1: write-protected, 0: not, -1: could not tell (errno in `wp_err`).
        let mut wp = 0i8;
        let mut wp_err = Errno::NOENT;
        if !o.ignore_missing && (always || self.o.stdin_tty) && !self.superuser {
            match write_protected(at, lstat(&mut stat)) {
                Ok(true) => wp = 1,
                Ok(false) => {}
                Err(e) => {
                    wp = -1;
                    wp_err = e;
                }
            }
        }
        if wp == 0 && !always {
            return (Status::Ok, empty);
        }
        if wp >= 0 && ty == Ty::Unknown {
            match lstat(&mut stat) {
                Ok(f) if f.file_type == FileType::Symlink => ty = Ty::Link,
                Ok(f) if f.file_type == FileType::Directory => ty = Ty::Dir,
                Ok(_) => {}
                Err(e) => {
                    wp = -1;
                    wp_err = e;
                }
            }
        }
        if wp >= 0 {
            match ty {
                Ty::Link if !always => return (Status::Ok, empty),
                Ty::Dir
                    if !(o.recursive || (o.remove_empty_dirs && (is_empty || inaccessible))) =>
                {
                    wp = -1;
                    wp_err = Errno::ISDIR;
                }
                _ => {}
            }
        }
        if wp < 0 {
            self.cannot_remove(path, wp_err);
            return (Status::Error, empty);
        }
        let protected = wp == 1;
        let facts;
        let question = if ty == Ty::Dir && inaccessible {
            if descend {
                // Cannot be entered: it is asked about on its last visit.
                return (Status::Ok, empty);
            }
            Question::Inaccessible(path)
        } else if ty == Ty::Dir && descend && !is_empty {
            Question::Descend { path, protected }
        } else {
            match lstat(&mut stat) {
                Err(e) => {
                    self.cannot_remove(path, e);
                    return (Status::Error, empty);
                }
                Ok(f) => {
                    facts = f;
                    Question::Remove {
                        path,
                        protected,
                        facts: &facts,
                    }
                }
            }
        };
        if self.talk.ask(question) {
            (Status::Ok, empty)
        } else {
            (Status::Declined, empty)
        }
    }

    /// coreutils' `excise`: unlink or rmdir, say so with `-v`, or say why not.
    fn excise(&mut self, at: At<'_>, path: &[u8], is_dir: bool, dnr: Option<Errno>) -> Status {
        // An operand is reached by its whole path from the current directory, an entry below
        // it by its one name in its directory.
        let entry = if at.dir.as_raw_fd() == CWD.as_raw_fd() {
            Entry::Operand { dir: is_dir }
        } else if is_dir {
            Entry::EmptyDir
        } else {
            Entry::NonDir
        };
        let mut e = match unlink(at.dir, at.name, entry, Paced::NONE) {
            Ok(()) => {
                if self.o.verbose {
                    self.talk.removed(path, is_dir);
                }
                return Status::Ok;
            }
            Err(e) => e,
        };
        if e == Errno::ROFS && dirfd::lstat_at(at.dir, at.name).err() == Some(Errno::NOENT) {
            e = Errno::NOENT;
        }
        if self.o.ignore_missing && nonexistent(e) {
            return Status::Ok;
        }
        if let Some(d) = dnr {
            if matches!(
                e,
                Errno::NOTEMPTY | Errno::ISDIR | Errno::NOTDIR | Errno::EXIST
            ) && matches!(d, Errno::PERM | Errno::ACCESS)
            {
                e = d;
            }
        }
        self.cannot_remove(path, e);
        self.mark_ancestors();
        Status::Error
    }

    /// Marks the directories being emptied, innermost first, up to one already marked.
    fn mark_ancestors(&mut self) {
        for f in self.frames.iter_mut().rev() {
            if f.marked {
                break;
            }
            f.marked = true;
        }
    }

    /// A directory's entries, in the order fts would visit them.
    fn list(&mut self, fd: &OwnedFd) -> Result<Vec<(CString, FileType)>, Errno> {
        let mut entries: Vec<(CString, FileType, u64)> = Vec::new();
        dirfd::for_each_entry(fd, &mut self.buf, |name, kind, ino| {
            entries.push((name.to_owned(), kind, ino));
        })?;
        if entries.len() > crate::engine::walk::BIG_DIR && inode_sort_helps(fd.as_fd()) {
            entries.sort_by_key(|e| e.2);
        }
        Ok(entries.into_iter().map(|(n, k, _)| (n, k)).collect())
    }

    fn push(&mut self, frame: Frame) {
        self.open_fds += 1;
        if self.open_fds > self.fd_budget {
            // Close the outermost open one; it is reopened through `..` on the way back.
            if let Some(f) = self.frames.iter_mut().find(|f| f.fd.is_some()) {
                f.fd = None;
                self.open_fds -= 1;
            }
        }
        self.frames.push(frame);
    }

    /// Takes the finished top frame off the stack, reopening its parent if it was closed.
    fn pop(&mut self) -> Frame {
        let frame = self.frames.pop().expect("a frame");
        if frame.fd.is_some() {
            self.open_fds -= 1;
        }
        if let (Some(parent), Some(fd)) = (self.frames.last_mut(), frame.fd.as_ref()) {
            if parent.fd.is_none() {
                let reopened = dirfd::open_dir_at(fd, c"..");
                match reopened {
                    Ok(p) if dirfd::fstat(&p).map(|g| g.ident).ok() == Some(parent.ident) => {
                        parent.fd = Some(p);
                        self.open_fds += 1;
                    }
                    _ => {
                        let path = parent.path.clone();
                        // Stop in this directory: it moved while it was being emptied.
                        parent.next = parent.entries.len();
                        self.talk.say(Said::TraversalFailed(&path));
                        self.mark_ancestors();
                    }
                }
            }
        }
        frame
    }

    fn cannot_remove(&mut self, path: &[u8], e: Errno) {
        self.talk.say(Said::CannotRemove(path, &Reason::Os(e)));
    }

    /// A directory operand removed whole by the parallel engine (`whole.rs`); its failures
    /// said in the order GNU rm would have met them.
    fn whole(&mut self, at: At<'_>, path: &[u8], ident: Ident) -> Status {
        match super::whole::remove(self.o, &self.large, at.dir, at.name, path, ident) {
            Ok(()) => Status::Ok,
            Err(failures) => {
                for f in &failures {
                    let p = f.path.as_os_str().as_bytes();
                    match &f.reason {
                        Reason::Changed => self.talk.say(Said::TraversalFailed(p)),
                        r => self.talk.say(Said::CannotRemove(p, r)),
                    }
                }
                Status::Error
            }
        }
    }
}

/// GNU's `write_protected_non_symlink`: whether `at` (its `lstat` in `facts`) may not be
/// written by this user (a symlink never is), or why that could not be told.
fn write_protected(at: At<'_>, facts: Result<Facts, Errno>) -> Result<bool, Errno> {
    if facts?.file_type == FileType::Symlink {
        return Ok(false);
    }
    match rustix::fs::accessat(
        at.dir,
        at.name,
        rustix::fs::Access::WRITE_OK,
        AtFlags::EACCESS,
    ) {
        Ok(()) => Ok(false),
        Err(Errno::ACCESS) => Ok(true),
        Err(e) => Err(e),
    }
}

/// A child's path: the parent's without one trailing slash, a slash, the name.
fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    let base = parent.strip_suffix(b"/").unwrap_or(parent);
    let mut p = Vec::with_capacity(base.len() + 1 + name.len());
    p.extend_from_slice(base);
    p.push(b'/');
    p.extend_from_slice(name);
    p
}

/// gnulib's `last_component`.
fn last_component(path: &[u8]) -> &[u8] {
    let mut i = 0;
    while i < path.len() && path[i] == b'/' {
        i += 1;
    }
    let mut base = i;
    let mut after_slash = false;
    for (j, &c) in path.iter().enumerate().skip(i) {
        if c == b'/' {
            after_slash = true;
        } else if after_slash {
            base = j;
            after_slash = false;
        }
    }
    &path[base..]
}

/// `.` or `..`, possibly followed by slashes.
fn dot_or_dotdot(c: &[u8]) -> bool {
    if c.first() != Some(&b'.') {
        return false;
    }
    let next = if c.get(1) == Some(&b'.') { 2 } else { 1 };
    c.get(next).is_none_or(|&b| b == b'/')
}

/// Opens a directory to read its entries (`O_NOFOLLOW`: a symlink in its place fails;
/// `O_DIRECTORY`: so does a FIFO or a terminal swapped in, before it is opened, so fts'
/// `O_NONBLOCK|O_NOCTTY` would add nothing).
fn open_for_reading(at: At<'_>) -> Result<OwnedFd, Errno> {
    dirfd::open_dir_at(at.dir, at.name)
}

/// gnulib's `directory_status`: opens it for reading and looks for an entry, reading only as
/// far as the first one (a directory of 25,000 names was read whole, a second time before its
/// removal read it again).
fn dir_status(at: At<'_>) -> DirStatus {
    let fd = match open_for_reading(at) {
        Ok(fd) => fd,
        Err(Errno::ACCESS) => return DirStatus::Unreadable,
        Err(_) => return DirStatus::NotEmpty,
    };
    let mut buf = DirBuf::new(4096);
    let mut any = false;
    loop {
        match dirfd::read_piece(&fd, &mut buf, 4096, |_, _, _| any = true) {
            Ok(true) if !any => continue,
            Ok(_) if !any => return DirStatus::Empty,
            _ => return DirStatus::NotEmpty,
        }
    }
}

/// fts sorts large directories by inode number except where that is known not to help.
pub(super) fn inode_sort_helps(fd: BorrowedFd<'_>) -> bool {
    const TMPFS: i64 = 0x0102_1994;
    const NFS: i64 = 0x6969;
    const CIFS: i64 = 0xFF53_4D42;
    match rustix::fs::fstatfs(fd) {
        #[allow(clippy::unnecessary_cast)]
        Ok(s) => !matches!(s.f_type as i64, TMPFS | NFS | CIFS),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_join_their_parent_with_one_slash() {
        assert_eq!(join(b"a/", b"x"), b"a/x");
        assert_eq!(join(b"a", b"x"), b"a/x");
    }

    #[test]
    fn dot_and_dotdot_as_gnulib_sees_them() {
        assert!(dot_or_dotdot(last_component(b".")));
        assert!(dot_or_dotdot(last_component(b"a/..")));
        assert!(dot_or_dotdot(last_component(b"a/./")));
        assert!(!dot_or_dotdot(last_component(b"a/.x")));
        assert!(!dot_or_dotdot(last_component(b"...")));
        assert_eq!(last_component(b"///"), b"");
    }
}
