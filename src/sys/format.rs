//! How quantities read to people: counts, sizes, rates, durations, ages and moments, each
//! written by one function here so it reads the same wherever it is shown. Reading them from
//! the command line is `units`; what a message says around them stays with its module.

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// The longest duration accepted anywhere (100 years of 365.25 days): beyond it a grace window
/// or an age is a typo, and `Duration` arithmetic on `SystemTime` could overflow.
pub const MAX_DURATION_SECS: f64 = 100.0 * 365.25 * 86_400.0;

/// Seconds since the epoch, now.
pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Thousands separators: 1234567 -> "1,234,567".
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n thing` or `n things`, `n` with thousands separators.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group(n), if n == 1 { one } else { many })
}

/// A share in percent to one decimal, `12.5%` (`-` of nothing).
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// Binary units: 1536 -> "1.5 KiB"; one byte short of a GiB is "1.0 GiB", not "1024.0 MiB".
pub fn bytes(n: u64) -> String {
    let mut v = n as f64;
    let mut unit = 0;
    // As printed: one decimal above bytes.
    let shown = |v: f64, unit: usize| {
        if unit == 0 {
            v
        } else {
            (v * 10.0).round() / 10.0
        }
    };
    while shown(v, unit) >= 1024.0 && unit + 1 < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A measured amount: `1.9 GiB (1,987,654,321 B)`, or `512 B`.
pub fn bytes_exact(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else {
        format!("{} ({} B)", bytes(n), group(n))
    }
}

/// A whole number of binary units as it is: `0 B`, `512 B`, `4 KiB`, `1536 KiB`, `16 EiB`.
pub fn binary_units(n: u128) -> String {
    let mut v = n;
    let mut unit = 0;
    while v >= 1024 && v.is_multiple_of(1024) && unit + 1 < UNITS.len() {
        v /= 1024;
        unit += 1;
    }
    format!("{v} {}", UNITS[unit])
}

/// A size for people: exact binary units when it is a whole number of them (`64 KiB`,
/// `1 MiB`), else one decimal (`1.5 KiB`).
pub fn size(n: u64) -> String {
    if n < 1024 || n.is_multiple_of(1024) {
        binary_units(n.into())
    } else {
        bytes(n)
    }
}

/// Bytes per second: `1.5 MiB/s`.
pub fn rate(bytes_per_s: f64) -> String {
    format!("{}/s", bytes(bytes_per_s as u64))
}

/// How long something took, to the hundredth: `12.34 s`.
pub fn seconds(secs: f64) -> String {
    format!("{secs:.2} s")
}

/// The time a progress line says is left: `ETA 30 s` (`ETA ?` when not known).
pub fn eta(secs: Option<f64>) -> String {
    match secs {
        Some(s) => format!("ETA {s:.0} s"),
        None => "ETA ?".into(),
    }
}

/// A duration for people: `0.42 s`, `8.4 s`, `3 min 12 s`, `2 h 05 min`.
pub fn duration(secs: f64) -> String {
    if !secs.is_finite() {
        return "?".into();
    }
    if secs < 10.0 {
        format!("{secs:.2} s")
    } else if secs < 60.0 {
        format!("{secs:.1} s")
    } else if secs < 3600.0 {
        let s = secs.round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = (secs / 60.0).round() as u64;
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

/// A wait in one unit, rounded: `12 s`, `5 min`, `1.5 h` (what is left of one; never less
/// than nothing).
pub fn duration_rounded(s: f64) -> String {
    let s = s.max(0.0);
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// An age, as `--older-than` takes one: `3d 4h`, `1.5h`, `5 min`, `12 s`.
pub fn age(secs: f64) -> String {
    let s = secs.max(0.0);
    if s >= 86_400.0 {
        let d = (s / 86_400.0).floor();
        let h = ((s - d * 86_400.0) / 3600.0).floor();
        if h > 0.0 {
            format!("{d:.0}d {h:.0}h")
        } else {
            format!("{d:.0}d")
        }
    } else if s >= 3600.0 {
        format!("{:.1}h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

/// An age to the second: `3d 00:05:12`, `04:00:00`.
pub fn age_to_the_second(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    let (d, h, m, s) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60, s % 60);
    if d > 0 {
        format!("{d}d {h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// The system's time zone (`TZ`, else `/etc/localtime`), UTC when it names none.
pub fn local_zone() -> TimeZone {
    TimeZone::try_system().unwrap_or(TimeZone::UTC)
}

/// A calendar time to the minute: `2026-11-22 08:15`.
pub fn minute(c: &DateTime) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        c.year(),
        c.month(),
        c.day(),
        c.hour(),
        c.minute()
    )
}

/// A moment in local time to the second, `2026-11-23 01:45:12` (`@SECONDS` beyond the
/// calendar's years -9999 to 9999).
pub fn local_time(t: f64) -> String {
    match Timestamp::from_second(t.floor() as i64) {
        Ok(ts) => {
            let c = local_zone().to_datetime(ts);
            format!("{}:{:02}", minute(&c), c.second())
        }
        Err(_) => format!("@{}", t.floor()),
    }
}

/// The local time of a syslog line (RFC 3164): `Nov 23 01:45:12`; `None` beyond the calendar.
pub fn syslog_stamp(t: f64) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let ts = Timestamp::from_second(t.floor() as i64).ok()?;
    let c = local_zone().to_datetime(ts);
    Some(format!(
        "{} {:>2} {:02}:{:02}:{:02}",
        MONTHS[(c.month() as usize).clamp(1, 12) - 1],
        c.day(),
        c.hour(),
        c.minute(),
        c.second()
    ))
}

/// `YYYYMMDDTHHMMSS` of a unix time, UTC (entry ids, log lines).
pub fn utc_stamp(secs: u64) -> String {
    let ts = i64::try_from(secs)
        .ok()
        .and_then(|s| Timestamp::from_second(s).ok())
        .unwrap_or(Timestamp::MAX);
    let c = TimeZone::UTC.to_datetime(ts);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}",
        c.year(),
        c.month(),
        c.day(),
        c.hour(),
        c.minute(),
        c.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(plural(1, "entry", "entries"), "1 entry");
        assert_eq!(plural(1234, "entry", "entries"), "1,234 entries");
        assert_eq!(percent(1, 8), "12.5%");
        assert_eq!(percent(1, 0), "-");
    }

    #[test]
    fn binary_units_round_to_one_decimal() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes((1 << 30) - 1), "1.0 GiB");
        assert_eq!(bytes((1 << 20) - 51), "1.0 MiB");
        assert_eq!(bytes((1 << 20) - 52), "1023.9 KiB");
        assert_eq!(bytes(u64::MAX), "16384.0 PiB");
        assert_eq!(rate(1.5 * 1048576.0), "1.5 MiB/s");
    }

    #[test]
    fn exact_sizes() {
        assert_eq!(bytes_exact(512), "512 B");
        assert_eq!(bytes_exact(1_987_654_321), "1.9 GiB (1,987,654,321 B)");
        assert_eq!(binary_units(0), "0 B");
        assert_eq!(binary_units(1 << 64), "16 EiB");
        assert_eq!(size(64 << 10), "64 KiB");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(1536 << 10), "1536 KiB");
    }

    #[test]
    fn durations() {
        assert_eq!(seconds(1.0 / 3.0), "0.33 s");
        assert_eq!(eta(Some(29.6)), "ETA 30 s");
        assert_eq!(eta(None), "ETA ?");
        assert_eq!(duration(0.421), "0.42 s");
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(192.0), "3 min 12 s");
        assert_eq!(duration(7500.0), "2 h 05 min");
        assert_eq!(duration(f64::NAN), "?");
        assert_eq!(duration_rounded(-3.0), "0 s");
        assert_eq!(duration_rounded(89.0), "89 s");
        assert_eq!(duration_rounded(600.0), "10 min");
        assert_eq!(duration_rounded(5400.0), "1.5 h");
    }

    #[test]
    fn ages() {
        assert_eq!(age(3.0 * 86_400.0 + 4.5 * 3600.0), "3d 4h");
        assert_eq!(age(3.0 * 86_400.0), "3d");
        assert_eq!(age(5400.0), "1.5h");
        assert_eq!(age(300.0), "5 min");
        assert_eq!(age(12.0), "12 s");
        assert_eq!(age_to_the_second(3.0 * 86_400.0 + 312.0), "3d 00:05:12");
        assert_eq!(age_to_the_second(4.0 * 3600.0), "04:00:00");
    }

    #[test]
    fn moments() {
        assert_eq!(utc_stamp(0), "19700101T000000");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000");
        assert_eq!(utc_stamp(1_795_336_496), "20261122T083456");
        let c = jiff::civil::date(2026, 11, 22).at(8, 5, 59, 999);
        assert_eq!(minute(&c), "2026-11-22 08:05");
        assert_eq!(local_time(1e15), "@1000000000000000");
    }
}
