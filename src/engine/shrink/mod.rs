//! Gentle removal of one large regular file: move it where an interruption cannot leave it
//! half at its own name (the user's trash, or a hidden name in its directory), prove nobody
//! else holds it (one link, and a write lease no other opener can coexist with), shrink it
//! from the end in paced steps (`ftruncate` + `fdatasync` on the verified fd), then unlink;
//! when the file system runs short of space meanwhile, the rest is unlinked at once.
//! It never truncates through a path, a file with other links, or a file another process has
//! open: those are unlinked whole, and the outcome says why. It never touches a name it did
//! not make: hidden names carry a random part, so one made by someone else first never blocks
//! it and is never taken for its own.

pub mod layout;

use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{fdatasync, fsync, ftruncate};
use rustix::io::Errno;

use crate::engine::pace::{PaceReport, Pacer, Pacing};
use crate::sys::dirfd::{self, Facts};
use crate::sys::error::Reason;
use crate::sys::rename::{noreplace, Into};
use crate::trash::hide::HideOptions;
use crate::trash::Trash;
use layout::{Extent, Layout, Mapping};

/// Hidden names of files being shrunk in their own directory:
/// `.reclaim-shrink.<inode hex>.<random hex>`.
pub const HIDDEN_PREFIX: &str = ".reclaim-shrink.";

/// Files allocating less than this are unlinked at once: freeing one costs at most 16 ext3
/// indirect blocks (about what one paced step does) and usually one unit on ext4/xfs, while
/// checking it (open, lease, FIEMAP) made `rm --durable` of 1,000 16 MiB WAL segments 1.45x
/// unlink-all + one fsync with a 16 MiB threshold (bench/RESULTS.md).
pub const GENTLE_MIN_BYTES: u64 = 64 << 20;
/// Where a file was met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Named as an argument (or a trash entry of its own).
    Named,
    /// Inside a tree being removed.
    InTree,
}

/// Whether a file goes to the shrinker rather than a plain unlink (the one home of this
/// rule): a regular file allocating `GENTLE_MIN_BYTES` or more. In a tree, only one with a
/// single link (more links: unlinking frees nothing); a named one with more goes to the
/// shrinker, which unlinks it whole and says why.
pub fn candidate(facts: &Facts, found: Found) -> bool {
    candidate_of(facts.file_type, facts.allocated, facts.nlink, found)
}

/// `candidate` from the three facts it reads (a selection's own stat has them).
pub fn candidate_of(kind: rustix::fs::FileType, allocated: u64, nlink: u32, found: Found) -> bool {
    kind == rustix::fs::FileType::RegularFile
        && allocated >= GENTLE_MIN_BYTES
        && (found == Found::Named || nlink == 1)
}

/// A file whose whole removal costs at most this many metadata units is unlinked at once: a
/// few extents in up to four 128 MiB regions (a 16 MiB WAL segment that straddles a block
/// group boundary costs 2.003 units, and was paced when this was 2: bench/RESULTS.md).
const CHEAP_UNITS: f64 = 4.0;
/// The shrinker commits (fdatasync) its truncations at most this often.
const SYNC_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// Most bytes one step frees on a file system with online discard. ext4 discards in the commit
/// our `fdatasync` waits for, but xfs sends them after its log force returns and btrfs in the
/// transaction commit, so the probe sees their cost a step late: a step must not outgrow that
/// feedback (on xfs and btrfs four steps freed 2 GiB before the probe said anything).
const DISCARD_STEP_MAX: u64 = 8 * layout::DISCARD_SPAN;
/// First step, in metadata units (the controller grows it while nobody is hurt).
const INITIAL_UNITS: u64 = 4;

/// What happened to one file.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ShrinkOutcome {
    /// Bytes the file allocated when we started.
    pub allocated: u64,
    /// Shrink steps taken (0: unlinked at once).
    pub steps: u64,
    /// Why the file was unlinked without shrinking, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlinked_whole: Option<String>,
    /// Allocated bytes shared with other files or snapshots (reflinks, `cp --reflink`, btrfs
    /// snapshots): removing this file did not free them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_bytes: u64,
    /// A shrink that was stopped part way, and why (another process opened the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The file system ran short of space (under the floor of free space, or falling toward
    /// it): pacing yielded and the rest was unlinked at once, as `rm` frees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yielded: Option<crate::sys::space::Pressure>,
    /// A removal interrupted earlier, finished now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// The file system discards what it frees (mounted with online discard): freeing was
    /// priced by bytes as well as by layout (`layout::DISCARD_SPAN`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub online_discard: bool,
    /// Stopped by a signal before the end: what is left and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<Left>,
    /// What the pacing cost other I/O (probe latency before vs during, and its back-offs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<PaceReport>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ShrinkOutcome {
    /// Bytes removing the file gave back: what it allocated, less what it shares.
    pub fn freed(&self) -> u64 {
        self.allocated.saturating_sub(self.shared_bytes)
    }
}

/// One large file freed by the shrinker.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Gentle {
    #[serde(flatten)]
    pub path: crate::sys::quote::PathField,
    pub elapsed_s: f64,
    #[serde(flatten)]
    pub outcome: ShrinkOutcome,
}

/// What a stop signal left of a file being shrunk.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Left {
    /// Allocated bytes still held.
    pub bytes: u64,
    /// The trash and entry holding it, if it was shrunk inside the trash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Its hidden path, if it was shrunk in its own directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<crate::sys::quote::PathField>,
}

/// Progress callback: (bytes freed so far, bytes to free in all).
pub type OnProgress<'a> = &'a dyn Fn(u64, u64, Option<&Pacer>);

/// Where a large file waits while it is shrunk, so a `kill -9` or a stop signal never leaves it
/// partly freed at its own name.
pub enum Hiding<'a> {
    /// Its name is already private (a trash entry's `reaping`): shrink it where it is; a stop
    /// leaves it there for the next reaper.
    InPlace,
    /// Renamed to `.reclaim-shrink.<inode>.<random>` in its own directory. With `finish`, a
    /// first stop signal does not stop it (nothing else would ever free it; the caller says
    /// so), a second does; without, the first does.
    Renamed { finish: bool },
    /// Moved into the user's trash on its file system as a claimed entry (foreground
    /// `reclaim rm`): a stop leaves the rest there for a reaper. Falls back to `Renamed` where
    /// that move cannot be made.
    Trash {
        /// Finds (or makes) the trash, when it is needed.
        locate: &'a dyn Fn() -> Option<std::sync::Arc<Trash>>,
        original: &'a Path,
        opts: &'a HideOptions,
    },
}

/// Where the file is while it is shrunk.
enum Place {
    /// At `name` in the directory it was found in.
    Here(CString),
    /// In a trash entry (open and locked) as `reaping`.
    Entry {
        trash: PathBuf,
        trash_dir: OwnedFd,
        id: CString,
        entry: OwnedFd,
    },
}

/// Removes `name` in `dir`, a regular file with `facts` (from `lstat`), gently.
pub fn remove_file(
    dir: &OwnedFd,
    name: &CStr,
    facts: &Facts,
    pacing: &Pacing,
    hiding: &Hiding<'_>,
    on_progress: OnProgress<'_>,
) -> Result<ShrinkOutcome, Reason> {
    let mut out = ShrinkOutcome {
        allocated: facts.allocated,
        ..ShrinkOutcome::default()
    };
    let whole = |out: &mut ShrinkOutcome, why: String| -> Result<(), Reason> {
        out.unlinked_whole = Some(why);
        unlink(dir, name)
    };
    if !candidate(facts, Found::Named) {
        unlink(dir, name)?;
        return Ok(out);
    }
    let (fd, now) = match open_to_shrink(dir, name, facts)? {
        Opened::Shrink(fd, now) => (fd, now),
        Opened::Whole(why) => {
            whole(&mut out, why)?;
            return Ok(out);
        }
    };
    // Cheap to free (a few extents) or no pacing asked for: plain unlink, no hide, no fsync.
    let plan = Plan::read(&fd)?;
    out.shared_bytes = plan.layout.shared_bytes().min(out.allocated);
    out.online_discard = plan.layout.discard;
    // What is shared stays allocated for its other owners: shrinking would pace work that
    // frees nothing. Below the size worth pacing, it goes whole.
    if out.shared_bytes > 0 && out.freed() < GENTLE_MIN_BYTES {
        drop(fd);
        let why = format!(
            "{} of its extents are shared with other files or snapshots (reflinks): \
             removing it frees only {}",
            crate::sys::format::bytes(out.shared_bytes),
            crate::sys::format::bytes(out.freed())
        );
        whole(&mut out, why)?;
        return Ok(out);
    }
    if plan.total <= CHEAP_UNITS || pacing.is_fast() {
        drop(fd);
        unlink(dir, name)?;
        return Ok(out);
    }
    let place = hide(dir, name, facts, hiding)?;
    let (at_dir, at_name): (&OwnedFd, &CStr) = match &place {
        Place::Here(n) => (dir, n),
        Place::Entry { entry, .. } => (entry, crate::trash::REAPING),
    };
    // Whether a stop signal ends the shrinking now (else it goes on, until a second one).
    let finish = matches!(hiding, Hiding::Renamed { finish: true })
        || (matches!(hiding, Hiding::Trash { .. }) && matches!(place, Place::Here(_)));
    let stop = || {
        if finish {
            crate::sys::interrupt::count() >= 2
        } else {
            crate::sys::interrupt::stopping()
        }
    };
    // The user asked for the file to go: if a step fails (EIO, ...), stop shrinking and
    // unlink the rest whole rather than leave it hidden.
    let stepped = shrink(
        &fd,
        &plan,
        at_dir,
        now.ident.dev,
        pacing,
        &mut out,
        on_progress,
        &stop,
    );
    match stepped {
        Ok(true) => {}
        Ok(false) => {
            // Stopped by a signal: leave the rest where it is, and say where.
            let bytes = dirfd::fstat(&fd).map_or(0, |f| f.allocated);
            drop(fd);
            out.left = Some(left_at(&place, dir, bytes));
            return Ok(out);
        }
        Err(e) => {
            out.stopped = Some(format!(
                "shrinking failed after {} steps ({e}); unlinked the rest whole",
                out.steps
            ));
        }
    }
    drop(fd);
    unlink(at_dir, at_name)?;
    if let Place::Entry {
        trash_dir,
        id,
        entry,
        ..
    } = &place
    {
        // The entry's records and the entry: the trash's one teardown.
        let _ = crate::trash::entry::tear_down(trash_dir, id, entry, None);
    }
    Ok(out)
}

/// What opening a file to shrink it found.
enum Opened {
    /// Open for writing, with its facts now.
    Shrink(OwnedFd, Facts),
    /// Not to be shrunk: unlink it whole, for this reason.
    Whole(String),
}

/// Opens `name` to shrink it, checked: still the regular file `facts` describes, with one
/// link, and no lease of another process on it (ours taken, so nobody opens it meanwhile
/// unnoticed).
fn open_to_shrink(dir: &OwnedFd, name: &CStr, facts: &Facts) -> Result<Opened, Reason> {
    if let Some(pid) = lease_holder(facts) {
        return Ok(Opened::Whole(format!("process {pid} holds a lease on it")));
    }
    // O_NONBLOCK: a lease taken meanwhile makes open fail at once instead of waiting for the
    // lease-break timeout.
    use crate::sys::safeopen::{self, Access, Bad};
    let fd = match safeopen::open_file_at(dir, name, Access::Write) {
        Ok((fd, _)) => fd,
        Err(Bad::Missing) => return Err(Reason::Os(Errno::NOENT)),
        Err(Bad::NotRegular(_)) => return Err(Reason::Changed),
        Err(Bad::Os(Errno::WOULDBLOCK)) => {
            return Ok(Opened::Whole("another process holds a lease on it".into()))
        }
        Err(e) => return Ok(Opened::Whole(format!("cannot open it for writing ({e})"))),
    };
    let now = dirfd::fstat(&fd).map_err(Reason::Os)?;
    if now.ident != facts.ident || now.file_type != rustix::fs::FileType::RegularFile {
        return Err(Reason::Changed);
    }
    if now.nlink != 1 {
        return Ok(Opened::Whole(format!(
            "it has {} hard links (shrinking would empty the others)",
            now.nlink
        )));
    }
    if let Err(why) = crate::sys::lease::take_write(&fd) {
        return Ok(Opened::Whole(why.to_string()));
    }
    Ok(Opened::Shrink(fd, now))
}

/// Where a stop signal left a file being shrunk (`bytes` still allocated).
fn left_at(place: &Place, dir: &OwnedFd, bytes: u64) -> Left {
    match place {
        Place::Here(n) => Left {
            bytes,
            trash: None,
            entry: None,
            hidden: crate::sys::mounts::fd_path(dir)
                .map(|d| crate::sys::quote::PathField::new(d.join(crate::trash::meta::os(n)))),
        },
        Place::Entry { trash, id, .. } => Left {
            bytes,
            trash: Some(trash.to_string_lossy().into_owned()),
            entry: Some(id.to_string_lossy().into_owned()),
            hidden: None,
        },
    }
}

/// Moves the file where it waits while shrunk (see `Hiding`). On failure it is where it was.
fn hide(dir: &OwnedFd, name: &CStr, facts: &Facts, hiding: &Hiding<'_>) -> Result<Place, Reason> {
    match hiding {
        Hiding::InPlace => Ok(Place::Here(name.to_owned())),
        Hiding::Renamed { .. } => hide_renamed(dir, name, facts).map(Place::Here),
        Hiding::Trash {
            locate,
            original,
            opts,
        } => {
            let Some(trash) = locate() else {
                return hide_renamed(dir, name, facts).map(Place::Here);
            };
            match crate::trash::hide::hide_claimed(&trash, dir, name, original, facts, opts) {
                Ok((h, entry)) => {
                    // Durable before the first byte is freed: the entry holds it, claimed.
                    fsync(&entry)
                        .and_then(|()| fsync(dir))
                        .map_err(Reason::Os)?;
                    Ok(Place::Entry {
                        trash: trash.path.clone(),
                        trash_dir: crate::trash::reopen(&trash.dir).map_err(Reason::Os)?,
                        id: CString::new(h.id).expect("no NUL in an id"),
                        entry,
                    })
                }
                Err(Reason::Changed) => Err(Reason::Changed),
                // No room for an entry, another mount, no rename flags...: its own directory.
                Err(_) => hide_renamed(dir, name, facts).map(Place::Here),
            }
        }
    }
}

/// Renames the file to a fresh hidden name in its directory (a random part, so a name made by
/// someone else first is passed over, never used), checks it is still the same file, and
/// fsyncs the directory so that holds after a power loss too.
fn hide_renamed(dir: &OwnedFd, name: &CStr, facts: &Facts) -> Result<CString, Reason> {
    let mut tries = 0;
    let hidden = loop {
        let hidden = hidden_name(facts);
        match noreplace(dir, name, dir, &hidden, Into::Shared) {
            Ok(()) => break hidden,
            Err(Errno::EXIST) if tries < 16 => tries += 1,
            Err(e) => return Err(Reason::Os(e)),
        }
    };
    match dirfd::lstat_at(dir, &hidden) {
        Ok(f) if f.ident == facts.ident => {}
        _ => {
            // Someone swapped the name between our open and the rename: put it back.
            let _ = noreplace(dir, &hidden, dir, name, Into::Shared);
            return Err(Reason::Changed);
        }
    }
    fsync(dir).map_err(Reason::Os)?;
    Ok(hidden)
}

/// The file's layout and what freeing it costs, read once before the first step.
struct Plan {
    layout: Layout,
    size: u64,
    /// End of the last allocated block (beyond `size` when preallocated with --keep-size).
    alloc_end: u64,
    /// Cost of freeing it all, in metadata units.
    total: f64,
}

impl Plan {
    fn read(fd: &OwnedFd) -> Result<Plan, Reason> {
        let size = rustix::fs::fstat(fd).map_err(Reason::Os)?.st_size as u64;
        let layout = Layout::read(fd).unwrap_or_else(|_| Layout {
            // No FIEMAP (tmpfs, FUSE): price it by bytes, one unit per 4 MiB; no device under
            // it to discard.
            extents: vec![Extent {
                logical: 0,
                physical: 0,
                len: size,
                shared: false,
            }],
            mapping: Mapping::Blocks,
            discard: false,
        });
        // Blocks preallocated past the end of file (fallocate --keep-size) cost too; the
        // first step that cuts below the end frees them.
        let alloc_end = layout
            .extents
            .last()
            .map_or(0, |e| e.logical + e.len)
            .max(size);
        let total = layout.cost_below(alloc_end);
        Ok(Plan {
            layout,
            size,
            alloc_end,
            total,
        })
    }
}

/// Shrinks the file from the end in paced steps. `Ok(false)`: `stop` said to stop before the
/// end (the file keeps what is left).
#[allow(clippy::too_many_arguments)]
fn shrink(
    fd: &OwnedFd,
    plan: &Plan,
    dir: &OwnedFd,
    dev: u64,
    pacing: &Pacing,
    out: &mut ShrinkOutcome,
    on_progress: OnProgress<'_>,
    stop: &dyn Fn() -> bool,
) -> Result<bool, Reason> {
    let Plan {
        layout,
        size,
        alloc_end,
        total,
    } = plan;
    let (size, alloc_end, total) = (*size, *alloc_end, *total);
    let max_units = total.ceil() as u64 + 1;
    let mut pacer = Pacer::start(dir, dev, pacing.clone(), INITIAL_UNITS, max_units);
    let mut end = alloc_end;
    let mut allocated = out.allocated;
    let mut last_sync = std::time::Instant::now() - SYNC_EVERY;
    let btrfs_commits = layout.discard && crate::sys::btrfs::is_btrfs(fd);
    while end > 0 {
        if stop() {
            out.pace = Some(pacer.report());
            return Ok(false);
        }
        // Short of space: the rest goes at once (the caller unlinks it), never more slowly
        // than `rm` would free it.
        if let Some(p) = pacer.pressed(allocated) {
            out.yielded = Some(p);
            break;
        }
        // Right before every step: still ours alone? (A lease break or a new hard link
        // since the last step: stop shrinking, the rest goes with the unlink.)
        if let Some(why) = shared_now(fd)? {
            out.stopped = Some(format!(
                "{why} after {} steps; unlinked the rest whole",
                out.steps
            ));
            break;
        }
        let mut cut = layout.cut(end, pacer.step() as f64).min(size);
        if let Some(most) = pacer.max_step_bytes() {
            cut = cut.max(end.saturating_sub(most));
        }
        if layout.discard {
            cut = cut.max(end.saturating_sub(DISCARD_STEP_MAX));
        }
        let t = std::time::Instant::now();
        ftruncate(fd, cut).map_err(Reason::Os)?;
        let hold = t.elapsed();
        // Commit what was freed at most every SYNC_EVERY: often enough that no journal
        // commit carries much of our work, without a commit of our own per small step (on
        // an HDD each commit costs a few random writes, more than a small step itself).
        // With online discard, every step: the discards go out with the commit that freed
        // the blocks, so a commit that carried several steps would discard them at once.
        if layout.discard || last_sync.elapsed() >= SYNC_EVERY {
            fdatasync(fd).map_err(Reason::Os)?;
            // btrfs discards (discard=sync) in the transaction's commit: commit it, so this
            // step's discards go out now, in the step's time, not all at the next commit.
            if btrfs_commits {
                let _ = crate::sys::btrfs::commit(fd);
            }
            last_sync = std::time::Instant::now();
        }
        let step_time = t.elapsed();
        end = cut;
        out.steps += 1;
        let now = dirfd::fstat(fd).map_err(Reason::Os)?.allocated;
        let freed = allocated.saturating_sub(now);
        allocated = now;
        on_progress(out.allocated - allocated, out.allocated, Some(&pacer));
        if end == 0 {
            break;
        }
        let wait = pacer.after_step(freed, step_time, hold);
        sleep_watching(wait, fd, stop, &mut || pacer.pressed(allocated).is_some());
    }
    out.pace = Some(pacer.report());
    Ok(true)
}

/// Why the file is no longer ours alone, if it is not: another process opened it (our lease
/// is being broken) or it gained a hard link.
fn shared_now(fd: &OwnedFd) -> Result<Option<&'static str>, Reason> {
    if !crate::sys::lease::still_held(fd) {
        return Ok(Some("another process opened it"));
    }
    if dirfd::fstat(fd).map_err(Reason::Os)?.nlink != 1 {
        return Ok(Some("it gained a hard link"));
    }
    Ok(None)
}

/// Sleeps `wait`, waking early when the lease starts breaking, so an opener is not kept
/// waiting for a whole pause (it waits at most one step), when `stop` says so, or when the file
/// system is `pressed` for space.
fn sleep_watching(
    wait: std::time::Duration,
    fd: &OwnedFd,
    stop: &dyn Fn() -> bool,
    pressed: &mut dyn FnMut() -> bool,
) {
    const SLICE: std::time::Duration = std::time::Duration::from_millis(20);
    let until = std::time::Instant::now() + wait;
    loop {
        let now = std::time::Instant::now();
        if now >= until || !crate::sys::lease::still_held(fd) || stop() || pressed() {
            return;
        }
        std::thread::sleep((until - now).min(SLICE));
    }
}

fn unlink(dir: &OwnedFd, name: &CStr) -> Result<(), Reason> {
    crate::sys::safeopen::unlink_at(dir, name).map_err(Reason::Os)
}

fn hidden_name(facts: &Facts) -> CString {
    CString::new(format!(
        "{HIDDEN_PREFIX}{:x}.{}",
        facts.ident.ino,
        crate::trash::safefile::random_hex(8)
    ))
    .expect("no NUL in a hex name")
}

/// The pid holding a lease on the file, from `/proc/locks` (reading it breaks nothing;
/// opening the file would).
pub fn lease_holder(facts: &Facts) -> Option<u32> {
    crate::sys::locks::recent_holder(crate::sys::locks::Kind::Lease, facts.ident)
}

/// The large files of trees (`reclaim rm -r`, the reaper): each one the engine meets in a
/// small directory is removed here, paced, one at a time (two shrinking at once would each
/// measure the other as "other I/O"); the engine's other workers go on meanwhile.
#[derive(Debug)]
pub struct TreeFiles {
    pacing: Pacing,
    /// Inside a private tree (a trash entry's): shrink in place, no hidden name.
    in_place: bool,
    one_at_a_time: std::sync::Mutex<()>,
    /// Path, outcome and time of every file removed here.
    pub done: std::sync::Mutex<Vec<(std::path::PathBuf, ShrinkOutcome, std::time::Duration)>>,
}

impl TreeFiles {
    /// `in_place`: the tree is private (a trash entry's), so files are shrunk where they are;
    /// otherwise each goes to a hidden name in its directory first.
    pub fn new(pacing: Pacing, in_place: bool) -> Self {
        TreeFiles {
            pacing,
            in_place,
            one_at_a_time: std::sync::Mutex::new(()),
            done: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// What was removed here, taken out.
    pub fn take(&self) -> Vec<(std::path::PathBuf, ShrinkOutcome, std::time::Duration)> {
        std::mem::take(&mut *self.done.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl TreeFiles {
    /// Removes `name` in `dir` (`facts` from its `lstat`; `path` for messages) with the
    /// shrinker, in place of its unlink. Returns the bytes that gave back.
    pub fn remove(
        &self,
        dir: &OwnedFd,
        name: &CStr,
        facts: &Facts,
        path: &std::path::Path,
    ) -> Result<u64, Reason> {
        let _turn = self.one_at_a_time.lock().unwrap_or_else(|e| e.into_inner());
        let t = std::time::Instant::now();
        let hiding = if self.in_place {
            Hiding::InPlace
        } else {
            Hiding::Renamed { finish: false }
        };
        let outcome = remove_file(dir, name, facts, &self.pacing, &hiding, &|_, _, _| {})?;
        let freed = outcome.freed();
        self.done.lock().unwrap_or_else(|e| e.into_inner()).push((
            path.to_path_buf(),
            outcome,
            t.elapsed(),
        ));
        Ok(freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_names_have_a_random_part() {
        let f = dirfd::lstat_at(rustix::fs::CWD, c".").unwrap();
        let (a, b) = (hidden_name(&f), hidden_name(&f));
        assert_ne!(a, b);
        assert!(a.to_bytes().starts_with(HIDDEN_PREFIX.as_bytes()));
    }
}
