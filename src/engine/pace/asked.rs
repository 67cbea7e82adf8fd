//! The pacing the user asked for (`trash::meta::EntryPacing`, the record each trash entry
//! keeps) turned into what the shrinker and the tree governor take (`Pacing`), and the default
//! budget. The flags (`cli`) and a detached reaper's command line (`reaper::spawn`) convert
//! through the same record.

use std::time::Duration;

use super::Pacing;
use crate::trash::meta::EntryPacing;

/// The latency budget for other I/O when large files are freed and none is given.
pub const DEFAULT_MAX_LATENCY: Duration = Duration::from_millis(20);

impl EntryPacing {
    /// What the shrinker and the tree governor take: nothing with `--fast`, else the budget
    /// given (or the default) and the rate cap, under the default floor of free space (the
    /// caller sets the one asked for).
    pub fn pacing(&self) -> Pacing {
        if self.fast {
            return Pacing::fast();
        }
        Pacing {
            max_latency: Some(self.max_latency.unwrap_or(DEFAULT_MAX_LATENCY)),
            rate: self.rate.filter(|r| *r > 0),
            trace: None,
            floor: crate::sys::space::Floor::Default,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_both_ways() {
        let new = EntryPacing {
            max_latency: Some(Duration::from_millis(15)),
            rate: Some(1 << 20),
            pace_trees: true,
            ..EntryPacing::default()
        };
        let text = serde_json::to_string(&new).unwrap();
        assert_eq!(
            text,
            r#"{"fast":false,"max_latency_ms":15.0,"rate":1048576,"pace_trees":true}"#
        );
        assert_eq!(serde_json::from_str::<EntryPacing>(&text).unwrap(), new);
        // As older versions wrote them: no budget key at all, or no `pace_trees`.
        let old: EntryPacing = serde_json::from_str(r#"{"fast":true}"#).unwrap();
        assert_eq!(
            old,
            EntryPacing {
                fast: true,
                ..EntryPacing::default()
            }
        );
        let old: EntryPacing =
            serde_json::from_str(r#"{"fast":false,"max_latency_ms":20,"iops":7}"#).unwrap();
        assert_eq!(old.max_latency, Some(Duration::from_millis(20)));
        assert_eq!((old.iops, old.pace_trees), (Some(7), false));
        // A budget that is no duration counts as not given: the default applies.
        for bad in ["-5.0", "1e308", "null"] {
            let r: EntryPacing =
                serde_json::from_str(&format!(r#"{{"fast":false,"max_latency_ms":{bad}}}"#))
                    .unwrap();
            assert_eq!(r.max_latency, None, "{bad}");
            assert_eq!(r.pacing().max_latency, Some(DEFAULT_MAX_LATENCY));
        }
    }
}
