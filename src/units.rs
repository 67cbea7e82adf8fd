//! Parsing of the human quantities on the command line: durations (`20ms`, `1.5s`, `3d12h`)
//! and byte counts (`200M`, `1.5GiB`, `4096`). Errors name what was wrong.

use std::time::Duration;

/// The longest duration accepted anywhere (100 years of 365.25 days): beyond it a grace window
/// or an age is a typo, and `Duration` arithmetic on `SystemTime` could overflow.
pub const MAX_DURATION_SECS: f64 = 100.0 * 365.25 * 86_400.0;

/// `20ms`, `1.5s`, `500us`, `2m`, `3d`, `1w`, or a sum of such parts (`3d12h`, `1h30m`); a
/// bare number is milliseconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(format!("'{s}' is not a duration (try 20ms, 1.5s, 3d12h)"));
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
        let (v, unit) = number_and_unit(&rest[..unit_end], "a duration (try 20ms, 1.5s, 3d12h)")
            .map_err(|_| format!("'{s}' is not a duration (try 20ms, 1.5s, 3d12h)"))?;
        // A bare number (milliseconds) only on its own: in `3d12` it would be a guess.
        let alone = rest.len() == s.trim().len() && unit_end == rest.len();
        if unit.is_empty() && !alone {
            return Err(format!("'{s}': a number without a unit inside a duration"));
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
                return Err(format!(
                    "'{s}': unknown unit '{u}' (use us, ms, s, m, h, d, w)"
                ))
            }
        };
        rest = &rest[unit_end..];
    }
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("'{s}' is not a duration"));
    }
    if secs > MAX_DURATION_SECS {
        return Err(format!(
            "'{s}' is out of range (at most {} days)",
            MAX_DURATION_SECS / 86_400.0
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `15%` of the file system, or a size (`200G`).
pub fn parse_free_target(s: &str) -> Result<crate::prune::policy::FreeTarget, String> {
    use crate::prune::policy::FreeTarget;
    match s.strip_suffix('%') {
        Some(p) => match p.trim().parse::<f64>() {
            Ok(v) if (0.0..=100.0).contains(&v) => Ok(FreeTarget::Percent(v)),
            _ => Err(format!("'{s}' is not a percentage from 0% to 100%")),
        },
        None => parse_bytes(s).map(FreeTarget::Bytes),
    }
}

/// A size that may be 0 (`--max-total 0` with `--allow-empty` removes everything).
pub fn parse_size_or_zero(s: &str) -> Result<u64, String> {
    if s.trim() == "0" {
        Ok(0)
    } else {
        parse_bytes(s)
    }
}

/// `200M`, `1.5G`, `64KiB`, `4096` (binary multiples: K = 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (v, unit) = number_and_unit(s, "a size (try 200M, 1G)")?;
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
        _ => return Err(format!("'{s}': unknown unit '{unit}' (use K, M, G, T)")),
    };
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes < 1.0 {
        return Err(format!("'{s}' must be at least one byte"));
    }
    // 2^64 as f64: anything at or above it does not fit (`as` would saturate silently).
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(format!("'{s}' is out of range (at most 16 EiB)"));
    }
    Ok(bytes as u64)
}

/// `"1.5 ms"` -> (1.5, "ms"); an error says `s` is not `what`.
fn number_and_unit<'a>(s: &'a str, what: &str) -> Result<(f64, &'a str), String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v = num.parse().map_err(|_| format!("'{s}' is not {what}"))?;
    Ok((v, unit.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(e.contains("out of range"), "{e}");
        assert!(parse_duration("36525d").is_ok());
        assert!(parse_duration("36526d").is_err());
        let e = parse_bytes("99999999999999999999T").unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        assert!(parse_bytes("17179869184G").is_err());
        assert!(parse_bytes("17179869183G").is_ok());
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
