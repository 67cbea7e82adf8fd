//! Parsing of the human quantities on the command line and in the config file: durations in
//! one grammar for every option and key (`30s`, `10min`, `3d12h`, `6mo`, `1y`; a bare `m` is
//! refused, as minutes to some and months to others) and byte counts (`200M`, `1.5GiB`,
//! `4096`). Errors name what was wrong.

use std::time::Duration;

use crate::engine::prune::policy::CalendarSpan;
use crate::sys::format::MAX_DURATION_SECS;

/// Why a quantity given on the command line or in the config file is not one. Each variant
/// carries the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("'{0}' is not a duration (try 30s, 10min, 12h, 3d, 2w, 6mo, 1y, 3d12h)")]
    NotADuration(String),
    /// A number without a unit: `30` could be seconds or days.
    #[error("'{0}': a number needs a unit ({UNITS})")]
    BareNumber(String),
    /// `m` (or `M`): minutes to some tools, months to others (restic).
    #[error("{0}: minutes or months? say {min} or {mo}", min = spelled(.0, "min"), mo = spelled(.0, "mo"))]
    MinutesOrMonths(String),
    #[error("'{input}': unknown unit '{unit}' ({UNITS})")]
    DurationUnit { input: String, unit: String },
    #[error("'{input}': the unit '{unit}' is given twice")]
    RepeatedUnit { input: String, unit: String },
    /// `1.5mo`: a calendar unit has no fraction (nor, in a calendar span, any unit).
    #[error("'{0}': {1} are counted in whole numbers")]
    Fraction(String, &'static str),
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
    #[error("'{0}' is zero: it keeps nothing (at least 1h)")]
    ZeroCalendarSpan(String),
}

/// The most months a duration may have (100 years; `Written::before` caps the whole at
/// `MAX_DURATION_SECS`).
const MAX_MONTHS: i64 = 1200;

/// The units of every duration, as the errors list them.
pub const UNITS: &str = "use s, min, h, d, w, mo, y; ms for latencies";

/// One unit of the duration grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Micro,
    Milli,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    /// The unit a word names: the short form or an English word (`6 months`, `10 minutes`).
    /// `m` and `M` name none: minutes in systemd and `sleep`, months in restic.
    fn of(word: &str) -> Option<Unit> {
        Some(match word {
            "us" | "µs" | "usec" => Unit::Micro,
            "ms" | "msec" => Unit::Milli,
            "s" | "sec" | "secs" | "second" | "seconds" => Unit::Second,
            "min" | "mins" | "minute" | "minutes" => Unit::Minute,
            "h" | "hr" | "hrs" | "hour" | "hours" => Unit::Hour,
            "d" | "day" | "days" => Unit::Day,
            "w" | "week" | "weeks" => Unit::Week,
            "mo" | "month" | "months" => Unit::Month,
            "y" | "yr" | "year" | "years" => Unit::Year,
            _ => return None,
        })
    }

    /// Seconds in one, for the units of fixed length.
    fn seconds(self) -> Option<f64> {
        Some(match self {
            Unit::Micro => 1e-6,
            Unit::Milli => 1e-3,
            Unit::Second => 1.0,
            Unit::Minute => 60.0,
            Unit::Hour => 3600.0,
            Unit::Day => 86_400.0,
            Unit::Week => 7.0 * 86_400.0,
            Unit::Month | Unit::Year => return None,
        })
    }
}

/// A duration as written, in the one grammar every option and config key takes: parts of a
/// number and a unit (`3d12h`, `1y6mo`, `90 min`, `6 months`), each unit at most once.
/// Months and years are calendar units, kept apart; the rest is exact time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Written {
    /// Months, a year being 12 (whole numbers).
    pub months: i64,
    /// Days and weeks as whole calendar days, for a calendar span (`--keep-within`).
    days: f64,
    /// Everything below a day, exactly.
    seconds: f64,
}

impl Written {
    /// Reads `s`. A bare number is refused (`30` could be seconds or days) except `0`.
    pub fn parse(s: &str) -> Result<Written, QuantityError> {
        let t = s.trim();
        if t.is_empty() {
            return Err(QuantityError::NotADuration(s.into()));
        }
        if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return match t.parse::<f64>() {
                Ok(0.0) => Ok(Written::default()),
                Ok(_) => Err(QuantityError::BareNumber(s.into())),
                Err(_) => Err(QuantityError::NotADuration(s.into())),
            };
        }
        let mut w = Written::default();
        let mut seen: Vec<Unit> = Vec::new();
        let mut rest = t;
        while !rest.is_empty() {
            let num_end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            if num_end == 0 {
                return Err(QuantityError::NotADuration(s.into()));
            }
            let v: f64 = rest[..num_end]
                .parse()
                .map_err(|_| QuantityError::NotADuration(s.into()))?;
            let after = rest[num_end..].trim_start();
            let word_end = after
                .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
                .unwrap_or(after.len());
            let word = &after[..word_end];
            if word.is_empty() {
                // `3d12`: a number without a unit after another part.
                return Err(QuantityError::BareNumber(s.into()));
            }
            let unit = match Unit::of(word) {
                Some(u) => u,
                None if word == "m" || word == "M" => {
                    return Err(QuantityError::MinutesOrMonths(t.into()))
                }
                None => {
                    return Err(QuantityError::DurationUnit {
                        input: s.into(),
                        unit: word.into(),
                    })
                }
            };
            if seen.contains(&unit) {
                return Err(QuantityError::RepeatedUnit {
                    input: s.into(),
                    unit: word.into(),
                });
            }
            seen.push(unit);
            match unit {
                Unit::Month | Unit::Year => {
                    if v.fract() != 0.0 {
                        return Err(QuantityError::Fraction(s.into(), "months and years"));
                    }
                    let months = v * if unit == Unit::Year { 12.0 } else { 1.0 };
                    if w.months as f64 + months > MAX_MONTHS as f64 {
                        return Err(QuantityError::DurationOutOfRange(s.into()));
                    }
                    w.months += months as i64;
                }
                Unit::Day => w.days += v,
                Unit::Week => w.days += 7.0 * v,
                u => w.seconds += v * u.seconds().unwrap_or(0.0),
            }
            rest = after[word_end..].trim_start();
        }
        let exact = w.days * 86_400.0 + w.seconds;
        if !exact.is_finite() || exact < 0.0 {
            return Err(QuantityError::InvalidDuration(s.into()));
        }
        if exact > MAX_DURATION_SECS {
            return Err(QuantityError::DurationOutOfRange(s.into()));
        }
        Ok(w)
    }

    /// How long ago, from `now`, a moment this far back is: months and years on the local
    /// calendar (as `find -newermt '-6 months'` and `date -d '-1 year'` count them, March 31
    /// minus a month being March 3 or 2 as in Go and GNU date), days and the rest exactly.
    pub fn before(&self, now: f64, zone: &jiff::tz::TimeZone) -> Duration {
        use crate::engine::prune::policy::{add_date, civil, instant};
        let exact = self.days * 86_400.0 + self.seconds;
        let calendar = if self.months == 0 {
            0.0
        } else {
            let back = add_date(civil(zone, now), 0, -self.months, 0)
                .map_or(f64::NEG_INFINITY, |c| instant(zone, c));
            (now.floor() - back).clamp(0.0, MAX_DURATION_SECS)
        };
        Duration::from_secs_f64((calendar + exact).min(MAX_DURATION_SECS))
    }

    /// As a calendar span (`--keep-within`): every part a whole number.
    fn calendar(&self, s: &str) -> Result<CalendarSpan, QuantityError> {
        if self.days.fract() != 0.0 || self.seconds.fract() != 0.0 {
            return Err(QuantityError::Fraction(
                s.into(),
                "the parts of a calendar span",
            ));
        }
        Ok(CalendarSpan {
            years: 0,
            months: self.months,
            days: self.days as i64,
            hours: 0,
            seconds: self.seconds as i64,
        }
        .tidy())
    }
}

/// `t` with each bare `m` (or `M`) spelled as `unit`: the hints for a bare `m`.
fn spelled(t: &str, unit: &str) -> String {
    let mut out = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        // An `m`/`M` that is a whole unit: after a number or space, before a digit or the end.
        let alone = (c == 'm' || c == 'M')
            && out
                .chars()
                .last()
                .is_some_and(|p: char| p.is_ascii_digit() || p == '.' || p == ' ')
            && chars
                .peek()
                .is_none_or(|n| n.is_ascii_digit() || n.is_whitespace());
        if alone {
            out.push_str(unit);
        } else {
            out.push(c);
        }
    }
    out
}

/// A duration in the one grammar (`Written`): `30s`, `10min`, `12h`, `3d`, `2w`, `6mo`, `1y`,
/// `20ms`, or a sum (`3d12h`, `1h30min`). Months and years count back from now on the local
/// calendar; the rest is exact. A bare `m` and a bare number are refused.
pub fn parse_duration(s: &str) -> Result<Duration, QuantityError> {
    let w = Written::parse(s)?;
    if w.months == 0 {
        return Ok(w.before(0.0, &jiff::tz::TimeZone::UTC));
    }
    Ok(w.before(
        crate::sys::format::now_unix(),
        &crate::sys::format::local_zone(),
    ))
}

/// `--keep-within`'s span (restic's rule: entries newer than the newest one's time minus it),
/// in the same grammar as every duration: `1y6mo`, `7d`, `36h`; whole numbers only.
pub fn parse_calendar_span(s: &str) -> Result<CalendarSpan, QuantityError> {
    let span = Written::parse(s)?.calendar(s)?;
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

/// `--min-free`: `default` (the smaller of 5% and 10G), `0` (no floor), a percentage of the
/// file system (`5%`) or a size (`2G`).
pub fn parse_min_free(s: &str) -> Result<crate::sys::space::Floor, String> {
    crate::sys::space::Floor::parse(s, |t| parse_bytes(t).map_err(|e| e.to_string()))
}

/// A size that may be 0 (`--max-total 0` with `--allow-empty` removes everything).
pub fn parse_size_or_zero(s: &str) -> Result<u64, QuantityError> {
    if s.trim() == "0" {
        Ok(0)
    } else {
        parse_bytes(s)
    }
}

/// `rm --larger-than`/`--smaller-than`: bytes (`0` allowed), with K, M, G, T (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_size_or_zero(s).map_err(|e| e.to_string())
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
    fn a_bare_number_needs_a_unit_except_zero() {
        for bare in ["30", "1.5", "7"] {
            assert_eq!(
                parse_duration(bare).unwrap_err().to_string(),
                format!("'{bare}': a number needs a unit ({UNITS})")
            );
        }
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
    }

    /// Minutes to systemd and `sleep`, months to restic: a bare `m` is refused everywhere,
    /// with the two spellings that are meant, before anything runs.
    #[test]
    fn a_bare_m_is_refused_with_both_spellings() {
        let err = |s: &str| parse_duration(s).unwrap_err().to_string();
        assert_eq!(err("6m"), "6m: minutes or months? say 6min or 6mo");
        assert_eq!(err("6M"), "6M: minutes or months? say 6min or 6mo");
        assert_eq!(
            err("1h30m"),
            "1h30m: minutes or months? say 1h30min or 1h30mo"
        );
        assert_eq!(err("2m3d"), "2m3d: minutes or months? say 2min3d or 2mo3d");
        assert_eq!(err("6 m"), "6 m: minutes or months? say 6 min or 6 mo");
        let span = parse_calendar_span("1y5m").unwrap_err().to_string();
        assert_eq!(span, "1y5m: minutes or months? say 1y5min or 1y5mo");
    }

    #[test]
    fn every_unit_short_and_long() {
        let d = |s: &str| parse_duration(s).unwrap();
        assert_eq!(d("20ms"), Duration::from_millis(20));
        assert_eq!(d("500us"), Duration::from_micros(500));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d("10min"), Duration::from_secs(600));
        assert_eq!(d("10 minutes"), Duration::from_secs(600));
        assert_eq!(d("2h"), Duration::from_secs(7200));
        assert_eq!(d("1 hour"), Duration::from_secs(3600));
        assert_eq!(d("3d"), Duration::from_secs(3 * 86_400));
        assert_eq!(d("3 days"), Duration::from_secs(3 * 86_400));
        assert_eq!(d("2w"), Duration::from_secs(14 * 86_400));
        assert_eq!(d("3d12h"), Duration::from_secs(84 * 3600));
        assert_eq!(d("1h30min"), Duration::from_secs(5400));
        assert_eq!(d("1min30s"), Duration::from_secs(90));
        assert_eq!(d("3d 12h"), Duration::from_secs(84 * 3600));
        // Months and years: about what they are from any day of the year.
        let days = |s: &str| d(s).as_secs_f64() / 86_400.0;
        assert!((28.0..=31.04).contains(&days("1mo")), "{}", days("1mo"));
        assert!((28.0..=31.04).contains(&days("1 month")));
        assert!((181.0..=184.05).contains(&days("6mo")), "{}", days("6mo"));
        assert!((365.0..=366.05).contains(&days("1y")));
        assert!((365.0..=366.05).contains(&days("12mo")));
        assert!((365.0 + 181.0..=366.0 + 184.1).contains(&days("1y6mo")));
    }

    /// Months and years count back on the local calendar, as find -newermt '-6 months'.
    #[test]
    fn months_and_years_are_calendar_ones() {
        use jiff::civil::date;
        let zone = jiff::tz::TimeZone::UTC;
        let at = |y, m, d| {
            let c = date(y, m, d).at(12, 0, 0, 0);
            zone.to_timestamp(c).unwrap().as_second() as f64
        };
        let before = |s: &str, now: f64| {
            Written::parse(s).unwrap().before(now, &zone).as_secs_f64() / 86_400.0
        };
        assert_eq!(before("1mo", at(2026, 3, 15)), 28.0);
        assert_eq!(before("1mo", at(2026, 8, 15)), 31.0);
        assert_eq!(before("1y", at(2025, 6, 1)), 365.0);
        assert_eq!(before("1y", at(2024, 6, 1)), 366.0);
        assert_eq!(before("6mo", at(2026, 9, 1)), 184.0);
        assert_eq!(before("1mo2d", at(2026, 3, 15)), 30.0);
    }

    #[test]
    fn calendar_spans_take_the_same_grammar() {
        let span = |y, m, d, h, s| {
            Ok(CalendarSpan {
                years: y,
                months: m,
                days: d,
                hours: h,
                seconds: s,
            })
        };
        assert_eq!(parse_calendar_span("2y5mo7d3h"), span(2, 5, 7, 3, 0));
        assert_eq!(parse_calendar_span("1y5mo7d2h"), span(1, 5, 7, 2, 0));
        assert_eq!(parse_calendar_span("7d"), span(0, 0, 7, 0, 0));
        assert_eq!(parse_calendar_span("2w"), span(0, 0, 14, 0, 0));
        assert_eq!(parse_calendar_span("36h"), span(0, 0, 0, 36, 0));
        assert_eq!(parse_calendar_span("18mo"), span(1, 6, 0, 0, 0));
        assert_eq!(parse_calendar_span("90min"), span(0, 0, 0, 1, 1800));
        assert_eq!(parse_calendar_span("6 months"), span(0, 6, 0, 0, 0));
        assert_eq!(parse_calendar_span("3h1y"), span(1, 0, 0, 3, 0));
        assert_eq!(
            parse_calendar_span("2y5mo7d3h30min").unwrap().to_string(),
            "2y5mo7d3h30min"
        );
        let err = |s: &str| parse_calendar_span(s).unwrap_err().to_string();
        assert_eq!(err("0d"), "'0d' is zero: it keeps nothing (at least 1h)");
        assert_eq!(
            err("1.5d"),
            "'1.5d': the parts of a calendar span are counted in whole numbers"
        );
        for bad in [
            "",
            "7",
            "d",
            "-1d",
            "1d1d",
            "99999999999999999999y",
            "1201y",
        ] {
            assert!(parse_calendar_span(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn out_of_range_is_an_error_not_a_panic() {
        let e = parse_duration("99999999999999999999d").unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        assert!(parse_duration("36525d").is_ok());
        assert!(parse_duration("36526d").is_err());
        assert!(parse_duration("100y").is_ok());
        assert!(parse_duration("1200y").is_err());
        let e = parse_bytes("99999999999999999999T").unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        assert!(parse_bytes("17179869184G").is_err());
        assert!(parse_bytes("17179869183G").is_ok());
    }

    #[test]
    fn messages_name_what_was_wrong() {
        let duration = |s: &str| parse_duration(s).unwrap_err().to_string();
        let size = |s: &str| parse_bytes(s).unwrap_err().to_string();
        let not = |s: &str| {
            format!("'{s}' is not a duration (try 30s, 10min, 12h, 3d, 2w, 6mo, 1y, 3d12h)")
        };
        assert_eq!(duration(""), not(""));
        assert_eq!(duration("fast"), not("fast"));
        assert_eq!(duration("-1d"), not("-1d"));
        assert_eq!(
            duration("3d12"),
            format!("'3d12': a number needs a unit ({UNITS})")
        );
        assert_eq!(
            duration("3 parsecs"),
            format!("'3 parsecs': unknown unit 'parsecs' ({UNITS})")
        );
        assert_eq!(duration("1d1d"), "'1d1d': the unit 'd' is given twice");
        assert_eq!(
            duration("1.5mo"),
            "'1.5mo': months and years are counted in whole numbers"
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
