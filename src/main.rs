use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use reclaim::cli::{Cli, Command, RmArgs, When};
use reclaim::pace::EntryPacing;
use reclaim::remove::Options;
use reclaim::rm::{Mode, Request};

fn main() -> ExitCode {
    // Before any thread starts: the locale's character set decides how names are quoted.
    reclaim::quote::utf8_locale();
    // `reclaim` in ps/pgrep/top, also when started as /proc/self/exe (a reaper, a child).
    let _ = rustix::thread::set_name(c"reclaim");
    // Through a link or copy named `rm`, reclaim is GNU rm (src/gnu/).
    let mut argv = std::env::args_os();
    if let Some(argv0) = argv.next().filter(|a| reclaim::gnu::invoked_as_rm(a)) {
        return reclaim::gnu::main(&argv0, &argv.collect::<Vec<_>>());
    }
    // GNU rm's one option that may not be abbreviated (`reclaim rm` infers the others).
    if let Some(a) = std::env::args_os()
        .skip(2)
        .take_while(|a| a != "--")
        .find(|a| {
            a.len() > 4
                && a != "--no-preserve-root"
                && "--no-preserve-root"
                    .as_bytes()
                    .starts_with(a.as_encoded_bytes())
        })
    {
        if std::env::args_os().nth(1).is_some_and(|c| c == "rm") {
            eprintln!(
                "reclaim rm: you may not abbreviate the --no-preserve-root option ({})\nTry 'reclaim rm --help' for more information.",
                a.to_string_lossy()
            );
            return ExitCode::from(2);
        }
    }
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    // A closed stdout (`reclaim status | head -1`) ends the command quietly, as for any Unix
    // filter, instead of a panic on EPIPE. Not for a reaper: its work must not stop because
    // whoever read its output went away (it stops at consistent points on SIGTERM).
    if !matches!(cli.command, Command::Reap(_)) {
        reclaim::gnu::default_sigpipe();
    }
    // A HOME or XDG directory that is not the caller's own is not used (`userdirs`): said once.
    for line in reclaim::userdirs::refused() {
        eprintln!("reclaim: {line}");
    }
    let config = match reclaim::config::Config::load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("reclaim: config: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Rm(mut a) => {
            config.apply_rm(&mut a);
            let asked = prompting(&a, matches.subcommand_matches("rm"));
            a.force = asked.ignore_missing;
            // Under mpirun: every rank joins the job before anything else is done.
            let _job = match reclaim::spread::start(a.mpi) {
                Ok(job) => job,
                Err(e) => {
                    eprintln!("reclaim rm: {e}");
                    return ExitCode::from(2);
                }
            };
            if _job.is_some() && (a.mode.background || a.mode.wait || asked.when != When::Never) {
                // Every rank stops; rank 0 says why.
                if reclaim::spread::leads() {
                    eprintln!(
                        "reclaim rm: under MPI the ranks remove in the foreground: -i, -I, --background and --wait do not apply\nTry 'reclaim rm --help' for more information."
                    );
                }
                return ExitCode::from(2);
            }
            let leads = reclaim::spread::leads();
            match asked.when {
                When::Always => {
                    if a.mode.background || a.mode.wait || a.json || a.dry_run {
                        eprintln!(
                            "reclaim rm: -i asks about each entry in turn; it does not combine with --background, --wait, --json or --dry-run\nTry 'reclaim rm --help' for more information."
                        );
                        return ExitCode::from(2);
                    }
                    let o = reclaim::gnu::args::Options {
                        ignore_missing: a.force,
                        interactive: reclaim::gnu::args::Interactive::Always,
                        one_file_system: !a.cross_mounts,
                        remove_empty_dirs: a.dir,
                        recursive: a.recursive,
                        preserve_all_root: a.preserve_root.as_deref() == Some("all"),
                        verbose: a.verbose,
                        operands: a.paths.clone(),
                        ..Default::default()
                    };
                    if o.operands.is_empty() {
                        eprintln!(
                            "reclaim rm: missing operand\nTry 'reclaim rm --help' for more information."
                        );
                        return ExitCode::from(2);
                    }
                    reclaim::interrupt::install(true);
                    return reclaim::gnu::remove("reclaim", &o);
                }
                When::Once
                    if !a.paths.is_empty()
                        && !reclaim::gnu::confirm_once("reclaim", a.paths.len(), a.recursive) =>
                {
                    return ExitCode::SUCCESS;
                }
                _ => {}
            }
            if a.paths.is_empty() && !a.force {
                eprintln!(
                    "reclaim rm: missing operand\nTry 'reclaim rm --help' for more information."
                );
                return ExitCode::from(2);
            }
            if a.grace.is_some() && !a.mode.background {
                eprintln!(
                    "reclaim rm: --grace needs --background (entries wait in the trash that long)\nTry 'reclaim rm --help' for more information."
                );
                return ExitCode::from(2);
            }
            let nofile = reclaim::limits::raise_nofile();
            reclaim::interrupt::install(true);
            let mut engine = Options {
                cross_mounts: a.cross_mounts,
                dry_run: a.dry_run,
                stat_files: a.stat_files,
                fd_budget: a.fd_budget as usize,
                ..Options::default()
            };
            if let Some(n) = a.batch_size {
                engine.batch = n as usize;
            } else if _job.is_some() {
                // Smaller pieces of one big directory, so that every rank gets some.
                engine.batch = 128;
            }
            if let Some(t) = a.threads {
                engine.threads = t.into();
                engine.batch_threads = engine.batch_threads.min(engine.threads);
            }
            engine.fd_budget = reclaim::limits::fd_budget(engine.fd_budget, nofile, engine.threads);
            let req = Request {
                paths: a.paths.into_iter().map(Into::into).collect(),
                recursive: a.recursive,
                force: a.force,
                dir: a.dir,
                verbose: a.verbose,
                json: a.json,
                progress: leads && std::io::stderr().is_terminal(),
                threads_given: a.threads.is_some(),
                pace: EntryPacing::from(&a.pace),
                pace_trace: a.pace_trace,
                mode: if a.mode.background {
                    Mode::Background
                } else if a.mode.wait {
                    Mode::Wait
                } else {
                    Mode::Now
                },
                grace: a.grace,
                durable: a.durable,
                known_sizes: Default::default(),
                // Under MPI, rank 0 reports for all.
                print_summary: leads,
                profile: a.profile,
                small_dir_stats: a.small_dir_stats.as_deref().map(|v| v == "on"),
                batch_threads: a.batch_threads.map(usize::from),
                preserve_all_root: a.preserve_root.as_deref() == Some("all"),
                engine,
            };
            let summary = reclaim::rm::run(&req);
            ExitCode::from(match summary.interrupted {
                Some(sig) => reclaim::interrupt::exit_code(sig),
                None => u8::from(!summary.errors.is_empty()),
            })
        }
        Command::Status(a) => ExitCode::from(reclaim::status::command(
            a.json,
            a.count,
            a.trash.as_deref(),
        )),
        Command::Restore(a) => {
            if a.to.is_some() && a.entries.len() != 1 {
                eprintln!(
                    "reclaim restore: --to takes one entry\nTry 'reclaim restore --help' for more information."
                );
                return ExitCode::from(2);
            }
            ExitCode::from(reclaim::trash::restore::command(
                &a.entries,
                a.json,
                a.trash.as_deref(),
                a.to.as_deref(),
            ))
        }
        Command::Reap(mut a) => {
            config.apply_reap(&mut a);
            reclaim::limits::raise_nofile();
            // A detached reaper ignores the terminal's hangup; the rest stop at a consistent
            // point on SIGINT/SIGTERM/SIGHUP.
            reclaim::interrupt::install(!a.detached);
            ExitCode::from(reclaim::reaper::command(&a))
        }
        Command::Prune(mut a) => {
            if let Err(e) = config.apply_prune(&mut a) {
                eprintln!("reclaim prune: {e}");
                return ExitCode::from(2);
            }
            reclaim::limits::raise_nofile();
            reclaim::interrupt::install(true);
            ExitCode::from(reclaim::prune::command(&a, std::io::stderr().is_terminal()))
        }
        Command::Scan(a) => {
            let _job = match reclaim::spread::start(a.mpi) {
                Ok(job) => job,
                Err(e) => {
                    eprintln!("reclaim scan: {e}");
                    return ExitCode::from(2);
                }
            };
            reclaim::limits::raise_nofile();
            ExitCode::from(reclaim::scan::command(&a))
        }
        Command::Completions { shell } => {
            reclaim::generate::completions(shell);
            ExitCode::SUCCESS
        }
        Command::Man { dir } => match reclaim::generate::man_pages(&dir) {
            Ok(pages) => {
                for p in pages {
                    println!("{}", p.display());
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                let why = match e.raw_os_error() {
                    Some(n) => reclaim::error::errno_text(rustix::io::Errno::from_raw_os_error(n)),
                    None => e.to_string(),
                };
                eprintln!(
                    "reclaim man: cannot write into {}: {why} (give an existing directory)",
                    reclaim::quote::quote(&dir)
                );
                ExitCode::from(1)
            }
        },
        Command::Bench(a) => match reclaim::bench::run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("reclaim bench: {e:#}");
                ExitCode::from(1)
            }
        },
    }
}

/// What `-f`, `-i`, `-I` and `--interactive` add up to: the last one given decides when to
/// ask; `-f` ignores missing files unless `-i`, `-I` or `--interactive=once|always` follow it
/// (GNU rm's rules).
struct Asked {
    when: When,
    ignore_missing: bool,
}

fn prompting(a: &RmArgs, m: Option<&clap::ArgMatches>) -> Asked {
    let last = |id: &str| {
        m.filter(|m| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
            .and_then(|m| m.indices_of(id))
            .and_then(|i| i.max())
    };
    let force = last("force");
    let always = last("prompt_always");
    let once = last("prompt_once");
    let interactive = last("interactive");
    let mut moves: Vec<(usize, When)> = Vec::new();
    moves.extend(force.map(|i| (i, When::Never)));
    moves.extend(always.map(|i| (i, When::Always)));
    moves.extend(once.map(|i| (i, When::Once)));
    moves.extend(interactive.map(|i| (i, a.interactive.unwrap_or(When::Always))));
    moves.sort_by_key(|m| m.0);
    // Forced by the configuration (no index) unless an explicit question came after.
    let mut ignore_missing = a.force;
    let mut when = When::Never;
    for (i, w) in moves {
        match w {
            When::Never if Some(i) == force => ignore_missing = true,
            When::Never => {}
            _ => ignore_missing = false,
        }
        when = w;
    }
    Asked {
        when,
        ignore_missing,
    }
}
