//! One large file freed gently (the shrinker, the file waiting in the user's trash meanwhile, or
//! under a hidden name in its directory where there is none), and what a stop signal left of
//! it. Never shrinks a file that pacing leaves alone (`--fast`) or that is not large.

use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Instant;

use super::{Events, Left, Request, Shrinking};
use crate::engine::shrink::{self, Gentle};
use crate::reaper::background::Hider;
use crate::sys::dirfd::Facts;
use crate::sys::error::Reason;
use crate::trash::hide::HideOptions;

/// What a stop signal left of one large file; starts the reaper for it if it is in the trash.
pub(super) fn left_of_file(req: &Request, g: &Gentle, l: &shrink::Left) -> Left {
    let entry = match (&l.trash, &l.entry) {
        (Some(trash), Some(id)) => {
            if let Ok(t) = crate::trash::Trash::open_path(Path::new(trash)) {
                crate::reaper::background::start_reaper(&t, &req.reaper_args());
            }
            Some(id.clone())
        }
        _ => None,
    };
    Left::File {
        path: g.path.clone(),
        bytes: l.bytes,
        hidden: match entry {
            Some(_) => None,
            None => l.hidden.clone(),
        },
        entry,
    }
}

/// A regular file big enough that freeing it may hurt others, and pacing is on.
pub(super) fn gentle_candidate(req: &Request, facts: &Facts) -> bool {
    !req.pace.fast && shrink::candidate(facts, shrink::Found::Named)
}

/// Frees one large file with the shrinker, telling `events` how it goes. It waits in
/// the user's trash on its file system while it is shrunk (a stop signal or a crash leaves the
/// rest there, for a reaper), or under a hidden name in its directory where there is none.
pub(super) fn remove_gently(
    req: &Request,
    hider: &Hider,
    base: &OwnedFd,
    name: &CStr,
    display: &Path,
    facts: &Facts,
    events: &dyn Events,
) -> Result<Gentle, Reason> {
    let started = Instant::now();
    let on_progress = |freed: u64, total: u64, pacer: Option<&crate::engine::pace::Pacer>| {
        events.shrinking(Some(Shrinking {
            path: display,
            freed,
            total,
            started,
            latency: pacer.and_then(|p| p.last_latency()),
        }))
    };
    let original = crate::trash::hide::absolute(base, name);
    // The trash is found (and made, if need be) only if the file is shrunk at all.
    let locate = || hider.trash_for(base).ok();
    let opts = HideOptions {
        grace: None,
        known: Some((facts.allocated, 1)),
        durable: req.durable,
        pacing: req.pace.clone(),
    };
    let hiding = match &original {
        Some(o) if crate::trash::hide::unsuitable(o, facts, facts.mnt_id).is_none() => {
            shrink::Hiding::Trash {
                locate: &locate,
                original: o,
                opts: &opts,
            }
        }
        _ => shrink::Hiding::Renamed { finish: true },
    };
    let outcome = shrink::remove_file(base, name, facts, &req.pacing(), &hiding, &on_progress)?;
    events.shrinking(None);
    Ok(Gentle {
        path: crate::sys::quote::PathField::new(display),
        elapsed_s: started.elapsed().as_secs_f64(),
        outcome,
    })
}
