//! `reclaim rm`: checks what the flags ask for together, joins an MPI job, asks `-I`'s question
//! or hands `-i` to GNU's one-at-a-time walk (`gnu`), sets up a selection (`--name`, `--from`,
//! ...: `engine::select`, with `--list`'s file opened here), runs the removal (`reaper::rm`)
//! with its progress on the terminal (`ui::report::RmView`), prints the summary (and the
//! selection's tables, `ui::select`) and picks the exit code.

use crate::cmd::exit::Exit;
use std::io::IsTerminal;
use std::process::ExitCode;

use crate::cmd::gnu::args::{Prompting, When};
use crate::engine::select::Selection;
use crate::reaper::rm::{Asked, Context, Mode, Removal, Request};
use crate::ui::report::RmView;

/// What `reclaim rm` was asked, resolved once from its flags and the configuration
/// (`cli::rm`): the removal itself (`Request`: paths, mode, pacing, the engine's options as
/// asked) and what only this command does with it (prompts, the JSON report, joining MPI).
#[derive(Clone, Debug)]
pub struct RmOptions {
    pub request: Request,
    /// `-f`, `-i`, `-I`, `--interactive` (the last one counts; `-f` is `request.force`).
    pub prompting: Prompting,
    pub json: bool,
    pub mpi: bool,
}

/// A usage error: the message (after `reclaim rm: `), then the pointer to `--help`; exit 2.
fn usage(message: &str) -> ExitCode {
    eprintln!("reclaim rm: {message}\nTry 'reclaim rm --help' for more information.");
    Exit::Usage.into()
}

/// `reclaim rm`.
pub fn run(o: &RmOptions) -> ExitCode {
    let r = &o.request;
    let force = r.force;
    let when = o.prompting.when.unwrap_or(When::Never);
    // Under mpirun: every rank joins the job before anything else is done.
    let job = match crate::engine::spread::start(o.mpi) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("reclaim rm: {e}");
            return Exit::Usage.into();
        }
    };
    let hiding = r.mode != Mode::Now;
    if job.is_some() && (hiding || when != When::Never) {
        // Every rank stops; rank 0 says why.
        if crate::engine::spread::leads() {
            return usage(
                "under MPI the ranks remove in the foreground: -i, -I, --background and --wait do not apply",
            );
        }
        return Exit::Usage.into();
    }
    // A selection: checked before anything runs (every rank stops; rank 0 says why).
    if let Some(s) = &r.select {
        let c = Context {
            recursive: r.recursive,
            operands: r.paths.len(),
            hiding,
            prompt_each: when == When::Always,
            mpi: job.is_some(),
        };
        if let Err(e) = s.check(&c) {
            if crate::engine::spread::leads() {
                return usage(&e.to_string());
            }
            return Exit::Usage.into();
        }
    }
    match when {
        When::Always => return one_at_a_time(o, hiding),
        When::Once
            if !r.paths.is_empty()
                && !super::gnu::confirm_once("reclaim", r.paths.len(), r.recursive) =>
        {
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let from = r.select.as_ref().is_some_and(|s| s.from.is_some());
    if r.paths.is_empty() && !force && !from {
        return usage("missing operand");
    }
    if r.grace.is_some() && r.mode != Mode::Background {
        return usage("--grace needs --background (entries wait in the trash that long)");
    }
    let selection = match r.select.as_ref().map(|s| start(s, o)).transpose() {
        Ok(s) => s,
        Err(code) => return code,
    };
    super::catch_signals(true);
    let leads = crate::engine::spread::leads();
    let live = leads && std::io::stderr().is_terminal();
    let mut req = r.clone();
    req.engine.select = selection.map(std::sync::Arc::new);
    if job.is_some() {
        // Smaller pieces of one big directory, so that every rank gets some.
        req.engine.batch = 128;
    }
    // Off a terminal without -v or --json nothing but the errors is said, as GNU rm.
    req.count_bytes = live || o.json || r.verbose || r.engine.dry_run;
    let view = RmView::new(r.verbose, r.engine.dry_run, o.json, live && !o.json);
    let removal = crate::reaper::rm::run(&req, &view);
    view.printer().flush();
    // Under MPI, rank 0 reports for all.
    if leads {
        report(o, live, &removal, &view);
    }
    if let Some(sig) = removal.summary.interrupted {
        view.printer()
            .error_line(&crate::ui::report::interrupted(sig, &removal));
        return super::stopped_by(sig);
    }
    Exit::failed_if(!removal.failures.is_empty()).into()
}

/// `-i`: one entry at a time, with GNU's prompts and order.
fn one_at_a_time(o: &RmOptions, hiding: bool) -> ExitCode {
    let r = &o.request;
    if hiding || o.json || r.engine.dry_run {
        return usage(
            "-i asks about each entry in turn; it does not combine with --background, --wait, --json or --dry-run",
        );
    }
    let gnu = super::gnu::args::GnuRmOptions {
        prompting: o.prompting,
        one_file_system: !r.engine.cross_mounts,
        remove_empty_dirs: r.dir,
        recursive: r.recursive,
        preserve_all_root: r.preserve_all_root,
        verbose: r.verbose,
        operands: r.paths.iter().map(Into::into).collect(),
        ..Default::default()
    };
    if gnu.operands.is_empty() {
        return usage("missing operand");
    }
    super::catch_signals(true);
    super::gnu::remove("reclaim", &gnu)
}

/// The selection to run: compiled, with `--list`'s file (`-`: standard output) opened for it.
/// A usage error exits 2, a list that cannot be written 1.
fn start(s: &Asked, o: &RmOptions) -> Result<Selection, ExitCode> {
    let list = match &s.list {
        None => None,
        Some(path) => Some(open_list(path).map_err(|why| {
            eprintln!(
                "reclaim rm: cannot write the list to {}: {why}",
                crate::sys::quote::quote(path),
            );
            ExitCode::from(Exit::Failed)
        })?),
    };
    s.start(o.request.engine.dry_run, o.json, list)
        .map_err(|e| usage(&e.to_string()))
}

/// `--list FILE`'s writer: standard output for `-`, else the file, as `safeopen::file::
/// open_output` allows it (root may run this in a user's directory): made new (mode 0600), or
/// an existing regular file of one link (the caller's or root's where others may change the
/// directory), truncated only once it is known to be one, or a character device (`/dev/null`);
/// never through a symbolic link, never a FIFO (a reader that never reads would stop the run),
/// never a block device (a typo such as `--list /dev/sdb` would write the paths over the disk's
/// first blocks). With the (device, inode) of the file it writes when that is a regular file
/// (standard output redirected to one too), which the removal never takes. Err: why not, for
/// one line.
type ListOut = (
    Box<dyn std::io::Write + Send>,
    Option<crate::sys::dirfd::Ident>,
);

/// Why `--list FILE` is not written, for one line.
#[derive(Debug, thiserror::Error)]
enum ListRefused {
    #[error(
        "it is a symbolic link (never followed: name the file itself, or - for standard output)"
    )]
    Symlink,
    #[error("it is a block device; the list would be written over its data")]
    BlockDevice,
    #[error("it is a FIFO (a reader that never reads would stop the removal)")]
    Fifo,
    #[error("it is a {0}")]
    NotRegular(&'static str),
    #[error("it belongs to uid {0}, in a directory others may change (another user's file is never written over)")]
    OthersFile(u32),
    #[error("it has {0} hard links (writing it would change the others)")]
    Links(u64),
    #[error("it {0}")]
    Bad(crate::sys::safeopen::file::Bad),
    #[error("{}", crate::sys::error::errno_text(*.0))]
    Os(rustix::io::Errno),
}

fn open_list(path: &std::path::Path) -> Result<ListOut, ListRefused> {
    use crate::sys::safeopen::file::{open_output, Bad};
    use rustix::fs::FileType;
    if path.as_os_str() == "-" {
        let own = crate::sys::dirfd::fstat(std::io::stdout())
            .ok()
            .filter(|f| f.file_type == FileType::RegularFile)
            .map(|f| f.ident);
        return Ok((Box::new(std::io::stdout()), own));
    }
    let (fd, _) = open_output(path, 0o600, false).map_err(|e| match e {
        Bad::NotRegular("symbolic link") => ListRefused::Symlink,
        Bad::NotRegular("block device") => ListRefused::BlockDevice,
        Bad::NotRegular("FIFO") => ListRefused::Fifo,
        Bad::NotRegular(what) => ListRefused::NotRegular(what),
        Bad::NotOwners { found, .. } => ListRefused::OthersFile(found),
        Bad::Links(n) => ListRefused::Links(n),
        e => ListRefused::Bad(e),
    })?;
    let facts = crate::sys::dirfd::fstat(&fd).map_err(ListRefused::Os)?;
    let own = (facts.file_type == FileType::RegularFile).then_some(facts.ident);
    let f = std::fs::File::from(fd);
    Ok((Box::new(std::io::BufWriter::with_capacity(1 << 20, f)), own))
}

/// The closing report: the JSON object, or a paragraph on stderr (on a terminal, with -v or
/// for a dry run), and on a terminal the recap of failures when there were several.
fn report(o: &RmOptions, live: bool, r: &Removal, view: &RmView) {
    let summary = &r.summary;
    if o.json {
        println!(
            "{}",
            serde_json::to_string(summary).expect("summary serializes")
        );
    } else if o.request.mode == Mode::Background && !summary.hidden.is_empty() {
        // For scripts (`id=$(reclaim rm --background X)`, a pipe, a file): each entry's ID on
        // stdout, one a line, in the order of the arguments; for people, the paragraph.
        if !std::io::stdout().is_terminal() {
            for h in &summary.hidden {
                println!("{}", h.id);
            }
        }
        if live || o.request.verbose {
            eprintln!("{}", crate::ui::report::hidden(summary));
        }
    } else if live || o.request.verbose || o.request.engine.dry_run {
        // Off a terminal (cron, scripts) nothing but the errors, as GNU rm.
        eprintln!("{}", crate::ui::report::summary(summary, o.request.verbose));
        for line in summary.selection.iter().flat_map(crate::ui::select::lines) {
            eprintln!("{line}");
        }
    }
    // A whole file system's condition: the first path was said, the others are counted.
    for line in view.printer().conditions() {
        view.printer().error_line(&line);
    }
    crate::ui::report::recap(live && !o.json, &r.failures);
}
