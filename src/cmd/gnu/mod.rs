//! reclaim as GNU `rm`: invoked through a link or copy named `rm`, it takes coreutils 9.x's
//! options, asks its questions, prints its `-v` lines and messages in its order, and exits as
//! it does. The removal is the engine's GNU mode (`engine/gnu/`); this module parses the
//! options, words its messages and questions and puts them on the terminal (`talk.rs`), and
//! picks the exit code.

pub mod args;
mod prompt;
mod talk;

use crate::cmd::exit::Exit;
use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use crate::engine::gnu::{Remover, Status};
use args::{Parsed, UsageError};

/// Whether `argv0` names `rm` (`rm`, `/usr/local/bin/rm`): then reclaim behaves as GNU `rm`.
pub fn invoked_as_rm(argv0: &OsStr) -> bool {
    let b = argv0.as_bytes();
    let base = b.rsplit(|&c| c == b'/').next().unwrap_or(b);
    base == b"rm"
}

/// Runs `rm` with `args` (without argv[0]); `program` is argv[0] as given, the prefix of
/// every message (as GNU prints it).
pub fn main(program: &OsStr, args: &[OsString]) -> ExitCode {
    // Ctrl-C stops between two entries (and a large file's shrink at a consistent point).
    crate::cmd::catch_signals(true);
    let program = program.to_string_lossy().into_owned();
    match args::parse(args) {
        Parsed::Help => {
            print!("{}", help(&program));
            finish_stdout(&program, ExitCode::SUCCESS)
        }
        Parsed::Version => {
            print!("{}", version());
            finish_stdout(&program, ExitCode::SUCCESS)
        }
        Parsed::Usage(e) => {
            usage_error(&program, &e, args);
            Exit::Failed.into()
        }
        Parsed::Remove(o) => remove(&program, &o),
    }
}

fn usage_error(program: &str, e: &UsageError, args: &[OsString]) {
    let mut err = std::io::stderr().lock();
    for l in &e.lines {
        let _ = writeln!(err, "{program}: {l}");
    }
    for l in &e.raw {
        let _ = writeln!(err, "{l}");
    }
    if e.dash_hint {
        // coreutils' diagnose_leading_hyphen: every argument that looks like an option and
        // names an existing file (the first one).
        for a in args {
            let b = a.as_bytes();
            if b.len() > 1 && b[0] == b'-' && rustix::fs::lstat(a.as_os_str()).is_ok() {
                let _ = writeln!(
                    err,
                    "Try '{program} ./{}' to remove the file {}.",
                    crate::sys::quote::quote_if_needed(a),
                    crate::sys::quote::quote(a)
                );
                break;
            }
        }
    }
    if e.try_help {
        let _ = writeln!(err, "Try '{program} --help' for more information.");
    }
}

/// `-I`'s one question (before more than three arguments, or any recursive removal); true
/// when the answer is yes or there is nothing to ask.
pub fn confirm_once(program: &str, n: usize, recursive: bool) -> bool {
    if !(recursive || n > 3) {
        return true;
    }
    let plural = if n == 1 { "" } else { "s" };
    let how = if recursive { " recursively" } else { "" };
    eprint!("{program}: remove {n} argument{plural}{how}? ");
    let _ = std::io::stderr().flush();
    prompt::yes_or_no()
}

/// Removes `o.operands` as GNU rm does (also `reclaim rm -i`, with `program` "reclaim").
pub fn remove(program: &str, o: &args::GnuRmOptions) -> ExitCode {
    let root = if o.recursive {
        match crate::engine::target::root_ident() {
            Ok(ident) => Some(ident),
            Err(e) => {
                eprintln!(
                    "{program}: failed to get attributes of '/': {}",
                    crate::sys::error::errno_text(e)
                );
                return Exit::Failed.into();
            }
        }
    } else {
        None
    };
    if o.prompt_once() && !confirm_once(program, o.operands.len(), o.recursive) {
        return ExitCode::SUCCESS;
    }
    let out: Box<dyn Write> = if std::io::stdout().is_terminal() {
        Box::new(std::io::LineWriter::new(std::io::stdout()))
    } else {
        Box::new(std::io::BufWriter::with_capacity(4096, std::io::stdout()))
    };
    let rules = o.rules(std::io::stdin().is_terminal());
    let mut r = Remover::new(&rules, talk::Terminal::new(program, out), root);
    let mut status = Status::Ok;
    let mut stopped_in: Option<(usize, &OsString)> = None;
    for (i, a) in o.operands.iter().enumerate() {
        if crate::sys::interrupt::stopping() {
            stopped_in = Some((i, a));
            break;
        }
        status.update(r.operand(a));
        if crate::sys::interrupt::stopping() {
            stopped_in = Some((i + 1, a));
            break;
        }
    }
    let mut out = r.into_talk().into_output();
    if let Err(e) = out.flush() {
        return write_error(program, &e);
    }
    drop(out);
    if let (Some(sig), Some((next, current))) = (crate::sys::interrupt::requested(), stopped_in) {
        // Unlike GNU rm (which dies), say what is left: a large file being shrunk stops at a
        // consistent point too.
        let rest = o.operands.len() - next;
        let not_started = match rest {
            0 => String::new(),
            1 => "; 1 more argument not started".into(),
            n => format!("; {n} more arguments not started"),
        };
        eprintln!(
            "{program}: interrupted by {}: {} may be partly removed{not_started}",
            crate::sys::interrupt::name(sig),
            crate::sys::quote::quote(current)
        );
        return crate::cmd::stopped_by(sig);
    }
    finish_stdout(
        program,
        if status == Status::Error {
            Exit::Failed.into()
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// gnulib's `close_stdout`: a failed write to stdout is an error.
fn finish_stdout(program: &str, code: ExitCode) -> ExitCode {
    match std::io::stdout().flush() {
        Ok(()) => code,
        Err(e) => write_error(program, &e),
    }
}

fn write_error(program: &str, e: &std::io::Error) -> ExitCode {
    let text = e
        .raw_os_error()
        .map(|n| crate::sys::error::errno_text(rustix::io::Errno::from_raw_os_error(n)))
        .unwrap_or_else(|| e.to_string());
    eprintln!("{program}: write error: {text}");
    Exit::Failed.into()
}

/// `rm --help`: GNU's text, then what differs here.
pub fn help(program: &str) -> String {
    format!(
        "\
Usage: {program} [OPTION]... [FILE]...
Remove (unlink) the FILE(s).

  -f, --force           ignore nonexistent files and arguments, never prompt
  -i                    prompt before every removal
  -I                    prompt once before removing more than three files, or
                          when removing recursively; less intrusive than -i,
                          while still giving protection against most mistakes
      --interactive[=WHEN]  prompt according to WHEN: never, once (-I), or
                          always (-i); without WHEN, prompt always
      --one-file-system  when removing a hierarchy recursively, skip any
                          directory that is on a file system different from
                          that of the corresponding command line argument
      --no-preserve-root  do not treat '/' specially (reclaim: '/' is still
                          refused)
      --preserve-root[=all]  do not remove '/' (default);
                              with 'all', reject any command line argument
                              on a separate device from its parent
  -r, -R, --recursive   remove directories and their contents recursively
  -d, --dir             remove empty directories
  -v, --verbose         explain what is being done
      --help        display this help and exit
      --version     output version information and exit

By default, rm does not remove directories.  Use the --recursive (-r or -R)
option to remove each listed directory, too, along with all of its contents.

To remove a file whose name starts with a '-', for example '-foo',
use one of these commands:
  {program} -- -foo

  {program} ./-foo

Note that if you use rm to remove a file, it might be possible to recover
some of its contents, given sufficient expertise and/or time.  For greater
assurance that the contents are truly unrecoverable, consider using shred(1).

This is reclaim {version} invoked as rm: GNU coreutils' rm options, prompts,
messages, order and exit status, with reclaim's parallel engine underneath
when neither -v nor a prompt needs GNU's order.  Differences from GNU rm:
  - '/' is refused even with --no-preserve-root.
  - Files of 64 MiB and more are freed gently: renamed away at once, then
    shrunk in steps paced by the latency other I/O sees (as reclaim rm).
  - Ctrl-C stops between two entries and says what is left (exit 130).
  - Symlinks are never followed and directories never changed into; a
    directory replaced while it is being removed is skipped with
    \"traversal failed\".
  - -v in a directory of over 100,000 entries may list them in another order
    (GNU reads and sorts such a directory in batches).
For reclaim's own options (--background, --wait, pacing, --json), run
'reclaim rm --help'.
",
        version = env!("CARGO_PKG_VERSION"),
    )
}

/// `rm --version`.
pub fn version() -> String {
    format!(
        "rm (reclaim) {}\n\
         Compatible with rm (GNU coreutils) 9.x; not GNU software.\n\
         License: MIT or Apache-2.0, at your option.\n",
        env!("CARGO_PKG_VERSION")
    )
}
