use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use reclaim::cli::{Cli, Command, PaceArgs};
use reclaim::pace::Pacing;
use reclaim::remove::Options;
use reclaim::rm::{Mode, Request};

/// The latency budget for other I/O when large files are freed and none is given.
const DEFAULT_MAX_LATENCY: std::time::Duration = std::time::Duration::from_millis(20);

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
    let cli = Cli::parse();
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
                progress: std::io::stderr().is_terminal(),
                threads_given: a.threads.is_some(),
                iops: a.pace.iops,
                pace_trees: a.pace.max_latency.is_some(),
                pacing: pacing(&a.pace, a.pace_trace),
                mode: if a.mode.background {
                    Mode::Background
                } else if a.mode.wait {
                    Mode::Wait
                } else {
                    Mode::Now
                },
                grace: a.grace,
                durable: a.durable,
                entry_pacing: reclaim::reaper::entry_pacing(&a.pace),
                reaper_args: a.pace.to_args(),
                known_sizes: Default::default(),
                print_summary: true,
                profile: a.profile,
                small_dir_stats: a.small_dir_stats.as_deref().map(|v| v == "on"),
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
        Command::Restore(a) => ExitCode::from(reclaim::trash::restore::command(
            &a.entries,
            a.json,
            a.trash.as_deref(),
        )),
        Command::Reap(a) => {
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
                eprintln!(
                    "reclaim man: cannot write into {}: {e}",
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

fn pacing(p: &PaceArgs, trace: Option<std::path::PathBuf>) -> Pacing {
    if p.fast {
        Pacing::fast()
    } else {
        Pacing {
            max_latency: Some(p.max_latency.unwrap_or(DEFAULT_MAX_LATENCY)),
            rate: p.rate,
            trace,
        }
    }
}
