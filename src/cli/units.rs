//! Parsing of the human quantities on the command line: durations (`20ms`, `1.5s`, `3d12h`)
//! and byte counts (`200M`, `1.5GiB`, `4096`). Errors name what was wrong.

use std::time::Duration;

use crate::engine::prune::policy::CalendarSpan;
use crate::sys::format::MAX_DURATION_SECS;

/// Why a quantity given on the command line or in the config file is not one. Each variant
/// carries the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("'{0}' is not a duration (try 20ms, 1.5s, 3d12h)")]
    NotADuration(String),
    /// A number without a unit after another part (`3d12`): a guess at what was meant.
    #[error("'{0}': a number without a unit inside a duration")]
    BareNumberInDuration(String),
    #[error("'{input}': unknown unit '{unit}' (use us, ms, s, m, h, d, w)")]
    DurationUnit { input: String, unit: String },
    /// Adds up to no finite, non-negative number of seconds.
    #[error("'{0}' is not a duration")]
    InvalidDuration(String),
    #[error("'{0}' is out of range (at most {days} days)", days = MAX_DURATION_SECS / 86_400.0)]
    DurationOutOfRange(String),
    #[error("'{0}' is not a size (try 200M, 1G)")]
    NotASize(String),
    #[error("'{input}': unknown unit '{unit}' (use K, M, G, T)")]
    SizeUnit { input: String, unit: String },
    #[error("'{0}' must be at least one byte")]
    LessThanAByte(String),
    #[error("'{0}' is out of range (at most 16 EiB)")]
    SizeOutOfRange(String),
    #[error("'{0}' is not a percentage from 0% to 100%")]
    NotAPercentage(String),
    #[error("'{0}' is not a calendar span (restic's form: 1y5m7d2h; m is months)")]
    NotACalendarSpan(String),
    #[error("'{input}': unknown unit '{unit}' in a calendar span (use y, m for months, d, h)")]
    CalendarSpanUnit { input: String, unit: String },
    #[error("'{0}' is zero: it keeps nothing (at least 1h)")]
    ZeroCalendarSpan(String),
    #[error("'{0}' is out of range (at most {max} of a unit)", max = MAX_SPAN_PART)]
    CalendarSpanOutOfRange(String),
}

/// The largest number before one unit of a calendar span (a million hours is 114 years).
pub const MAX_SPAN_PART: i64 = 1_000_000;

/// `20ms`, `1.5s`, `500us`, `2m`, `3d`, `1w`, or a sum of such parts (`3d12h`, `1h30m`); a
/// bare number is milliseconds.
pub fn parse_duration(s: &str) -> Result<Duration, QuantityError> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(QuantityError::NotADuration(s.into()));
    }
    let mut secs = 0.0;
    while !rest.is_empty() {
        // One part: a number, then letters up to the next digit.
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let unit_end = rest[num_end..]
            .find(|c: char| c.is_ascii_digit())
            .map_or(rest.len(), |i| num_end + i);
        let (v, unit) = number_and_unit(&rest[..unit_end])
            .map_err(|_| QuantityError::NotADuration(s.into()))?;
        // A bare number (milliseconds) only on its own: in `3d12` it would be a guess.
        let alone = rest.len() == s.trim().len() && unit_end == rest.len();
        if unit.is_empty() && !alone {
            return Err(QuantityError::BareNumberInDuration(s.into()));
        }
        secs += v * match unit {
            "" | "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "s" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            "w" => 7.0 * 86_400.0,
            u => {
                return Err(QuantityError::DurationUnit {
                    input: s.into(),
                    unit: u.into(),
                })
            }
        };
        rest = &rest[unit_end..];
    }
    if !secs.is_finite() || secs < 0.0 {
        return Err(QuantityError::InvalidDuration(s.into()));
    }
    if secs > MAX_DURATION_SECS {
        return Err(QuantityError::DurationOutOfRange(s.into()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// restic's `--keep-within` span: whole numbers of years, months, days and hours, each unit at
/// most once, in any order (`1y5m7d2h`, `36h`). `m` is months, as in restic.
pub fn parse_calendar_span(s: &str) -> Result<CalendarSpan, QuantityError> {
    let not = || QuantityError::NotACalendarSpan(s.into());
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(not());
    }
    let mut span = CalendarSpan::default();
    let mut given = String::new();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(not());
        }
        let n: i64 = rest[..digits]
            .parse()
            .map_err(|_| QuantityError::CalendarSpanOutOfRange(s.into()))?;
        if n > MAX_SPAN_PART {
            return Err(QuantityError::CalendarSpanOutOfRange(s.into()));
        }
        let after = &rest[digits..];
        let Some(unit) = after.chars().next() else {
            return Err(not());
        };
        let part = match unit {
            'y' => &mut span.years,
            'm' => &mut span.months,
            'd' => &mut span.days,
            'h' => &mut span.hours,
            _ => {
                let word = after
                    .find(|c: char| c.is_ascii_digit())
                    .map_or(after, |i| &after[..i]);
                return Err(QuantityError::CalendarSpanUnit {
                    input: s.into(),
                    unit: word.into(),
                });
            }
        };
        if given.contains(unit) {
            return Err(not());
        }
        given.push(unit);
        *part = n;
        rest = &after[unit.len_utf8()..];
    }
    if span == CalendarSpan::default() {
        return Err(QuantityError::ZeroCalendarSpan(s.into()));
    }
    Ok(span)
}

/// `15%` of the file system, or a size (`200G`).
pub fn parse_free_target(
    s: &str,
) -> Result<crate::engine::prune::policy::FreeTarget, QuantityError> {
    use crate::engine::prune::policy::FreeTarget;
    match s.strip_suffix('%') {
        Some(p) => match p.trim().parse::<f64>() {
            Ok(v) if (0.0..=100.0).contains(&v) => Ok(FreeTarget::Percent(v)),
            _ => Err(QuantityError::NotAPercentage(s.into())),
        },
        None => parse_bytes(s).map(FreeTarget::Bytes),
    }
}

/// A size that may be 0 (`--max-total 0` with `--allow-empty` removes everything).
pub fn parse_size_or_zero(s: &str) -> Result<u64, QuantityError> {
    if s.trim() == "0" {
        Ok(0)
    } else {
        parse_bytes(s)
    }
}

/// `200M`, `1.5G`, `64KiB`, `4096` (binary multiples: K = 1024).
pub fn parse_bytes(s: &str) -> Result<u64, QuantityError> {
    let (v, unit) = number_and_unit(s).map_err(|_| QuantityError::NotASize(s.into()))?;
    let unit = unit.trim_end_matches("/s");
    let mult: u64 = match unit
        .to_ascii_uppercase()
        .trim_end_matches('B')
        .trim_end_matches('I')
    {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => {
            return Err(QuantityError::SizeUnit {
                input: s.into(),
                unit: unit.into(),
            })
        }
    };
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 {
        return Err(QuantityError::LessThanAByte(s.into()));
    }
    // 2^64 as f64: anything at or above it does not fit (`as` would saturate silently).
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(QuantityError::SizeOutOfRange(s.into()));
    }
    Ok(bytes as u64)
}

/// `"1.5 ms"` -> (1.5, "ms"); an error if it does not start with a number (the caller says
/// what it is not).
fn number_and_unit(s: &str) -> Result<(f64, &str), std::num::ParseFloatError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    Ok((num.parse()?, unit.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_spans_as_restic_writes_them() {
        let span = |y, m, d, h| {
            Ok(CalendarSpan {
                years: y,
                months: m,
                days: d,
                hours: h,
            })
        };
        assert_eq!(parse_calendar_span("2y5m7d3h"), span(2, 5, 7, 3));
        assert_eq!(parse_calendar_span("1y5m7d2h"), span(1, 5, 7, 2));
        assert_eq!(parse_calendar_span("7d"), span(0, 0, 7, 0));
        assert_eq!(parse_calendar_span("36h"), span(0, 0, 0, 36));
        assert_eq!(parse_calendar_span("1m"), span(0, 1, 0, 0), "m is months");
        assert_eq!(parse_calendar_span("3h1y"), span(1, 0, 0, 3));
        assert_eq!(
            parse_calendar_span("2y5m7d3h").unwrap().to_string(),
            "2y5m7d3h"
        );
        let err = |s: &str| parse_calendar_span(s).unwrap_err().to_string();
        assert_eq!(
            err("1w"),
            "'1w': unknown unit 'w' in a calendar span (use y, m for months, d, h)"
        );
        assert_eq!(
            err("30min"),
            "'30min' is not a calendar span (restic's form: 1y5m7d2h; m is months)"
        );
        assert_eq!(err("0d"), "'0d' is zero: it keeps nothing (at least 1h)");
        for bad in [
            "",
            "7",
            "d",
            "1.5d",
            "-1d",
            "1d1d",
            "7d 3h",
            "99999999999999999999y",
        ] {
            assert!(parse_calendar_span(bad).is_err(), "{bad:?}");
        }
        assert!(parse_calendar_span("1000000h").is_ok());
        assert!(parse_calendar_span("1000001h").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20ms"), Ok(Duration::from_millis(20)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_millis(7)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("3 parsecs").is_err());
        assert!(parse_duration("").is_err());
        assert!(
            parse_duration("3d12").is_err(),
            "a trailing bare number is ambiguous"
        );
    }

    #[test]
    fn compound_durations_add_up() {
        assert_eq!(parse_duration("3d12h"), Ok(Duration::from_secs(84 * 3600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert!(parse_duration("1h 30x").is_err());
    }

    #[test]
    fn out_of_range_is_an_error_not_a_panic() {
        let e = parse_duration("99999999999999999999d").unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        assert!(parse_duration("36525d").is_ok());
        assert!(parse_duration("36526d").is_err());
        let e = parse_bytes("99999999999999999999T").unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        assert!(parse_bytes("17179869184G").is_err());
        assert!(parse_bytes("17179869183G").is_ok());
    }

    #[test]
    fn messages_name_what_was_wrong() {
        let duration = |s: &str| parse_duration(s).unwrap_err().to_string();
        let size = |s: &str| parse_bytes(s).unwrap_err().to_string();
        assert_eq!(duration(""), "'' is not a duration (try 20ms, 1.5s, 3d12h)");
        assert_eq!(
            duration("fast"),
            "'fast' is not a duration (try 20ms, 1.5s, 3d12h)"
        );
        assert_eq!(
            duration("3d12"),
            "'3d12': a number without a unit inside a duration"
        );
        assert_eq!(
            duration("3 parsecs"),
            "'3 parsecs': unknown unit 'parsecs' (use us, ms, s, m, h, d, w)"
        );
        let huge = format!("{}ms", "9".repeat(400));
        assert_eq!(duration(&huge), format!("'{huge}' is not a duration"));
        assert_eq!(
            duration("36526d"),
            "'36526d' is out of range (at most 36525 days)"
        );
        assert_eq!(size("lots"), "'lots' is not a size (try 200M, 1G)");
        assert_eq!(size("5Q/s"), "'5Q/s': unknown unit 'Q' (use K, M, G, T)");
        assert_eq!(size("0"), "'0' must be at least one byte");
        assert_eq!(
            size("17179869184G"),
            "'17179869184G' is out of range (at most 16 EiB)"
        );
        assert_eq!(
            parse_free_target("150%").unwrap_err().to_string(),
            "'150%' is not a percentage from 0% to 100%"
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("200M"), Ok(200 << 20));
        assert_eq!(parse_bytes("1.5G"), Ok(3 << 29));
        assert_eq!(parse_bytes("64KiB"), Ok(64 << 10));
        assert_eq!(parse_bytes("100MB/s"), Ok(100 << 20));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("lots").is_err());
    }
}
