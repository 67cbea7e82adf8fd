//! netfs: a network file system emulator over FUSE (see `src/bin/netfs.rs` and
//! `bench/README.md`). A passthrough of a backing directory in which every operation
//! that would be an RPC on NFS waits one round-trip time, with a per-mount cap on
//! operations in flight (the client's slot table) and an optional cap across mounts
//! (the server).

pub mod fs;
pub mod gate;
pub mod inodes;
pub mod pool;
pub mod stats;
pub mod sys;

use std::time::Duration;

/// "0.5ms", "200us", "2s", "1.5" (seconds), "0".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic() || c == 'µ') {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?} (e.g. 0.5ms, 200us, 1s)"))?;
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        u => return Err(format!("bad unit {u:?} in {s:?} (ns, us, ms, s)")),
    };
    let secs = v * scale;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("duration {s:?} out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("0.5ms"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("200us"), Ok(Duration::from_micros(200)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("3 parsecs").is_err());
        assert!(parse_duration("ms").is_err());
    }
}
