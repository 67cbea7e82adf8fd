//! Command-line definition (clap derive): every flag and its help text, nothing else.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cmd::gnu::args::When;
use crate::engine::workload::{Shape, Spec};

#[derive(Parser, Debug)]
#[command(
    name = "reclaim",
    version,
    about = "Remove data from Linux file systems fast, gently and safely",
    after_help = "Exit status: 0 all done, 1 some paths could not be removed (all listed), 2 usage error."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Remove files and directory trees (GNU rm flags; never follows symlinks; one file system)
    #[command(args_override_self = true, infer_long_args = true)]
    Rm(RmArgs),
    /// Show what is waiting in the trashes to be freed, and the reapers freeing it
    Status(StatusArgs),
    /// Put a trashed entry back at its original path (while no reaper has started on it)
    Restore(RestoreArgs),
    /// Free what can be freed in the trashes now, in the foreground, and exit (entries in their
    /// grace window stay; a reaper at work is waited for) (`--watch`: keep running, for systemd)
    Reap(ReapArgs),
    /// Retention: remove the oldest entries of directories by rules (restic's --keep-last,
    /// --keep-daily, ..., --keep-within; older than; keep X free); always prints the plan first
    Prune(PruneArgs),
    /// Where the files are: totals, size histogram, the biggest directories and small-file
    /// hotspots, estimated removal time
    Scan(ScanArgs),
    /// Time `rm -rf` against `reclaim rm -r` on a scratch workload on your own disk
    Bench(BenchArgs),
    /// Print shell completions on stdout (e.g. `reclaim completions bash > /etc/bash_completion.d/reclaim`)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (reclaim.1, reclaim-rm.1, ...) into DIR
    Man {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum, Default)]
pub enum SortArg {
    /// Modification time
    #[default]
    Mtime,
    /// Name (dated names: the greatest is the newest)
    Name,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Keep rules are restic's: each counts on its own, and an entry is kept if any \
    rule keeps it. Calendar periods are local time; only periods that have an entry count; when \
    fewer than N have one, the oldest entry is kept too. With keep rules alone, everything they do \
    not keep is removed."
)]
pub struct PruneArgs {
    /// Keep the N newest entries
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,
    /// For the last N hours that have an entry, keep the newest entry of each
    #[arg(long, value_name = "N")]
    pub keep_hourly: Option<usize>,
    /// For the last N days that have an entry, keep the newest entry of each
    #[arg(long, value_name = "N")]
    pub keep_daily: Option<usize>,
    /// For the last N weeks (ISO: Monday to Sunday) that have an entry, keep the newest of each
    #[arg(long, value_name = "N")]
    pub keep_weekly: Option<usize>,
    /// For the last N months that have an entry, keep the newest entry of each
    #[arg(long, value_name = "N")]
    pub keep_monthly: Option<usize>,
    /// For the last N years that have an entry, keep the newest entry of each
    #[arg(long, value_name = "N")]
    pub keep_yearly: Option<usize>,
    /// Keep every entry newer than the newest entry's time minus SPAN, in restic's form:
    /// years, months, days, hours (1y5m7d2h; m is months)
    #[arg(long, value_name = "SPAN", value_parser = crate::cli::units::parse_calendar_span)]
    pub keep_within: Option<crate::engine::prune::policy::CalendarSpan>,
    /// Remove entries older than this (e.g. 3d, 12h, 2w); never the newest entry
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub older_than: Option<std::time::Duration>,
    /// Remove oldest first until the file system will have this much free (15% or 200G),
    /// counting space still being freed from the trash
    #[arg(long, value_name = "PERCENT|SIZE", value_parser = crate::cli::units::parse_free_target)]
    pub keep_free: Option<crate::engine::prune::policy::FreeTarget>,
    /// Remove oldest first until the entries total at most this (allocated bytes)
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::units::parse_size_or_zero)]
    pub max_total: Option<u64>,
    /// Order entries by modification time or by name [default: mtime]
    #[arg(long, value_enum)]
    pub sort: Option<SortArg>,
    /// Take the rules (and directories, if none are given) from `[prune.NAME]` in the config file
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    /// Only entries whose name matches this shell pattern (e.g. 'backup-*.tar')
    #[arg(long = "match", value_name = "GLOB")]
    pub pattern: Option<String>,
    /// Consider entries whose names start with a dot too
    #[arg(long)]
    pub all: bool,
    /// Allow a plan that removes every entry
    #[arg(long)]
    pub allow_empty: bool,
    /// Print the plan and stop
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Print one JSON object (the plan and what was done) on stdout
    #[arg(long)]
    pub json: bool,
    /// Stay until the space of the removed entries is free (default: a background reaper)
    #[arg(long, conflicts_with = "now")]
    pub wait: bool,
    /// Remove in the foreground without the trash (paced)
    #[arg(long)]
    pub now: bool,
    #[command(flatten)]
    pub pace: PaceArgs,
    /// Directories whose entries are pruned (all of them form one pool)
    #[arg(value_name = "DIR", required_unless_present = "policy", value_parser = clap::builder::OsStringValueParser::new())]
    pub dirs: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// Print one JSON object on stdout
    #[arg(long)]
    pub json: bool,
    /// How many directories to list in each top list
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Files smaller than this count as small (the hotspots that make backups slow)
    #[arg(long, default_value = "64K", value_name = "BYTES", value_parser = crate::cli::units::parse_bytes)]
    pub small: u64,
    /// Worker threads [default: as `reclaim rm`]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Descend into other file systems mounted inside (default: stay on each PATH's file system)
    #[arg(long)]
    pub cross_mounts: bool,
    /// Leave out entries whose name matches GLOB, or whose path relative to PATH does if GLOB
    /// has a '/' (a trailing '/': directories only): neither counted nor descended into.
    /// `*` and `?` never match a '/', `**` does. Repeatable
    #[arg(long, value_name = "GLOB", value_parser = crate::engine::scan::exclude::parse)]
    pub exclude: Vec<crate::engine::scan::exclude::Pattern>,
    /// Skip the removal-time estimate (it times a few thousand unlinks of scratch files in a
    /// private directory on the same file system, never inside the scanned tree)
    #[arg(long)]
    pub no_estimate: bool,
    /// Assume this kind of file system instead of the detected one (its worker count):
    /// local-ssd, rotational, memory, network, fuse
    #[arg(long, value_name = "PROFILE", value_parser = parse_profile)]
    pub profile: Option<crate::engine::profile::Class>,
    /// Share the scan with the other ranks of the MPI job this runs in (`mpirun -np N reclaim
    /// scan PATH`; detected without this flag). Needs a build with `--features mpi`
    #[arg(long)]
    pub mpi: bool,
    /// Directories to scan
    #[arg(value_name = "PATH", required = true, value_parser = clap::builder::OsStringValueParser::new())]
    pub paths: Vec<std::ffi::OsString>,
}

/// How `reclaim rm` frees space.
#[derive(Args, Debug, Default)]
#[group(multiple = false)]
pub struct ModeArgs {
    /// Remove in the foreground, paced (the default)
    #[arg(long)]
    pub now: bool,
    /// Hide each path at once (a rename into its file system's trash, `<mount>/.reclaim-<uid>/`)
    /// and free the space in the background with a detached reaper; says each entry's ID (on a
    /// terminal, or with -v) and, with --grace, the `reclaim restore ID` that undoes it
    #[arg(long)]
    pub background: bool,
    /// Hide each path at once, then stay until its space is free (with a progress bar)
    #[arg(long)]
    pub wait: bool,
}

/// GNU's argmatch (`cmd::gnu::args::argmatch`): `never`/`no`/`none`, `once`, `always`/`yes`,
/// or an unambiguous prefix.
fn parse_when(s: &str) -> Result<When, String> {
    crate::cmd::gnu::args::argmatch(s.as_bytes())
        .map_err(|kind| format!("{kind} argument '{s}' (use never, once or always)"))
}

fn parse_profile(s: &str) -> Result<crate::engine::profile::Class, String> {
    crate::engine::profile::Class::parse(s).ok_or_else(|| {
        format!("'{s}' is not a profile (use local-ssd, rotational, memory, network or fuse)")
    })
}

/// Pacing flags shared by `rm` and `reap`.
#[derive(Args, Debug, Default, Clone)]
pub struct PaceArgs {
    /// No pacing: free everything as fast as the file system can (like rm)
    #[arg(long, conflicts_with_all = ["max_latency", "rate"])]
    pub fast: bool,
    /// Latency budget for other I/O on the same file system [default: 20ms for large files]:
    /// reclaim measures it (a tiny O_DSYNC write probe) and slows down when it is exceeded.
    /// Given explicitly, trees (-r) are paced by it too
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub max_latency: Option<std::time::Duration>,
    /// Cap on bytes freed per second (e.g. 200M), on top of the latency budget
    #[arg(long, value_name = "BYTES/s", value_parser = crate::cli::units::parse_bytes)]
    pub rate: Option<u64>,
    /// Cap on unlinks per second in trees (applies with --fast too)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub iops: Option<u64>,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    /// Remove directories and their contents recursively
    #[arg(short = 'r', short_alias = 'R', long = "recursive")]
    pub recursive: bool,
    /// Ignore nonexistent files and arguments; never prompt
    #[arg(short, long)]
    pub force: bool,
    /// Prompt before every removal (entries one at a time, in GNU rm's order)
    #[arg(short = 'i')]
    pub prompt_always: bool,
    /// Prompt once before removing more than three arguments, or when removing recursively
    #[arg(short = 'I')]
    pub prompt_once: bool,
    /// Prompt according to WHEN: never, once (-I), or always (-i); without WHEN, always.
    /// The last of -f, -i, -I and --interactive counts
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "always", value_parser = parse_when)]
    pub interactive: Option<When>,
    /// Never leave an argument's file system (reclaim's default; see --cross-mounts)
    #[arg(long, conflicts_with = "cross_mounts")]
    pub one_file_system: bool,
    /// Do not remove '/' (always in effect); with 'all', also refuse an argument on another
    /// device than its parent (a mount point)
    #[arg(long, value_name = "all", num_args = 0..=1, require_equals = true,
          default_missing_value = "", value_parser = ["", "all"])]
    pub preserve_root: Option<String>,
    /// Accepted for GNU rm's scripts; reclaim still refuses '/'
    #[arg(long)]
    pub no_preserve_root: bool,
    /// Remove empty directories
    #[arg(short, long)]
    pub dir: bool,
    /// Print each removed path (`removed 'PATH'`) on stdout
    #[arg(short, long)]
    pub verbose: bool,
    /// Walk and report what would be removed (files, dirs, allocated bytes); remove nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON object with the summary on stdout
    #[arg(long)]
    pub json: bool,
    /// Worker threads [default: 2 x CPUs on ext2/3/4, CPUs elsewhere; at most one per CPU inside one large directory]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Descend into other file systems mounted inside the tree (default: skip and report them)
    #[arg(long)]
    pub cross_mounts: bool,
    /// Assume this kind of file system instead of the detected one (its defaults: workers,
    /// governor, stats): local-ssd, rotational, memory, network, fuse
    #[arg(long, value_name = "PROFILE", value_parser = parse_profile)]
    pub profile: Option<crate::engine::profile::Class>,
    /// Share the removal with the other ranks of the MPI job this runs in (`mpirun -np N
    /// reclaim rm -r PATH`; detected without this flag). Needs a build with `--features mpi`
    #[arg(long)]
    pub mpi: bool,
    #[command(flatten)]
    pub mode: ModeArgs,
    /// With --background: keep the entries restorable this long before freeing them (e.g. 10m)
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub grace: Option<std::time::Duration>,
    /// Make the removal survive a power loss: one fsync per affected directory after its
    /// unlinks (not one per file); with --background/--wait, the trash protocol's fsyncs
    #[arg(long)]
    pub durable: bool,
    #[command(flatten)]
    pub pace: PaceArgs,
    /// Write the pacer's per-window decisions (JSON lines) to FILE
    #[arg(long, hide = true, value_name = "FILE")]
    pub pace_trace: Option<PathBuf>,
    /// Most directory fds held at once (deep trees reopen evicted ones, verified)
    #[arg(long, hide = true, default_value_t = 256, value_parser = clap::value_parser!(u32).range(2..))]
    pub fd_budget: u32,
    /// Stat every file before unlinking it (exact bytes freed per file; costs a syscall each)
    #[arg(long, hide = true)]
    pub stat_files: bool,
    /// Whether small directories' entries are stated to meet large files [default: as the
    /// file system's profile says] (for measurements)
    #[arg(long, hide = true, value_name = "on|off", value_parser = ["on", "off"])]
    pub small_dir_stats: Option<String>,
    /// Workers at once in one directory's unlink batches [default: as the profile says]
    /// (for measurements)
    #[arg(long, hide = true, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub batch_threads: Option<u16>,
    /// Names per unlink batch [default: 1024; 128 under MPI] (for measurements)
    #[arg(long, hide = true, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch_size: Option<u32>,
    /// Files and directories to remove
    #[arg(value_name = "PATH", value_parser = clap::builder::OsStringValueParser::new())]
    pub paths: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Print one JSON object on stdout
    #[arg(long)]
    pub json: bool,
    /// One line per trash: where, owner, entries, bytes, the oldest entry's age, the reaper
    #[arg(long, conflicts_with = "json")]
    pub brief: bool,
    /// Walk pending trees to count their files and bytes (not known otherwise; costs a walk)
    #[arg(long)]
    pub count: bool,
    /// Only this trash (a `<dir>/.reclaim-<uid>` directory) [default: every trash this user may see]
    #[arg(long, value_name = "DIR")]
    pub trash: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// Print one JSON object on stdout
    #[arg(long)]
    pub json: bool,
    /// Only look in this trash (a `<dir>/.reclaim-<uid>` directory)
    #[arg(long, value_name = "DIR")]
    pub trash: Option<PathBuf>,
    /// Put it at PATH instead of its original path (one entry; a new name on the same file
    /// system; never over an existing one)
    #[arg(long, value_name = "PATH")]
    pub to: Option<PathBuf>,
    /// Entry ids (from `reclaim status`) or original paths (the newest entry of that path
    /// among your own; root names another user's entry by its id)
    #[arg(value_name = "ID|PATH", required = true, value_parser = clap::builder::OsStringValueParser::new())]
    pub entries: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct ReapArgs {
    /// Keep running: free new entries as they come (for a systemd service)
    #[arg(long, conflicts_with = "once")]
    pub watch: bool,
    /// One pass over what is due now, then exit: a trash another reaper holds is skipped (it
    /// frees that), and failed entries wait for their back-off (the service's passes)
    #[arg(long)]
    pub once: bool,
    /// Only this trash (a `<dir>/.reclaim-<uid>` directory) [default: every trash this user may see]
    #[arg(long, value_name = "DIR")]
    pub trash: Option<PathBuf>,
    /// Print one JSON object with what was freed on stdout
    #[arg(long)]
    pub json: bool,
    /// Started by `reclaim rm --background`: lower priority, no output but the log
    #[arg(long, hide = true)]
    pub detached: bool,
    /// With --detached: the trash's lock, taken by the `rm` that started this reaper, is held
    /// through this inherited fd
    #[arg(long, hide = true, requires = "detached")]
    pub lock_fd: Option<i32>,
    /// With --once: try entries that failed before now, not after their back-off (root's
    /// `reap` asks its per-user passes for this)
    #[arg(long, hide = true)]
    pub retry_failed: bool,
    /// Where to log one line per freed entry (what, how many files, how much, how long, how
    /// fast) and per failure (what could not be freed and why, damaged entries, entries left
    /// until their back-off ends), each with a syslog priority: info for freed, err for
    /// failures, notice for back-offs (so `journalctl -p warning` lists the failures). The
    /// journal gets the fields RECLAIM_EVENT (freed, failed, damaged, backoff), RECLAIM_ENTRY, RECLAIM_PATH, RECLAIM_TRASH,
    /// RECLAIM_FILES, RECLAIM_BYTES, RECLAIM_SECONDS, RECLAIM_RATE, RECLAIM_ERROR too
    /// (`journalctl -t reclaim RECLAIM_EVENT=failed`). [default: `[reap] log` of the
    /// configuration, else auto]
    #[arg(long, value_enum, value_name = "WHERE")]
    pub log: Option<crate::sys::logging::Target>,
    /// Start each stderr log line with its priority, `<N>` (the service's passes: the
    /// supervisor reads it)
    #[arg(long, hide = true)]
    pub log_prefix: bool,
    /// Free these entries (IDs, from `reclaim status`), or every entry with --all, now: also
    /// in their grace window (no longer restorable) and failed ones without waiting for their
    /// back-off (what a full disk needs)
    #[arg(long, conflicts_with = "watch")]
    pub now: bool,
    /// With --now: every entry of every trash this user may see (or of --trash)
    #[arg(long, requires = "now", conflicts_with = "ids")]
    pub all: bool,
    /// Entry IDs for --now
    #[arg(value_name = "ID", requires = "now")]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub pace: PaceArgs,
    /// Worker threads for trees [default: as `reclaim rm`]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ShapeArg {
    /// Leaf directories of 100 files under a tree of fan-out 32
    Tree,
    /// All files in one directory
    Flat,
}

impl ShapeArg {
    pub fn shape(self, fanout: u64, per_leaf: u64) -> Shape {
        match self {
            ShapeArg::Flat => Shape::Flat,
            ShapeArg::Tree => Shape::Tree { fanout, per_leaf },
        }
    }
}

/// A scratch workload on the command line (the bench examples `mkworkload` and `floor`).
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Shape of the workload
    #[arg(long, value_enum)]
    pub shape: ShapeArg,
    /// Number of files
    #[arg(long)]
    pub files: u64,
    /// Maximum number of children of an interior directory (tree only)
    #[arg(long, default_value_t = 32)]
    pub fanout: u64,
    /// Files per leaf directory (tree only)
    #[arg(long, default_value_t = 100)]
    pub per_leaf: u64,
}

impl WorkloadArgs {
    pub fn spec(&self, file_size: usize) -> Spec {
        Spec {
            shape: self.shape.shape(self.fanout, self.per_leaf),
            files: self.files,
            file_size,
        }
    }
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// 100,000 files instead of 1,000,000
    #[arg(long)]
    pub quick: bool,
    /// Where to create the scratch directory [default: the system temp dir]
    #[arg(long, value_name = "D")]
    pub dir: Option<PathBuf>,
    /// Number of files (overrides --quick)
    #[arg(long, value_name = "N")]
    pub files: Option<u64>,
    /// Workload shape
    #[arg(long, value_enum, default_value_t = ShapeArg::Tree)]
    pub shape: ShapeArg,
    /// Runs per method (the median is reported)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Drop the page cache before each timed removal (root only)
    #[arg(long)]
    pub cold: bool,
    /// Threads for reclaim [default: number of CPUs]
    #[arg(long)]
    pub threads: Option<u16>,
}
