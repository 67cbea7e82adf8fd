//! Parsing of the human quantities on the command line: durations (`20ms`, `1.5s`, `500us`)
//! and byte counts (`200M`, `1.5GiB`, `4096`). Errors name what was wrong.

use std::time::Duration;

/// `20ms`, `1.5s`, `500us`, `2m`; a bare number is milliseconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (v, unit) = number_and_unit(s, "a duration (try 20ms, 1.5s)")?;
    let secs = match unit {
        "" | "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        "d" => v * 86_400.0,
        "w" => v * 7.0 * 86_400.0,
        u => {
            return Err(format!(
                "'{s}': unknown unit '{u}' (use us, ms, s, m, h, d, w)"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("'{s}' is not a duration"));
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
