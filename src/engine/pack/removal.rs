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

/// The tree governor of a paced removal below `parent`: steers the engine's gate and
/// throttle by the probe's latency (against the `idle` ones) until `done`.
fn govern(
    o: &PackOptions,
    parent: &OwnedFd,
    (engine, throttle, idle): (
        &crate::engine::remove::Options,
        &crate::engine::pace::throttle::Throttle,
        Vec<Duration>,
    ),
    counters: &crate::engine::remove::Counters,
    done: &AtomicBool,
) {
    use crate::engine::pace::{asked::DEFAULT_MAX_LATENCY, tree};
    let pacing = crate::engine::pace::Pacing {
        max_latency: Some(o.max_latency.unwrap_or(DEFAULT_MAX_LATENCY)),
        rate: None,
        trace: None,
        floor: crate::sys::space::Floor::Default,
    };
    let knobs = tree::Knobs {
        throttle,
        gate: engine.gate.as_deref(),
        max_workers: engine.threads,
        rate: o.max_latency.is_some(),
        idle: &idle,
        // The probe's writes spaced by the removal's own operations on a network file system
        // (none elsewhere; `look_ahead` is set exactly on a network profile).
        budget: engine.network_budget(engine.look_ahead),
        joint: None,
    };
    tree::run(parent, &pacing, &knobs, &|| counters.entries(), done);
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
    let mut profile = match o.profile {
        Some(c) => crate::engine::profile::Profile::named(c, &*place.parent),
        None => crate::engine::profile::Profile::detect(&*place.parent),
    };
    // As `reclaim rm -r`: a disk that says it is rotational is told by its idle latency (one
    // worker and no governor on a spinning one, unless `--max-latency` asks for it; not
    // governed on a virtual one that only says so).
    let rotational = profile.class == crate::engine::profile::Class::Rotational;
    if rotational && profile.source == "detected" && o.max_latency.is_none() && !o.fast {
        profile.settle_rotational(&crate::engine::pace::tree::idle_samples(&*place.parent));
    }
    let mut engine = remove::Options::default();
    engine.apply(&profile, o.threads.is_some());
    if let Some(t) = o.threads {
        engine.threads = t.max(1);
    }
    engine.keep = Some(Arc::new(unlink::Proven::new(
        place.display.clone(),
        m,
        o.mount,
    )));
    let paced = !o.fast && (o.max_latency.is_some() || profile.governed);
    if paced || o.iops.is_some() {
        engine.throttle = Some(Arc::new(crate::engine::pace::throttle::Throttle::new(
            o.iops,
        )));
    }
    if paced {
        // The measured concurrency's gate, steered by the governor too (one at first on a
        // rotational disk), as `rm`'s trees.
        engine.gate = Some(engine.governed_gate(rotational));
    }
    let counters = remove::Counters::default();
    let done = AtomicBool::new(false);
    let (base, name) = under.unwrap_or_else(|| (place.parent.clone(), place.name.clone()));
    let target = remove::DirTarget {
        base,
        name,
        display: place.display.clone(),
        ident: place.ident,
    };
    let outcome = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                on(Event::Removing {
                    files: counters.files.load(Ordering::Relaxed),
                    dirs: counters.dirs.load(Ordering::Relaxed),
                });
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let governor = engine.throttle.as_ref().filter(|_| paced).map(|throttle| {
            // Idle latencies before the removal starts: its own load would inflate them.
            let idle = crate::engine::pace::tree::idle_samples(&*place.parent);
            let (engine, counters, done) = (&engine, &counters, &done);
            let knobs = (engine, &**throttle, idle);
            s.spawn(move || govern(o, &place.parent, knobs, counters, done))
        });
        let outcome = remove::remove_trees(vec![target], &engine, &counters, &remove::Quiet);
        done.store(true, Ordering::Relaxed);
        if let Some(g) = governor {
            let _ = g.join();
        }
        outcome
    });
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
