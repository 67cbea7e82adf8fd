//! GNU `rm` mode's removal: coreutils' order of work, its questions and its messages, as a
//! mode of the engine. A directory operand goes whole to the parallel engine (`whole.rs`:
//! `remove::remove_trees`, its failures put back in fts' order) whenever neither `-v`, a
//! prompt nor `--one-file-system` needs GNU's order; otherwise the operand is walked one entry
//! at a time in fts order (`walk.rs`).
//!
//! That walk is separate from the parallel one (`engine/walk/`) because what it must keep is
//! an order, not a speed: each question is asked before the next entry is touched, each `-v`
//! line and message comes where GNU's would, an empty directory goes when it is met, and a
//! declined or failed entry keeps every directory above it without a second message. The
//! parallel walk removes in whatever order its workers finish. Both unlink through the
//! engine's one unlink (`remove::unlink`) and reach every entry through its parent's fd,
//! never following a symlink.
//!
//! An operand's checks are `reclaim rm`'s where GNU's meaning is the same: `/` by identity
//! (`target::root_ident`, asked once before the walk). `--preserve-root=all` is GNU's own:
//! it compares the operand with `OPERAND/..` by path, as coreutils does (through a symlink to
//! a directory, `..` is the target's parent), where `reclaim rm` compares it with the parent
//! it opened; the differential tests hold both to their reference.
//!
//! It never prints and never reads the terminal: what GNU rm says and asks goes through
//! `Talk`, which the command layer (`cmd/gnu/`) words and puts on the terminal.

use rustix::io::Errno;

use crate::sys::dirfd::Facts;
use crate::sys::error::Reason;

pub mod walk;
mod whole;

pub use walk::Remover;

/// When to ask before removing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interactive {
    /// `-f`, `--interactive=never`: never ask.
    Never,
    /// The default (and `-I` after its one question): ask only about write-protected files
    /// when stdin is a terminal.
    Sometimes,
    /// `-i`, `--interactive[=always]`: ask about everything.
    Always,
}

/// What GNU rm was asked to do, as the walk needs it (the command layer parses the options).
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    pub interactive: Interactive,
    /// `-f`: a missing operand or entry is no error and nothing is asked.
    pub ignore_missing: bool,
    pub recursive: bool,
    /// `-d`: empty directories go too.
    pub remove_empty_dirs: bool,
    pub one_file_system: bool,
    pub preserve_root: bool,
    /// `--preserve-root=all`: an operand on another device than its parent is refused.
    pub preserve_all_root: bool,
    /// `-v`: every removal is told (`Talk::removed`).
    pub verbose: bool,
    /// Whether stdin is a terminal (or `---presume-input-tty`): write-protected entries are
    /// asked about only then.
    pub stdin_tty: bool,
}

/// How one removal step ended (coreutils' `RM_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Declined,
    Error,
}

impl Status {
    /// coreutils' `UPDATE_STATUS`: an error sticks; a refusal beats success.
    pub fn update(&mut self, new: Status) {
        if new == Status::Error || (new == Status::Declined && *self == Status::Ok) {
            *self = new;
        }
    }
}

/// Something GNU rm says on its error stream; paths as given on the command line and below.
#[derive(Clone, Copy, Debug)]
pub enum Said<'a> {
    /// `cannot remove PATH: REASON`.
    CannotRemove(&'a [u8], &'a Reason),
    /// The directory changed while it was walked (`traversal failed: PATH: ...`).
    TraversalFailed(&'a [u8]),
    /// An operand whose last component is `.` or `..`.
    DotOrDotDot(&'a [u8]),
    /// A recursive operand that is `/` (or resolves to it), and whether `--preserve-root` was
    /// in effect.
    Root { path: &'a [u8], preserve_root: bool },
    /// `--preserve-root=all`: the operand's parent (`PATH/..`) could not be stated.
    ParentUnstated { parent: &'a [u8], path: &'a [u8] },
    /// A directory on another device, skipped; `preserve_all_root`: refused as an operand by
    /// `--preserve-root=all` (else skipped by `--one-file-system`).
    OtherDevice {
        path: &'a [u8],
        preserve_all_root: bool,
    },
    /// A directory that is its own ancestor.
    Circular(&'a [u8]),
}

/// A question GNU rm asks before it goes on.
#[derive(Clone, Copy, Debug)]
pub enum Question<'a> {
    /// Remove a directory that cannot be read?
    Inaccessible(&'a [u8]),
    /// Descend into a directory (`protected`: write-protected)?
    Descend { path: &'a [u8], protected: bool },
    /// Remove this entry (`facts`: its `lstat`)?
    Remove {
        path: &'a [u8],
        protected: bool,
        facts: &'a Facts,
    },
}

/// The walk's voice: the command layer words what is said, asks on the terminal and prints
/// `-v`'s lines.
pub trait Talk {
    /// `-v`: `path` was removed (`dir`: a directory).
    fn removed(&mut self, path: &[u8], dir: bool);
    /// A message on the error stream.
    fn say(&mut self, said: Said<'_>);
    /// Asks `question` (after whatever was told so far is out); true for yes.
    fn ask(&mut self, question: Question<'_>) -> bool;
}

/// Errors that mean the file is not there (`rm -f` says nothing about them).
fn nonexistent(e: Errno) -> bool {
    matches!(
        e,
        Errno::ILSEQ | Errno::INVAL | Errno::NOENT | Errno::NOTDIR
    )
}
