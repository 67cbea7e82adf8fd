//! Peer for `bench/trash.sh durable`: removes files durably the two ways a program does it
//! without reclaim. Standard library only; trash.sh compiles it with
//! `rustc -O --edition 2021 bench/trash/durable_peer.rs` (a native binary, so its start-up
//! costs about what reclaim's does, unlike a Python interpreter's ~20 ms).
//!
//!   durable_peer per-file PATH...   for each path: unlink(path); fsync(its directory)
//!   durable_peer batch PATH...      unlink(path) for all; then fsync(each directory) once
//!
//! Directories are opened once (first use) and kept open. Exit 0, or 1 with a message on the
//! first error.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::exit;

fn parent(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mode = args.next().and_then(|m| m.into_string().ok()).unwrap_or_default();
    let paths: Vec<PathBuf> = args.map(PathBuf::from).collect();
    if !(mode == "per-file" || mode == "batch") || paths.is_empty() {
        eprintln!("usage: durable_peer per-file|batch PATH...");
        exit(2);
    }
    let mut dirs: HashMap<PathBuf, File> = HashMap::new();
    let mut order: Vec<PathBuf> = Vec::new();
    let fail = |what: &str, p: &Path, e: std::io::Error| -> ! {
        eprintln!("durable_peer: {what} {}: {e}", p.display());
        exit(1);
    };
    for p in &paths {
        let d = parent(p);
        if !dirs.contains_key(&d) {
            let f = File::open(&d).unwrap_or_else(|e| fail("open", &d, e));
            dirs.insert(d.clone(), f);
            order.push(d.clone());
        }
        if let Err(e) = std::fs::remove_file(p) {
            fail("unlink", p, e);
        }
        if mode == "per-file" {
            if let Err(e) = dirs[&d].sync_all() {
                fail("fsync", &d, e);
            }
        }
    }
    if mode == "batch" {
        for d in &order {
            if let Err(e) = dirs[d].sync_all() {
                fail("fsync", d, e);
            }
        }
    }
}
