//! `failed.json` of a trash entry: the reaper's record of attempts to free it that failed (an
//! immutable file, a directory the owner may not write inside the tree), with the inner paths
//! and reasons, and when to try again. `status` shows it; reapers back off instead of retrying
//! (and logging) every second.

use std::os::fd::OwnedFd;

use serde::{Deserialize, Serialize};

use crate::sys::error::ErrorEntry;
use crate::sys::error::Failure;
use crate::trash::{safefile, FAILED};

/// How many failed paths an entry's record keeps (the count of the rest is kept too).
const KEEP: usize = 20;
/// First wait before another attempt; doubles per attempt up to `MAX_BACKOFF_S`.
const FIRST_BACKOFF_S: f64 = 60.0;
const MAX_BACKOFF_S: f64 = 3600.0;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailedRecord {
    pub attempts: u32,
    pub last_attempt_unix: f64,
    pub next_attempt_unix: f64,
    /// The first failed paths of the last attempt (under the entry's original path).
    pub errors: Vec<ErrorEntry>,
    /// Failed paths of the last attempt beyond those listed.
    #[serde(default)]
    pub more: u64,
}

impl FailedRecord {
    /// The record after one more failed attempt at `now`.
    pub fn after(previous: Option<&FailedRecord>, failures: &[Failure], now: f64) -> Self {
        let attempts = previous.map_or(0, |p| p.attempts).saturating_add(1);
        let backoff = (FIRST_BACKOFF_S * 2f64.powi(attempts.saturating_sub(1).min(30) as i32))
            .min(MAX_BACKOFF_S);
        FailedRecord {
            attempts,
            last_attempt_unix: now,
            next_attempt_unix: now + backoff,
            errors: failures
                .iter()
                .take(KEEP)
                .map(|f| ErrorEntry::new(&f.path, f.reason.to_string()))
                .collect(),
            more: failures.len().saturating_sub(KEEP) as u64,
        }
    }

    /// Reads an entry's record: `Ok(None)` if there is none (or it does not parse), `Err` if
    /// something that is not a record sits under its name.
    pub fn read(entry: &OwnedFd, owner: u32) -> Result<Option<FailedRecord>, safefile::Bad> {
        match safefile::read_json(entry, FAILED, owner) {
            Err(safefile::Bad::Missing) => Ok(None),
            r => r,
        }
    }

    pub fn write(&self, entry: &OwnedFd) -> Result<(), rustix::io::Errno> {
        safefile::replace(
            entry,
            FAILED,
            &serde_json::to_vec(self).expect("record serializes"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::error::Reason;

    #[test]
    fn backs_off_doubling_up_to_an_hour() {
        let f = [Failure {
            path: "/v/t/imm".into(),
            reason: Reason::Os(rustix::io::Errno::PERM),
        }];
        let one = FailedRecord::after(None, &f, 1000.0);
        assert_eq!(one.attempts, 1);
        assert_eq!(one.next_attempt_unix, 1060.0);
        assert_eq!(one.errors[0].path.path, "/v/t/imm");
        assert_eq!(one.errors[0].error, "Operation not permitted");
        let two = FailedRecord::after(Some(&one), &f, 2000.0);
        assert_eq!(two.next_attempt_unix, 2120.0);
        let mut r = two;
        for _ in 0..20 {
            r = FailedRecord::after(Some(&r), &f, 0.0);
        }
        assert_eq!(r.next_attempt_unix, 3600.0);
        let many: Vec<Failure> = (0..25).map(|_| f[0].clone()).collect();
        let r = FailedRecord::after(None, &many, 0.0);
        assert_eq!((r.errors.len(), r.more), (20, 5));
    }
}
