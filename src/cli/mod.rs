//! The command line: the clap definition (`args`), the config file (`config`), the human
//! quantities (`units`), man pages and completions (`generate`). `parse` turns the flags, with
//! the configuration's defaults, into the plain options of `cmd`, once; nothing below this
//! layer sees clap. Prints nothing: what goes wrong comes back as an `Error`.

pub mod args;
pub mod config;
pub mod generate;
pub mod units;

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use crate::cmd::gnu::args::{PromptFlag, Prompting, When};
use crate::cmd::{self, Command, Invocation};
use crate::engine::prune::policy::{Policy, SortBy};
use crate::reaper::rm::Mode;
use crate::trash::meta::EntryPacing;
use args::{Cli, Deferred, PaceArgs, PackArgs, PruneArgs, ReapArgs, RmArgs, ScanArgs, SortArg};
use config::Config;

/// Why the command line is not one to run.
#[derive(Debug)]
pub enum Error {
    /// clap's own (also `--help` and `--version`): `exit()` prints it and exits as clap does.
    Clap(clap::Error),
    /// A usage error of ours (exit status 2): the configuration's warnings and the message
    /// to print.
    Usage {
        warnings: Vec<String>,
        message: String,
    },
}

fn usage(warnings: Vec<String>, message: String) -> Error {
    Error::Usage { warnings, message }
}

/// Reads the command line `args` (argv[0] first) and the configuration.
pub fn parse(args: Vec<OsString>) -> Result<Invocation, Error> {
    parse_by(args, true)
}

/// `parse`; `plain`: the common `reclaim rm` is read without clap (`plain_rm`).
fn parse_by(args: Vec<OsString>, plain: bool) -> Result<Invocation, Error> {
    no_preserve_root_abbreviated(&args)?;
    let (cli, rm_flags) = match plain.then(|| plain_rm(&args)).flatten() {
        Some((a, flags)) => (
            Cli {
                command: args::Command::Rm(Deferred(a)),
            },
            flags,
        ),
        None => {
            let matches = Cli::command()
                .try_get_matches_from(&args)
                .map_err(Error::Clap)?;
            let cli = Cli::from_arg_matches(&matches).map_err(Error::Clap)?;
            let flags = match &cli.command {
                args::Command::Rm(Deferred(a)) => prompt_flags(a, matches.subcommand_matches("rm")),
                _ => Vec::new(),
            };
            (cli, flags)
        }
    };
    let mut warnings = Vec::new();
    let config = match Config::load(&mut warnings) {
        Ok(c) => c,
        Err(e) => return Err(usage(warnings, format!("reclaim: config: {e}"))),
    };
    let command = match cli.command {
        args::Command::Rm(Deferred(mut a)) => {
            config.apply_rm(&mut a);
            let prompting = prompting(&a, rm_flags);
            Command::Rm(Box::new(rm(a, prompting)))
        }
        args::Command::Status(Deferred(mut a)) => {
            config.apply_status(&mut a);
            Command::Status {
                json: a.json,
                brief: a.brief,
                count: a.count,
                trash: a.trash,
                min_free: a.min_free.unwrap_or_default(),
            }
        }
        args::Command::Restore(Deferred(a)) => Command::Restore {
            entries: a.entries,
            json: a.json,
            trash: a.trash,
            to: a.to,
        },
        args::Command::Reap(Deferred(mut a)) => {
            if a.now && !a.all && a.ids.is_empty() {
                return Err(usage(
                    warnings,
                    "reclaim reap: --now needs entry IDs (from `reclaim status`) or --all".into(),
                ));
            }
            config.apply_reap(&mut a);
            let early = match a.early.as_deref().map(serde_json::from_str).transpose() {
                Ok(e) => e,
                Err(e) => return Err(usage(warnings, format!("reclaim reap: --early: {e}"))),
            };
            Command::Reap(reap(a, early))
        }
        args::Command::Prune(Deferred(mut a)) => {
            if a.free.is_some() && a.keep_free.is_some() {
                return Err(usage(
                    warnings,
                    "reclaim prune: --free (more than free now) and --keep-free (free in all) \
                     cannot be used together: give one"
                        .into(),
                ));
            }
            if let Err(e) = config.apply_prune(&mut a) {
                return Err(usage(warnings, format!("reclaim prune: {e}")));
            }
            // A flag wins over the policy's keep_free.
            if let Some(more) = a.free {
                a.keep_free = Some(crate::engine::prune::policy::FreeTarget::More(more));
            }
            let pattern = a.pattern.as_deref().map(crate::engine::glob::Name::new);
            let pattern = match pattern.transpose() {
                Ok(p) => p,
                Err(e) => return Err(usage(warnings, format!("reclaim prune: --match: {e}"))),
            };
            Command::Prune(Box::new(prune(a, pattern)))
        }
        args::Command::Scan(Deferred(a)) => Command::Scan(scan(a)),
        args::Command::Browse(Deferred(mut a)) => {
            let (grace, floor) = config.apply_browse(&mut a);
            Command::Browse(Box::new(browse(a, grace, floor)))
        }
        args::Command::Bench(Deferred(a)) => Command::Bench(cmd::bench::BenchOptions {
            quick: a.quick,
            dir: a.dir,
            files: a.files,
            shape: a.shape.shape(32, 100),
            runs: a.runs,
            cold: a.cold,
            threads: a.threads,
        }),
        args::Command::Pack(Deferred(a)) => Command::Pack(Box::new(pack(a))),
        args::Command::Unpack(Deferred(a)) => Command::Unpack(cmd::pack::UnpackOptions {
            archive: a.archive,
            dest: a.dest,
            same_owner: a.same_owner,
            json: a.json,
        }),
        args::Command::Completions { shell } => Command::Completions(generate::completions(shell)),
        args::Command::Man { dir } => Command::Man {
            dir,
            pages: generate::man_pages(),
        },
    };
    Ok(Invocation { command, warnings })
}

/// GNU rm's one option that may not be abbreviated (`reclaim rm` infers the others).
fn no_preserve_root_abbreviated(args: &[OsString]) -> Result<(), Error> {
    let abbreviated = args.iter().skip(2).take_while(|a| *a != "--").find(|a| {
        a.len() > 4
            && *a != "--no-preserve-root"
            && "--no-preserve-root"
                .as_bytes()
                .starts_with(a.as_encoded_bytes())
    });
    match abbreviated {
        Some(a) if args.get(1).is_some_and(|c| c == "rm") => Err(usage(Vec::new(), format!(
                "reclaim rm: you may not abbreviate the --no-preserve-root option ({})\nTry 'reclaim rm --help' for more information.",
                a.to_string_lossy()
            ))),
        _ => Ok(()),
    }
}

/// `reclaim rm` with nothing but the flags `-r`, `-R`, `-f` and `-v` (alone or together, as
/// `-rf`) and operands that neither are empty nor start with `-`: the common command, read
/// without clap, whose definition of rm's hundred flags cost a small removal a tenth of its
/// start (bench/RESULTS.md, 2026-11-29, "Fixed costs: std's runtime start left out"). The same
/// `RmArgs` and prompt flags as clap's reading (`tests::plain_rm_reads_as_clap_does` compares
/// the two over every mix of those flags and operands); anything else, `--` and `-` too, goes
/// to clap.
fn plain_rm(args: &[OsString]) -> Option<(RmArgs, Vec<PromptFlag>)> {
    if args.get(1)? != "rm" {
        return None;
    }
    let mut a = RmArgs::unflagged();
    for arg in &args[2..] {
        match arg.as_encoded_bytes() {
            [b'-', flags @ ..] if !flags.is_empty() => {
                for f in flags {
                    match f {
                        b'r' | b'R' => a.recursive = true,
                        b'f' => a.force = true,
                        b'v' => a.verbose = true,
                        _ => return None,
                    }
                }
            }
            [] | [b'-'] => return None,
            _ => a.paths.push(arg.clone()),
        }
    }
    let flags = if a.force {
        vec![PromptFlag::Force]
    } else {
        Vec::new()
    };
    Some((a, flags))
}

/// `-f`, `-i`, `-I` and `--interactive` in the order given on the command line.
fn prompt_flags(a: &RmArgs, m: Option<&clap::ArgMatches>) -> Vec<PromptFlag> {
    let last = |id: &str| {
        m.filter(|m| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
            .and_then(|m| m.indices_of(id))
            .and_then(|i| i.max())
    };
    let mut flags: Vec<(usize, PromptFlag)> = Vec::new();
    flags.extend(last("force").map(|i| (i, PromptFlag::Force)));
    flags.extend(last("prompt_always").map(|i| (i, PromptFlag::Interactive(When::Always))));
    flags.extend(last("prompt_once").map(|i| (i, PromptFlag::Interactive(When::Once))));
    flags.extend(last("interactive").map(|i| {
        let w = a.interactive.unwrap_or(When::Always);
        (i, PromptFlag::Interactive(w))
    }));
    flags.sort_by_key(|f| f.0);
    flags.into_iter().map(|f| f.1).collect()
}

/// The command line's prompt `flags` (`prompt_flags`), folded by GNU rm's rule
/// (`Prompting::apply`). A `-f` without a place on the command line (set by other means)
/// counts first.
fn prompting(a: &RmArgs, flags: Vec<PromptFlag>) -> Prompting {
    let mut p = Prompting {
        when: None,
        ignore_missing: a.force,
    };
    for f in flags {
        p.apply(f);
    }
    p
}

impl From<&PaceArgs> for EntryPacing {
    fn from(p: &PaceArgs) -> Self {
        EntryPacing {
            fast: p.fast,
            max_latency: p.max_latency,
            rate: p.rate,
            iops: p.iops,
            pace_trees: p.max_latency.is_some(),
        }
    }
}

impl PaceArgs {
    /// Whether any pacing flag was given.
    pub fn given(&self) -> bool {
        self.fast || self.max_latency.is_some() || self.rate.is_some() || self.iops.is_some()
    }
}

/// `reclaim rm`'s flags, resolved once: the removal asked (`Request`, with the engine's
/// options as asked; what the file system decides is added by `remove::Start` once it is
/// known) and what the command itself does (prompts, JSON, MPI).
fn rm(a: RmArgs, prompting: Prompting) -> cmd::rm::RmOptions {
    let engine = crate::engine::remove::Settings {
        threads: a.threads.map_or(0, usize::from),
        cross_mounts: a.cross_mounts,
        dry_run: a.dry_run,
        stat_files: a.stat_files,
        fd_budget: a.fd_budget as usize,
        ..Default::default()
    };
    let request = crate::reaper::rm::Request {
        paths: a.paths.iter().map(Into::into).collect(),
        recursive: a.recursive,
        force: prompting.ignore_missing,
        dir: a.dir,
        verbose: a.verbose,
        pace: EntryPacing::from(&a.pace),
        pace_trace: a.pace_trace,
        floor: a.min_free.unwrap_or_default(),
        engine,
        mode: if a.mode.background {
            Mode::Background
        } else if a.mode.wait {
            Mode::Wait
        } else {
            Mode::Now
        },
        grace: a.grace,
        durable: a.durable,
        profile: a.profile,
        small_dir_stats: a.small_dir_stats.as_deref().map(|v| v == "on"),
        batch_threads: a.batch_threads.map(usize::from),
        start_pool: a.start_pool,
        preserve_all_root: a.preserve_root.as_deref() == Some("all"),
        select: a.select.asked(),
        ..Default::default()
    };
    cmd::rm::RmOptions {
        request,
        prompting,
        json: a.json,
        mpi: a.mpi,
    }
}

fn reap(a: ReapArgs, early: Option<crate::sys::space::Pressure>) -> cmd::reap::ReapCommand {
    cmd::reap::ReapCommand {
        watch: a.watch,
        once: a.once,
        trash: a.trash,
        json: a.json,
        detached: a.detached,
        lock_fd: a.lock_fd,
        retry_failed: a.retry_failed,
        log: a.log,
        log_prefix: a.log_prefix,
        pace: a.pace.given().then(|| EntryPacing::from(&a.pace)),
        min_free: a.min_free.unwrap_or_default(),
        early,
        metrics: a.metrics,
        threads: a.threads,
        now: match (a.now, a.all) {
            (false, _) => None,
            (true, true) => Some(cmd::reap::Now::All),
            (true, false) => Some(cmd::reap::Now::Ids(a.ids)),
        },
        wait: a.wait,
    }
}

fn prune(a: PruneArgs, pattern: Option<crate::engine::glob::Name>) -> cmd::prune::PruneOptions {
    cmd::prune::PruneOptions {
        policy: Policy {
            keep_last: a.keep_last,
            keep_hourly: a.keep_hourly,
            keep_daily: a.keep_daily,
            keep_weekly: a.keep_weekly,
            keep_monthly: a.keep_monthly,
            keep_yearly: a.keep_yearly,
            keep_within: a.keep_within,
            older_than: a.older_than.map(|d| d.as_secs_f64()),
            keep_free: a.keep_free,
            max_total: a.max_total,
            sort: match a.sort.unwrap_or_default() {
                SortArg::Mtime => SortBy::Mtime,
                SortArg::Name => SortBy::Name,
            },
            allow_empty: a.allow_empty,
        },
        names: crate::engine::prune::Names {
            pattern,
            all: a.all,
        },
        dry_run: a.dry_run,
        json: a.json,
        start_pool: a.start_pool,
        mode: if a.now {
            Mode::Now
        } else if a.wait {
            Mode::Wait
        } else {
            Mode::Background
        },
        pace: EntryPacing::from(&a.pace),
        min_free: a.min_free.unwrap_or_default(),
        dirs: a.dirs,
    }
}

fn scan(a: ScanArgs) -> cmd::scan::ScanOptions {
    cmd::scan::ScanOptions {
        scan: crate::engine::scan::ScanOptions {
            paths: a.paths,
            top: a.top,
            small: a.small,
            threads: a.threads,
            cross_mounts: a.cross_mounts,
            exclude: a.exclude,
            no_estimate: a.no_estimate,
            estimate_anywhere: a.estimate,
            profile: a.profile,
            pack: crate::engine::pack::candidates::Rule::new(
                a.pack_age,
                a.time == args::ScanTime::Atime,
                a.pack_min_files,
            ),
            export: a.export,
        },
        json: a.json,
        mpi: a.mpi,
    }
}

fn browse(
    a: args::BrowseArgs,
    grace: std::time::Duration,
    floor: crate::sys::space::Floor,
) -> cmd::browse::BrowseOptions {
    cmd::browse::BrowseOptions {
        path: a.path,
        import: a.import,
        grace,
        floor,
        pace: EntryPacing::from(&a.pace),
        scan: crate::engine::scan::TreeOptions {
            threads: a.threads,
            cross_mounts: a.cross_mounts,
            small: a.small,
            pack: crate::engine::pack::candidates::Rule::new(a.pack_age, false, a.pack_min_files),
        },
        parse_age: |text| units::parse_duration(text).map_err(|e| e.to_string()),
    }
}

fn pack(a: PackArgs) -> cmd::pack::PackOptions {
    cmd::pack::PackOptions {
        pack: crate::engine::pack::PackOptions {
            dir: a.dir,
            to: a.to,
            compressor: a.compress,
            threads: a.threads.map(usize::from),
            mount: a.mount,
            keep_originals: a.keep,
            fast: a.pace.fast,
            max_latency: a.pace.max_latency,
            iops: a.pace.iops,
            profile: a.profile,
        },
        mount: a.mount,
        mount_unit: a.mount_unit,
        json: a.json,
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::time::Duration;

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        pace: PaceArgs,
    }

    fn parse(args: &[OsString]) -> PaceArgs {
        let argv = std::iter::once(OsString::from("reclaim")).chain(args.iter().cloned());
        Flags::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .pace
    }

    #[test]
    fn plain_rm_reads_as_clap_does() {
        use std::os::unix::ffi::OsStringExt;
        // Every mix of up to three of these: what `plain_rm` reads must come out as clap
        // reads it (the whole invocation, prompting included); what it leaves to clap too.
        let plain: Vec<OsString> = [
            "-r", "-R", "-f", "-v", "-rf", "-fr", "-Rfv", "-vv", "a", "b/c", "x y", "-x-",
        ]
        .iter()
        .map(OsString::from)
        .chain([OsString::from_vec(vec![b'n', 0xff])])
        .collect();
        let other: Vec<OsString> = ["--", "-", "", "-i", "-I", "--force", "-rfi", "-0", "-d"]
            .iter()
            .map(OsString::from)
            .collect();
        let tokens: Vec<&OsString> = plain.iter().chain(&other).collect();
        let mut lines: Vec<Vec<&OsString>> = vec![Vec::new()];
        for _ in 0..3 {
            let longer: Vec<_> = lines
                .iter()
                .filter(|l| l.len() == lines.last().map_or(0, |l| l.len()))
                .flat_map(|l| {
                    tokens.iter().map(move |t| {
                        let mut l = l.clone();
                        l.push(t);
                        l
                    })
                })
                .collect();
            lines.extend(longer);
        }
        let mut read_plain = 0;
        for line in &lines {
            let argv: Vec<OsString> = ["reclaim", "rm"]
                .iter()
                .map(OsString::from)
                .chain(line.iter().map(|a| (*a).clone()))
                .collect();
            let fast = plain_rm(&argv).is_some();
            let clap_only = line.iter().any(|a| other.contains(a) || *a == "-x-");
            assert_eq!(fast, !clap_only, "{argv:?}");
            read_plain += usize::from(fast);
            let by_plain = format!("{:?}", parse_by(argv.clone(), true));
            let by_clap = format!("{:?}", parse_by(argv.clone(), false));
            assert_eq!(by_plain, by_clap, "{argv:?}");
        }
        assert!(read_plain > 1000, "{read_plain} of {}", lines.len());
        // Not `rm`: clap's.
        let status: Vec<OsString> = vec!["reclaim".into(), "status".into()];
        assert!(plain_rm(&status).is_none());
    }

    #[test]
    fn flags_given_again_to_a_reaper_ask_for_the_same_pacing() {
        let ms = Duration::from_millis;
        let cases = [
            PaceArgs::default(),
            PaceArgs {
                fast: true,
                ..PaceArgs::default()
            },
            PaceArgs {
                fast: true,
                iops: Some(5000),
                ..PaceArgs::default()
            },
            PaceArgs {
                max_latency: Some(ms(20)),
                ..PaceArgs::default()
            },
            PaceArgs {
                max_latency: Some(Duration::from_nanos(1_234_567)),
                rate: Some(200 << 20),
                iops: Some(1),
                ..PaceArgs::default()
            },
            PaceArgs {
                max_latency: Some(Duration::from_secs(3600)),
                ..PaceArgs::default()
            },
            PaceArgs {
                max_latency: Some(Duration::ZERO),
                rate: Some(1),
                ..PaceArgs::default()
            },
        ];
        for flags in cases {
            let asked = EntryPacing::from(&flags);
            let args = crate::reaper::spawn::pace_args(&asked);
            let again = EntryPacing::from(&parse(&args));
            assert_eq!(again, asked, "{args:?}");
        }
    }

    #[test]
    fn the_budget_is_the_default_unless_given_and_none_when_fast() {
        let p = EntryPacing::default().pacing();
        assert_eq!(
            p.max_latency,
            Some(crate::engine::pace::asked::DEFAULT_MAX_LATENCY)
        );
        assert!(EntryPacing::from(&parse(&["--fast".into()]))
            .pacing()
            .is_fast());
        let given = EntryPacing::from(&parse(&["--max-latency".into(), "5ms".into()]));
        assert_eq!(given.pacing().max_latency, Some(Duration::from_millis(5)));
        assert!(given.pace_trees);
    }

    #[test]
    fn the_help_names_the_default_budget() {
        use clap::CommandFactory;
        let cmd = Flags::command();
        let arg = cmd.get_arguments().find(|a| a.get_id() == "max_latency");
        let help = arg.and_then(|a| a.get_long_help().or(a.get_help()));
        let help = help.unwrap().to_string();
        let default = format!(
            "[default: {}ms ",
            crate::engine::pace::asked::DEFAULT_MAX_LATENCY.as_millis()
        );
        assert!(help.contains(&default), "{help}");
    }
}
