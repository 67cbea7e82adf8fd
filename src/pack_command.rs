//! `reclaim pack` and `reclaim unpack` as commands: the flags become `pack::Options`, the
//! engine's events a progress line (TTY only, stderr), its outcome a summary or one JSON
//! object, and the exit code: 0 all done, 1 some entries stayed or failed (each listed),
//! 2 usage error or nothing could be packed, 128+N stopped by signal N. The only code of
//! pack that prints.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::cli::{PackArgs, UnpackArgs};
use crate::format::{bytes, group, plural};
use crate::pack::{self, Event, Outcome, PackError};
use crate::quote::{quote, PathField};

#[derive(Serialize)]
struct Stayed {
    #[serde(flatten)]
    path: PathField,
    reason: String,
}

#[derive(Serialize)]
struct PackJson<'a> {
    dir: PathField,
    archive: PathField,
    resumed: bool,
    already_done: bool,
    entries: u64,
    files: u64,
    bytes: u64,
    archive_bytes: u64,
    compressor: &'a str,
    removed_files: u64,
    removed_dirs: u64,
    stayed: Vec<Stayed>,
    /// Entries a mount shows less exactly than `reclaim unpack` restores them.
    subsecond_times: u64,
    acls: u64,
    other_xattrs: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    mounted: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fstab: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<PathField>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted: Option<i32>,
    elapsed_s: f64,
}

fn bar(json: bool) -> Option<indicatif::ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::with_draw_target(
        None,
        indicatif::ProgressDrawTarget::stderr_with_hz(10),
    );
    b.set_style(indicatif::ProgressStyle::with_template("{spinner} {msg}").expect("template"));
    b.enable_steady_tick(std::time::Duration::from_millis(100));
    Some(b)
}

/// The tools' pipes: a `tar2sqfs` or `sqfs2tar` that dies (or is ended on Ctrl-C) must be an
/// error reclaim reports, never a SIGPIPE that kills it halfway (the partial archive left).
fn ignore_sigpipe() {
    // SAFETY: sets the disposition of one signal to "ignore"; called on the main thread before
    // the engine starts any thread, and no handler of ours is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// `reclaim pack`; returns the exit code.
pub fn pack(a: &PackArgs) -> u8 {
    ignore_sigpipe();
    let started = Instant::now();
    let o = pack::Options {
        dir: a.dir.clone(),
        to: a.to.clone(),
        compressor: a.compress,
        threads: a.threads.map(usize::from),
        keep_dir: a.mount,
        keep_originals: a.keep,
        fast: a.pace.fast,
        max_latency: a.pace.max_latency,
        iops: a.pace.iops,
        profile: a.profile,
    };
    let progress = bar(a.json);
    let total = std::sync::atomic::AtomicU64::new(0);
    let on = |e: Event| {
        let Some(b) = &progress else { return };
        let t = total.load(std::sync::atomic::Ordering::Relaxed);
        let msg = match e {
            Event::Listed { entries } => {
                total.store(entries, std::sync::atomic::Ordering::Relaxed);
                format!("listed {} entries", group(entries))
            }
            Event::Packing { entries, bytes: b } => {
                format!(
                    "packing {}/{} entries, {}",
                    group(entries),
                    group(t),
                    bytes(b)
                )
            }
            Event::Verifying { entries, bytes: b } => {
                format!("verifying {} entries, {}", group(entries), bytes(b))
            }
            Event::Archived => "archive verified; removing the originals".into(),
            Event::Removing { files, dirs } => format!(
                "removing originals: {} and {}",
                plural(files, "file", "files"),
                plural(dirs, "directory", "directories")
            ),
            Event::Resuming => "found this directory's archive: verifying it again".into(),
        };
        b.set_message(msg);
    };
    let r = pack::pack(&o, &on);
    if let Some(b) = &progress {
        b.finish_and_clear();
    }
    let out = match r {
        Ok(out) => out,
        Err(e) => return pack_failed(a, &e),
    };
    let mut json = PackJson {
        dir: PathField::new(&a.dir),
        archive: PathField::new(&out.archive),
        resumed: out.resumed,
        already_done: out.already_done,
        entries: out.entries,
        files: out.files,
        bytes: out.bytes,
        archive_bytes: out.archive_bytes,
        compressor: &out.compressor,
        removed_files: out.removed_files,
        removed_dirs: out.removed_dirs,
        stayed: out
            .stayed
            .iter()
            .map(|f| Stayed {
                path: PathField::new(&f.path),
                reason: f.reason.to_string(),
            })
            .collect(),
        subsecond_times: out.subsecond,
        acls: out.acls,
        other_xattrs: out.other_xattrs,
        mounted: None,
        fstab: None,
        unit: None,
        interrupted: out.interrupted,
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    let mut code = u8::from(!out.stayed.is_empty());
    if !a.json {
        for f in &out.stayed {
            eprintln!("reclaim pack: {} stays: {}", quote(&f.path), f.reason);
        }
    }
    if let Some(sig) = out.interrupted {
        if !a.json {
            let left = out
                .entries
                .saturating_sub(out.removed_files + out.removed_dirs);
            eprintln!(
                "reclaim pack: interrupted ({}): {} removed; up to {} still in {}, all of it in {} (verified); run `reclaim pack {}` again to finish",
                crate::interrupt::name(sig),
                plural(out.removed_files, "file", "files"),
                plural(left, "entry", "entries"),
                quote(&a.dir),
                quote(&out.archive),
                quote(&a.dir),
            );
        } else {
            print_json(&json);
        }
        return crate::interrupt::exit_code(sig);
    }
    if a.mount {
        let dir = absolute(&a.dir);
        match pack::mount::mount(&out.archive, &dir) {
            Ok(how) => {
                json.mounted = Some(match how {
                    pack::mount::How::Kernel => "kernel",
                    pack::mount::How::Fuse => "squashfuse",
                });
                match &a.mount_unit {
                    Some(units) => match pack::mount::write_unit(units, &out.archive, &dir) {
                        Ok(p) => json.unit = Some(PathField::new(&p)),
                        Err(e) => {
                            eprintln!(
                                "reclaim pack: cannot write the unit into {}: {}",
                                quote(units),
                                crate::error::errno_text(
                                    rustix::io::Errno::from_io_error(&e)
                                        .unwrap_or(rustix::io::Errno::IO)
                                )
                            );
                            code = 1;
                        }
                    },
                    None => json.fstab = Some(pack::mount::fstab_line(&out.archive, &dir)),
                }
            }
            Err(e) => {
                eprintln!("reclaim pack: {e}");
                code = 1;
            }
        }
    }
    if a.json {
        print_json(&json);
    } else {
        print_summary(&out, &json, a);
    }
    code
}

fn absolute(p: &Path) -> std::path::PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

fn print_json(j: &impl Serialize) {
    println!("{}", serde_json::to_string(j).expect("serializable"));
}

fn print_summary(out: &Outcome, j: &PackJson<'_>, a: &PackArgs) {
    if out.already_done {
        println!(
            "{} is already packed into {} (nothing left to remove)",
            quote(&a.dir),
            quote(&out.archive)
        );
        return;
    }
    let ratio = if out.bytes > 0 {
        format!(
            ", {:.0}% of the data",
            100.0 * out.archive_bytes as f64 / out.bytes as f64
        )
    } else {
        String::new()
    };
    println!(
        "{} {} ({}, {} of data) into {}: {}{ratio}, {}; every entry read back and compared",
        if out.resumed {
            "resumed: the archive holds"
        } else {
            "packed"
        },
        plural(out.entries, "entry", "entries"),
        plural(out.files, "file", "files"),
        bytes(out.bytes),
        quote(&out.archive),
        bytes(out.archive_bytes),
        out.compressor,
    );
    if a.keep {
        println!("originals kept (--keep)");
    } else {
        println!(
            "removed {} and {}{}",
            plural(out.removed_files, "file", "files"),
            plural(out.removed_dirs, "directory", "directories"),
            if out.stayed.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} stayed (listed above)",
                    plural(out.stayed.len() as u64, "entry", "entries")
                )
            }
        );
    }
    let mut only_unpack = Vec::new();
    if out.subsecond > 0 {
        only_unpack.push(format!(
            "{} with sub-second times (a mount shows whole seconds)",
            group(out.subsecond)
        ));
    }
    if out.acls > 0 {
        only_unpack.push(format!(
            "{} with ACLs (a mount shows no ACL and never more access than it gave)",
            group(out.acls)
        ));
    }
    if out.other_xattrs > 0 {
        only_unpack.push(format!(
            "{} with xattrs outside user./trusted./security.",
            group(out.other_xattrs)
        ));
    }
    if !only_unpack.is_empty() {
        println!(
            "exact only through `reclaim unpack` (the manifest keeps it): {}",
            only_unpack.join("; ")
        );
    }
    if let Some(how) = j.mounted {
        println!(
            "mounted {} on {} ({how}, read-only)",
            quote(&out.archive),
            quote(&a.dir)
        );
    }
    if let Some(line) = &j.fstab {
        println!("to mount it at boot, add to /etc/fstab:\n{line}");
    }
    if let Some(u) = &j.unit {
        println!(
            "wrote {} (enable it: systemctl enable --now {})",
            u,
            Path::new(&u.exact())
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
    }
}

fn pack_failed(a: &PackArgs, e: &PackError) -> u8 {
    match e {
        PackError::Refused(list) => {
            for (p, why) in list {
                eprintln!("reclaim pack: {}: {why}", quote(p));
            }
            eprintln!("reclaim pack: {e}: move or remove them first (nothing was written)");
            2
        }
        PackError::Interrupted(sig) => {
            eprintln!(
                "reclaim pack: interrupted ({}) before the archive was complete: {} is whole, nothing was removed, the partial archive was deleted",
                crate::interrupt::name(*sig),
                quote(&a.dir)
            );
            crate::interrupt::exit_code(*sig)
        }
        e if e.is_usage() => {
            eprintln!("reclaim pack: {e}");
            2
        }
        e => {
            eprintln!("reclaim pack: {e}; {} was not touched", quote(&a.dir));
            1
        }
    }
}

#[derive(Serialize)]
struct UnpackJson {
    archive: PathField,
    dest: PathField,
    entries: u64,
    files: u64,
    bytes: u64,
    manifest: bool,
    owners_not_restored: u64,
    failed: Vec<Stayed>,
    elapsed_s: f64,
}

/// `reclaim unpack`; returns the exit code.
pub fn unpack(a: &UnpackArgs) -> u8 {
    ignore_sigpipe();
    let started = Instant::now();
    let progress = bar(a.json);
    let on = |n: u64, b: u64| {
        if let Some(p) = &progress {
            p.set_message(format!("unpacked {} entries, {}", group(n), bytes(b)));
        }
    };
    let r = pack::unpack::unpack(&a.archive, &a.dest, &on);
    if let Some(b) = &progress {
        b.finish_and_clear();
    }
    let u = match r {
        Ok(u) => u,
        Err(pack::unpack::UnpackError::Interrupted) => {
            let sig = crate::interrupt::requested().unwrap_or(libc::SIGINT);
            eprintln!(
                "reclaim unpack: interrupted ({}): {} holds part of the tree; remove it and unpack again",
                crate::interrupt::name(sig),
                quote(&a.dest)
            );
            return crate::interrupt::exit_code(sig);
        }
        Err(e @ pack::unpack::UnpackError::Usage(..)) => {
            eprintln!("reclaim unpack: {e}");
            return 2;
        }
        Err(e) => {
            eprintln!("reclaim unpack: {e}");
            return 1;
        }
    };
    if a.json {
        print_json(&UnpackJson {
            archive: PathField::new(&a.archive),
            dest: PathField::new(&a.dest),
            entries: u.entries,
            files: u.files,
            bytes: u.bytes,
            manifest: u.manifest,
            owners_not_restored: u.owners_kept,
            failed: u
                .failed
                .iter()
                .map(|(p, why)| Stayed {
                    path: PathField::new(p),
                    reason: why.clone(),
                })
                .collect(),
            elapsed_s: started.elapsed().as_secs_f64(),
        });
    } else {
        for (p, why) in &u.failed {
            eprintln!("reclaim unpack: {}: {why}", quote(p));
        }
        println!(
            "unpacked {} ({}, {}) into {}{}",
            plural(u.entries, "entry", "entries"),
            plural(u.files, "file", "files"),
            bytes(u.bytes),
            quote(&a.dest),
            if u.manifest {
                "; contents checked against the manifest, times and ACLs exact"
            } else {
                "; no reclaim manifest: times to the second, no ACLs, contents not checked"
            }
        );
        if u.owners_kept > 0 {
            println!(
                "{} keep your own owner (only root gives files to others)",
                plural(u.owners_kept, "entry", "entries")
            );
        }
    }
    u8::from(!u.failed.is_empty())
}
