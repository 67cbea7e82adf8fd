//! `reclaim pack` and `reclaim unpack` as commands: run the engine (`engine::pack`) with a
//! progress line (`ui::pack`), mount the archive if asked, print the summary or one JSON
//! object, name every entry that stayed, and pick the exit code: 0 all done, 1 some entries
//! stayed or failed (each listed), 2 usage error or nothing could be packed, 128+N stopped by
//! signal N.

use crate::cmd::exit::Exit;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::engine::pack::mount::{self, How};
use crate::engine::pack::unpack::{self, UnpackError};
use crate::engine::pack::{self, PackError, PackOutcome};
use crate::sys::format::plural;
use crate::sys::interrupt;
use crate::sys::quote::{quote, PathField};
use crate::ui::pack::{PackReport, Progress, UnpackReport};

/// What `reclaim pack` was asked.
#[derive(Clone, Debug)]
pub struct PackOptions {
    pub pack: pack::PackOptions,
    /// Leave the archive mounted on the directory.
    pub mount: bool,
    /// With `mount`: write a systemd .mount unit into this directory.
    pub mount_unit: Option<PathBuf>,
    pub json: bool,
}

/// What `reclaim unpack` was asked.
#[derive(Clone, Debug)]
pub struct UnpackOptions {
    pub archive: PathBuf,
    pub dest: PathBuf,
    /// Root: trust an archive that is not root's own.
    pub same_owner: bool,
    pub json: bool,
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not worth a panic.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// `reclaim pack`.
pub fn run(o: &PackOptions) -> ExitCode {
    // The tools' pipes: a tar2sqfs or sqfs2tar that dies (or is ended on Ctrl-C) must be an
    // error reclaim reports, never a SIGPIPE that kills it halfway.
    interrupt::ignore_sigpipe();
    crate::sys::limits::raise_nofile();
    super::catch_signals(true);
    let started = Instant::now();
    let dir = &o.pack.dir;
    let progress = Progress::start(o.json);
    let r = pack::pack(&o.pack, &|e| progress.event(e));
    progress.clear();
    let out = match r {
        Ok(out) => out,
        Err(e) => return failed(dir, &e),
    };
    let mut report = PackReport::new(dir, &out, started.elapsed().as_secs_f64());
    let mut code = Exit::failed_if(!out.stayed.is_empty());
    if !o.json {
        for f in &out.stayed {
            eprintln!("reclaim pack: {} stays: {}", quote(&f.path), f.reason);
        }
    }
    if let Some(sig) = out.interrupted {
        if o.json {
            say(&crate::ui::pack::json(&report));
        } else {
            interrupted(dir, &out, sig);
        }
        return super::stopped_by(sig);
    }
    if o.mount && !mount_it(o, &out, &mut report) {
        code = Exit::Failed;
    }
    if o.json {
        say(&crate::ui::pack::json(&report));
    } else {
        say(&crate::ui::pack::summary(
            &out,
            &report,
            dir,
            o.pack.keep_originals,
        ));
    }
    code.into()
}

/// The line a stop signal leaves: what was removed, what is left, and how to finish.
fn interrupted(dir: &Path, out: &PackOutcome, sig: i32) {
    let left = out
        .entries
        .saturating_sub(out.removed_files + out.removed_dirs);
    eprintln!(
        "reclaim pack: interrupted ({}): {} removed; up to {} still in {}, all of it in {} (verified); run `reclaim pack {}` again to finish",
        interrupt::name(sig),
        plural(out.removed_files, "file", "files"),
        plural(left, "entry", "entries"),
        quote(dir),
        quote(&out.archive),
        quote(dir),
    );
}

/// With --mount: says where the engine mounted the archive (or why it did not) and how to mount
/// it at boot (into `report`): an fstab line or a unit only for paths no other user can change
/// (`path_is_steady`), since boot mounts whatever they name then. Whether all of that worked
/// (each failure said on stderr).
fn mount_it(o: &PackOptions, out: &PackOutcome, report: &mut PackReport) -> bool {
    let Some(m) = &out.mounted else {
        let why = out.not_mounted.as_deref().unwrap_or(if out.already_done {
            "the directory is gone (it was packed before)"
        } else {
            "nothing was removed, so there is nothing to mount over"
        });
        eprintln!(
            "reclaim pack: not mounting {} on {}: {why}",
            quote(&out.archive),
            quote(&o.pack.dir)
        );
        return false;
    };
    report.mounted = Some(match m.how {
        How::Kernel => "kernel",
        How::Fuse => "squashfuse",
    });
    report.mounted_on = Some(PathField::new(&m.at));
    let me = rustix::process::geteuid().as_raw();
    for p in [&m.at, &out.archive] {
        if let Err(why) = crate::sys::safeopen::path_is_steady(p, me) {
            eprintln!(
                "reclaim pack: mounted, but no boot-time mount is offered for {}: {why} (another user could point it elsewhere before the next boot)",
                quote(p)
            );
            return false;
        }
    }
    let Some(units) = &o.mount_unit else {
        report.fstab = Some(mount::fstab_line(&out.archive, &m.at));
        return true;
    };
    match mount::write_unit(units, &out.archive, &m.at) {
        Ok(p) => {
            report.unit = Some(PathField::new(&p));
            true
        }
        Err(errno) => {
            eprintln!(
                "reclaim pack: cannot write the unit into {}: {}",
                quote(units),
                crate::sys::error::errno_text(errno)
            );
            false
        }
    }
}

/// Says why nothing was removed; the exit code.
fn failed(dir: &Path, e: &PackError) -> ExitCode {
    match e {
        PackError::Refused(list) => {
            for (p, why) in list {
                eprintln!("reclaim pack: {}: {why}", quote(p));
            }
            eprintln!("reclaim pack: {e}: move or remove them first (nothing was written)");
            Exit::Usage.into()
        }
        PackError::Interrupted(sig) => {
            eprintln!(
                "reclaim pack: interrupted ({}) before the archive was complete: {} is whole, nothing was removed, the partial archive was deleted",
                interrupt::name(*sig),
                quote(dir)
            );
            super::stopped_by(*sig)
        }
        e if e.is_usage() => {
            eprintln!("reclaim pack: {e}");
            Exit::Usage.into()
        }
        e => {
            eprintln!("reclaim pack: {e}; {} was not touched", quote(dir));
            Exit::Failed.into()
        }
    }
}

/// `reclaim unpack`.
pub fn run_unpack(o: &UnpackOptions) -> ExitCode {
    interrupt::ignore_sigpipe();
    super::catch_signals(true);
    let started = Instant::now();
    let progress = Progress::start(o.json);
    let r = unpack::unpack(&o.archive, &o.dest, o.same_owner, &|n, b| {
        progress.unpacked(n, b)
    });
    progress.clear();
    let u = match r {
        Ok(u) => u,
        Err(UnpackError::Interrupted) => {
            let sig = interrupt::requested().unwrap_or(libc::SIGINT);
            eprintln!(
                "reclaim unpack: interrupted ({}): {} holds part of the tree; remove it and unpack again",
                interrupt::name(sig),
                quote(&o.dest)
            );
            return super::stopped_by(sig);
        }
        Err(e @ UnpackError::Usage(..)) => {
            eprintln!("reclaim unpack: {e}");
            return Exit::Usage.into();
        }
        Err(e) => {
            eprintln!("reclaim unpack: {e}");
            return Exit::Failed.into();
        }
    };
    if o.json {
        let elapsed = started.elapsed().as_secs_f64();
        let report = UnpackReport::new(&o.archive, &o.dest, &u, elapsed);
        say(&crate::ui::pack::json(&report));
    } else {
        for (p, why) in &u.failed {
            eprintln!("reclaim unpack: {}: {why}", quote(p));
        }
        say(&crate::ui::pack::unpacked(&u, &o.dest));
    }
    Exit::failed_if(!u.failed.is_empty()).into()
}
