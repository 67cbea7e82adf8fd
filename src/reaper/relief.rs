//! The `reap --watch` supervisor's answer to a file system running short of space (DESIGN
//! §14): the entries still in a grace window in every trash there, every user's, oldest first
//! (entry IDs begin with their UTC time), are freed one at a time, each by a `reap --trash T
//! --once --now ID --early PRESSURE` child as the trash's owner (root never frees another
//! user's data with its own authority), the space read afresh after each, until the floor
//! holds and the fall no longer reaches it before the last window would end. A trash another
//! reaper holds is waited for a moment (a pass over it), then left to that reaper (it watches
//! the same space). Never works inside a trash itself, never prints.

use std::path::PathBuf;

use super::child::{pass_as_owner, Ask, ChildArgs, Now};
use super::ReapSummary;
use crate::sys::asuser::ChildError;
use crate::sys::format::now_unix;
use crate::sys::logging::Sink;
use crate::sys::space::Watch;
use crate::trash::Found;

/// An entry in its grace window, and its trash.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub trash: Found,
    pub id: String,
    pub grace_until_unix: f64,
}

/// The entries in a grace window of `trashes` (one file system's), oldest first: this user's
/// read here, another user's through `status --trash T --json` as that user (what it prints
/// on stderr goes to `on_line`).
pub fn candidates(trashes: &[Found], on_line: &mut dyn FnMut(&str)) -> Vec<Candidate> {
    let now = now_unix();
    let mut out = Vec::new();
    for f in trashes {
        if crate::sys::asuser::needed(f.uid) {
            let Ok(st) = super::status::as_owner(f, false, on_line) else {
                continue;
            };
            let items = st.trashes.into_iter().filter(|t| t.uid == f.uid).take(1);
            for i in items.flat_map(|t| t.items) {
                let until = i.grace_until_unix.filter(|u| *u > now);
                if let (Some(until), true) = (until, i.state == "grace") {
                    if crate::trash::meta::is_entry_name(i.id.as_bytes()) {
                        out.push(Candidate {
                            trash: f.clone(),
                            id: i.id,
                            grace_until_unix: until,
                        });
                    }
                }
            }
        } else if let Ok(t) = f.open() {
            for (name, until) in super::pressure::graced(&t) {
                out.push(Candidate {
                    trash: f.clone(),
                    id: name.to_string_lossy().into_owned(),
                    grace_until_unix: until,
                });
            }
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// What one relief did: each child's trash and summary (or why it failed).
pub type Relieved = Vec<(PathBuf, Result<ReapSummary, ChildError>)>;

/// Frees the `candidates` (of one file system, oldest first) one at a time while that file
/// system is pressed (`watch`, read afresh before each, through the first trash that opens),
/// each by a child as its owner with `child_args` (the service's floor, log and workers);
/// what the children print goes to `lines`.
pub fn relieve(
    mut candidates: Vec<Candidate>,
    watch: &mut Watch,
    child_args: &ChildArgs,
    lines: &Sink,
) -> Relieved {
    let mut out = Relieved::new();
    while !candidates.is_empty() {
        if crate::sys::interrupt::stopping() {
            break;
        }
        let last = candidates
            .iter()
            .map(|c| c.grace_until_unix)
            .fold(0.0, f64::max);
        let eta = Some(last - now_unix());
        let pressed = candidates
            .iter()
            .find_map(|c| c.trash.open().ok())
            .and_then(|t| watch.pressure(&t.dir, eta, true));
        let Some(p) = pressed else {
            break;
        };
        let c = candidates.remove(0);
        let ids = [c.id.clone()];
        let ask = Ask {
            now: Now::Ids(&ids),
            early: Some(&p),
            ..Ask::default()
        };
        let held = |r: &Result<ReapSummary, ChildError>| {
            r.as_ref().is_ok_and(|s| !s.skipped_locked.is_empty())
        };
        let mut relay = |l: &str| lines.relay(l, Some("reclaim reap"));
        let mut r = pass_as_owner(&c.trash.path, c.trash.uid, (child_args, &ask), &mut relay);
        // Held by a reaper for a moment (a pass over it): the oldest waits its turn.
        let since = std::time::Instant::now();
        while held(&r) && since.elapsed() < HELD_WAIT && !crate::sys::interrupt::stopping() {
            std::thread::sleep(HELD_POLL);
            r = pass_as_owner(&c.trash.path, c.trash.uid, (child_args, &ask), &mut relay);
        }
        // Held still: that reaper is at work there and watches the same space itself; the
        // others in that trash are its too.
        if held(&r) {
            candidates.retain(|o| o.trash.path != c.trash.path);
        }
        out.push((c.trash.path, r));
    }
    out
}

/// How long the oldest entry waits for a reaper holding its trash (a pass over a trash whose
/// entries wait for their windows takes a moment) before the next one goes instead.
const HELD_WAIT: std::time::Duration = std::time::Duration::from_secs(3);
const HELD_POLL: std::time::Duration = std::time::Duration::from_millis(200);
