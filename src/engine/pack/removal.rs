//! Step 5 of a pack: the originals removed by the removal engine (measured concurrency, the
//! governor's pacing) under the archive's condition (`unlink::Proven`), and the check that
//! the file system can prove a file unwritten at all (leases). Never removes what the
//! condition keeps; reports what stayed into the outcome.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::OFlags;

use super::manifest::{Kind, Manifest};
use super::{open_root, unlink, Event, PackOptions, PackOutcome, Place};
use crate::sys::safeopen;

/// Why no file of the packed tree can be proven unwritten, if the file system has no leases
/// (told by the first regular file the manifest names: a lease taken and given back).
pub(super) fn no_leases(place: &Place, m: &Manifest) -> Option<String> {
    let root = open_root(place).ok()?;
    let first = m.entries.iter().find(|e| e.kind == Kind::File)?;
    let fd = safeopen::open_beneath(&root, &first.rel(), OFlags::RDONLY).ok()?;
    match crate::sys::lease::take_write(&fd) {
        Ok(()) => {
            crate::sys::lease::release(&fd);
            None
        }
        Err(why @ crate::sys::lease::NoLease::Unsupported) => Some(why.to_string()),
        Err(_) => None,
    }
}

/// The removal's progress as the pack's events, every 200 ms while the removal runs.
struct Progress<'a>(&'a (dyn Fn(Event) + Sync));

impl crate::engine::remove::Sink for Progress<'_> {
    fn watch(&self, counters: &crate::engine::remove::Counters, done: &AtomicBool) {
        while !done.load(Ordering::Relaxed) {
            (self.0)(Event::Removing {
                files: counters.files.load(Ordering::Relaxed),
                dirs: counters.dirs.load(Ordering::Relaxed),
            });
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Removes the originals the archive proves, with the removal engine.
/// `under`: the directory as the removal reaches it when a mount covers its name (its own
/// fd, entry "."), else it is reached by name in its parent.
pub(super) fn remove_originals(
    o: &PackOptions,
    place: &Place,
    m: &Manifest,
    out: &mut PackOutcome,
    on: &(dyn Fn(Event) + Sync),
    under: Option<(Arc<OwnedFd>, CString)>,
) {
    use crate::engine::remove;
    // As `reclaim rm -r` removes a tree (`remove::Start`): on this thread until it proves
    // big, then the file system's profile, its measured workers (or `--threads`), the
    // governor where the profile or `--max-latency` asks for one, `--iops` from the first.
    let mut start = remove::Start::default();
    start.pace = crate::trash::meta::EntryPacing {
        fast: o.fast,
        max_latency: o.max_latency,
        rate: None,
        iops: o.iops,
        pace_trees: o.max_latency.is_some(),
    };
    start.profile = o.profile;
    start.govern = true;
    let engine = remove::Settings {
        threads: o.threads.unwrap_or(0),
        keep: Some(Arc::new(unlink::Proven::new(
            place.display.clone(),
            m,
            o.mount,
        ))),
        start: Some(Arc::new(start)),
        ..remove::Settings::default()
    };
    let counters = remove::Counters::default();
    let (base, name) = under.unwrap_or_else(|| (place.parent.clone(), place.name.clone()));
    let target = remove::DirTarget {
        base,
        name,
        display: place.display.clone(),
        ident: place.ident,
    };
    let outcome = remove::remove_trees(vec![target], &engine, &counters, &Progress(on));
    out.removed_files = counters.files.load(Ordering::Relaxed);
    out.removed_dirs = counters.dirs.load(Ordering::Relaxed);
    on(Event::Removing {
        files: out.removed_files,
        dirs: out.removed_dirs,
    });
    // An entry that stayed because it could not be read is named once.
    let known: std::collections::HashSet<PathBuf> =
        out.stayed.iter().map(|f| f.path.clone()).collect();
    out.stayed.extend(
        outcome
            .failures
            .into_iter()
            .filter(|f| !known.contains(&f.path)),
    );
    out.interrupted = crate::sys::interrupt::requested();
}
