//! The pacing the user asked for, in every form it takes: the flags (`cli::PaceArgs`), the
//! record in each trash entry's `meta.json` (`EntryPacing`, the one type the others convert
//! through), the flags again for a detached reaper's command line, and what the pacer takes
//! (`Pacing`). Every conversion between them, and the default budget, live here only.

use std::ffi::OsString;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Pacing;
use crate::cli::args::PaceArgs;

/// The latency budget for other I/O when large files are freed and none is given.
pub const DEFAULT_MAX_LATENCY: Duration = Duration::from_millis(20);

/// How removal is to be paced, as asked: by `reclaim rm`'s flags, and recorded in each entry it
/// hides (a reaper frees the entry that way). `meta.json` holds the budget as
/// `max_latency_ms`; a record is the user's input, so a budget there that is no duration
/// (negative, not finite, beyond 100 years) reads as not given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EntryPacing {
    /// `--fast`: no pacing at all.
    pub fast: bool,
    /// `--max-latency`, as given (`None`: the default budget).
    #[serde(
        rename = "max_latency_ms",
        with = "millis",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_latency: Option<Duration>,
    /// `--rate`: bytes freed per second at most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<u64>,
    /// `--iops`: unlinks per second at most, in trees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops: Option<u64>,
    /// Trees paced by the latency probe too (`--max-latency` was given).
    #[serde(default)]
    pub pace_trees: bool,
}

impl From<&PaceArgs> for EntryPacing {
    fn from(p: &PaceArgs) -> Self {
        EntryPacing {
            fast: p.fast,
            max_latency: p.max_latency,
            rate: p.rate,
            iops: p.iops,
            pace_trees: p.max_latency.is_some(),
        }
    }
}

impl EntryPacing {
    /// What the shrinker and the tree governor take: nothing with `--fast`, else the budget
    /// given (or the default) and the rate cap.
    pub fn pacing(&self) -> Pacing {
        if self.fast {
            return Pacing::fast();
        }
        Pacing {
            max_latency: Some(self.max_latency.unwrap_or(DEFAULT_MAX_LATENCY)),
            rate: self.rate.filter(|r| *r > 0),
            trace: None,
        }
    }

    /// The flags that ask for this pacing, for a detached reaper's command line (a record
    /// made from flags gives them back: `PaceArgs` parsed from these is the same pacing).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut v: Vec<OsString> = Vec::new();
        if self.fast {
            v.push("--fast".into());
        }
        if let Some(d) = self.max_latency {
            v.push(format!("--max-latency={}", micros(d)).into());
        }
        if let Some(r) = self.rate {
            v.push(format!("--rate={r}").into());
        }
        if let Some(n) = self.iops {
            v.push(format!("--iops={n}").into());
        }
        v
    }
}

impl PaceArgs {
    /// Whether any pacing flag was given.
    pub fn given(&self) -> bool {
        self.fast || self.max_latency.is_some() || self.rate.is_some() || self.iops.is_some()
    }
}

/// A duration in microseconds as `parse_duration` reads it back to the nanosecond: `20000us`,
/// `1234.500us`.
fn micros(d: Duration) -> String {
    let (us, ns) = (d.as_micros(), d.subsec_nanos() % 1000);
    if ns == 0 {
        format!("{us}us")
    } else {
        format!("{us}.{ns:03}us")
    }
}

/// `max_latency_ms` of a record: a budget as milliseconds (`f64`), either way.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_secs_f64() * 1e3)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let ms = Option::<f64>::deserialize(d)?;
        Ok(ms
            .filter(|ms| *ms / 1e3 <= crate::cli::units::MAX_DURATION_SECS)
            .and_then(|ms| Duration::try_from_secs_f64(ms / 1e3).ok()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        pace: PaceArgs,
    }

    fn parse(args: &[OsString]) -> PaceArgs {
        let argv = std::iter::once(OsString::from("reclaim")).chain(args.iter().cloned());
        Flags::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .pace
    }

    #[test]
    fn flags_given_again_to_a_reaper_ask_for_the_same_pacing() {
        let ms = Duration::from_millis;
        let cases = [
            PaceArgs::default(),
            PaceArgs {
                fast: true,
                ..PaceArgs::default()
            },
            PaceArgs {
                fast: true,
                iops: Some(5000),
                ..PaceArgs::default()
            },
            PaceArgs {
                max_latency: Some(ms(20)),
                ..PaceArgs::default()
            },
            PaceArgs {
                max_latency: Some(Duration::from_nanos(1_234_567)),
                rate: Some(200 << 20),
                iops: Some(1),
                ..PaceArgs::default()
            },
            PaceArgs {
                max_latency: Some(Duration::from_secs(3600)),
                ..PaceArgs::default()
            },
            PaceArgs {
                max_latency: Some(Duration::ZERO),
                rate: Some(1),
                ..PaceArgs::default()
            },
        ];
        for flags in cases {
            let asked = EntryPacing::from(&flags);
            let again = EntryPacing::from(&parse(&asked.to_args()));
            assert_eq!(again, asked, "{:?}", asked.to_args());
        }
    }

    #[test]
    fn the_budget_is_the_default_unless_given_and_none_when_fast() {
        let p = EntryPacing::default().pacing();
        assert_eq!(p.max_latency, Some(DEFAULT_MAX_LATENCY));
        assert!(EntryPacing::from(&parse(&["--fast".into()]))
            .pacing()
            .is_fast());
        let given = EntryPacing::from(&parse(&["--max-latency".into(), "5ms".into()]));
        assert_eq!(given.pacing().max_latency, Some(Duration::from_millis(5)));
        assert!(given.pace_trees);
    }

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

    #[test]
    fn the_help_names_the_default_budget() {
        use clap::CommandFactory;
        let cmd = Flags::command();
        let arg = cmd.get_arguments().find(|a| a.get_id() == "max_latency");
        let help = arg.and_then(|a| a.get_long_help().or(a.get_help()));
        let help = help.unwrap().to_string();
        let default = format!("[default: {}ms ", DEFAULT_MAX_LATENCY.as_millis());
        assert!(help.contains(&default), "{help}");
    }
}
