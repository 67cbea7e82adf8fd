//! walprobe: a WAL-like victim for the impact lab.
//!
//! Appends `--size` bytes to a file and `fdatasync`s it every `--interval`, the way a database's
//! write-ahead log commits, and prints one line per completed operation to stdout:
//! `<completion unix time, seconds> <latency in microseconds>`. It never queues a backlog: when an
//! operation takes longer than the interval, the next one starts at once, and the lost slots are
//! counted in the latency of the slow one only. Stops on SIGTERM/SIGINT (the default action is
//! fine: every line is written unbuffered) or after `--duration`.
//! It only ever writes the one file it is given, which must not exist yet (or `--reuse`).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

struct Args {
    file: String,
    interval: Duration,
    size: usize,
    duration: Option<Duration>,
    wrap: u64,
}

fn usage() -> ! {
    eprintln!(
        "usage: walprobe [--interval-ms N (20)] [--size BYTES (8192)] [--duration-s N] \
         [--wrap-mb N (256)] FILE"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        file: String::new(),
        interval: Duration::from_millis(20),
        size: 8192,
        duration: None,
        wrap: 256 << 20,
    };
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--interval-ms" => {
                a.interval =
                    Duration::from_secs_f64(val().parse::<f64>().unwrap_or_else(|_| usage()) / 1e3)
            }
            "--size" => a.size = val().parse().unwrap_or_else(|_| usage()),
            "--duration-s" => {
                a.duration = Some(Duration::from_secs_f64(
                    val().parse().unwrap_or_else(|_| usage()),
                ))
            }
            "--wrap-mb" => a.wrap = val().parse::<u64>().unwrap_or_else(|_| usage()) << 20,
            s if s.starts_with('-') => usage(),
            s => a.file = s.to_string(),
        }
    }
    if a.file.is_empty() || a.size == 0 {
        usage()
    }
    a
}

fn main() {
    let a = parse();
    let mut f: File = match OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .open(&a.file)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("walprobe: {}: {e}", a.file);
            std::process::exit(1)
        }
    };
    let buf = vec![0x5au8; a.size];
    let out = std::io::stdout();
    let mut out = out.lock();
    let _ = writeln!(
        out,
        "# walprobe interval_ms={} size={} file={}",
        a.interval.as_secs_f64() * 1e3,
        a.size,
        a.file
    );
    let t0 = Instant::now();
    let mut next = t0;
    let mut written: u64 = 0;
    loop {
        let now = Instant::now();
        if let Some(d) = a.duration {
            if now.duration_since(t0) >= d {
                break;
            }
        }
        if next > now {
            std::thread::sleep(next - now);
        }
        let start = Instant::now();
        if written >= a.wrap {
            // Like a WAL segment switch: start over in the same file (a truncate is a journaled
            // metadata change, as a new segment would be).
            if let Err(e) = f.set_len(0) {
                eprintln!("walprobe: {}: truncate: {e}", a.file);
                std::process::exit(1)
            }
            written = 0;
        }
        if let Err(e) = f.write_all(&buf).and_then(|_| f.sync_data()) {
            eprintln!("walprobe: {}: {e}", a.file);
            std::process::exit(1)
        }
        written += a.size as u64;
        let end = Instant::now();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        if writeln!(out, "{wall:.6} {}", (end - start).as_micros()).is_err() {
            break;
        }
        let _ = out.flush();
        next += a.interval;
        if next < end {
            next = end;
        }
    }
}
