//! The unlink floor of `rm --from`: unlinks the paths listed (NUL-separated) in LIST, grouped
//! by parent directory in the order the parents first appear, with P threads each taking one
//! parent at a time: open it (`O_PATH`), unlink its names in the order listed. It never reads
//! a directory, never stats, never checks or reports anything: what is left of `--from`'s work
//! once the list is known, at the same number of threads.
//!
//! `unlink_paths --threads P LIST`

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use rustix::fs::{open, unlinkat, AtFlags, Mode, OFlags};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (threads, list) = match args.as_slice() {
        [_, t, p, list] if t == "--threads" => (p.parse::<usize>()?, list),
        _ => anyhow::bail!("usage: unlink_paths --threads P LIST"),
    };
    let bytes = std::fs::read(list).with_context(|| format!("reading {list}"))?;
    let mut order: Vec<&Path> = Vec::new();
    let mut groups: HashMap<&Path, Vec<CString>> = HashMap::new();
    for p in bytes.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let p = Path::new(OsStr::from_bytes(p));
        let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
            anyhow::bail!("{} has no parent or no name", p.display());
        };
        let names = groups.entry(parent).or_insert_with(|| {
            order.push(parent);
            Vec::new()
        });
        names.push(CString::new(name.as_bytes()).expect("no NUL inside"));
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(parent) = order.get(i) else {
                    break;
                };
                let names = &groups[parent];
                let Ok(fd) = open(*parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()) else {
                    failed.fetch_add(names.len(), Ordering::Relaxed);
                    continue;
                };
                for n in names {
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
