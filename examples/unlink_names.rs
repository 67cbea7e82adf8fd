//! The unlink floor of a selection: unlinks the names listed (NUL-separated) in LIST, all in
//! one directory DIR, with P threads taking 1,024 names at a time, in the order listed. It
//! never reads a directory and never tests anything: no remover that has to find and choose
//! the names can beat it with as many threads.
//!
//! `unlink_names --threads P DIR LIST`

use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use rustix::fs::{open, unlinkat, AtFlags, Mode, OFlags};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (threads, dir, list) = match args.as_slice() {
        [_, t, p, dir, list] if t == "--threads" => (p.parse::<usize>()?, dir, list),
        _ => anyhow::bail!("usage: unlink_names --threads P DIR LIST"),
    };
    let bytes = std::fs::read(list).with_context(|| format!("reading {list}"))?;
    let names: Vec<CString> = bytes
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| CString::new(n).expect("no NUL inside"))
        .collect();
    let fd = open(
        dir.as_str(),
        OFlags::PATH | OFlags::DIRECTORY,
        Mode::empty(),
    )?;
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let start = next.fetch_add(1024, Ordering::Relaxed);
                if start >= names.len() {
                    break;
                }
                for n in &names[start..(start + 1024).min(names.len())] {
                    if unlinkat(&fd, n, AtFlags::empty()).is_err() {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let failed = failed.load(Ordering::Relaxed);
    anyhow::ensure!(failed == 0, "{failed} unlinks failed");
    Ok(())
}
