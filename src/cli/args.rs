//! Command-line definition (clap derive): every flag and its help text, nothing else.

use std::path::PathBuf;

use clap::{Args, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::cmd::gnu::args::When;
use crate::engine::workload::{Shape, Spec};

mod select;
pub use select::SelectArgs;

/// `rm -h`'s last lines: where the rest is.
pub const RM_MORE: &str = "\
More options (pacing caps, threads, profiles, owners, depth, --keep-free) and the selection's
rules with find's equivalents: reclaim rm --help, man reclaim-rm.";

/// `rm --help`'s notes: what reclaim says where it differs from GNU rm.
pub const RM_NOTES: &str = "\
Output: errors on stderr as they happen; a condition of the whole file system (read-only, full,
over quota, an I/O error of the device) is said for the first path it stops, then counted
('and 1,999 more paths not removed: Read-only file system'), where GNU rm prints a line per
path (as reclaim does when invoked as rm). On a terminal, a progress line and a summary (-v
adds the file system's profile and the workers); --json gives one object on stdout.
--background prints each entry's ID on stdout when stdout is not a terminal.";

/// `rm --help`'s closing text: the notes, then the selection's rules.
pub fn rm_long_help() -> String {
    format!("{RM_NOTES}\n\n{SELECT_HELP}")
}

/// `rm --help`'s part on selection: the rules and the find equivalents side by side.
pub const SELECT_HELP: &str = "\
Selection (-r with --name, --path, --older-than, ...):
  Each PATH is searched; it stays. Tests are AND-ed; a repeated --name/--path/--user/--group
  is any of them. Rules:
  - --name, --path and --type choose entries; a chosen directory goes whole (its contents
    are carried), except with --empty. Carried contents still meet the size and age tests,
    whatever their names: --path 'tests/*' --larger-than 10K also removes the big files
    below tests/sub/, which the find equivalent below does not; add --type f to choose
    files only.
  - --older-than, --newer-than, --larger-than, --smaller-than, --user, --group hold for every
    entry removed, on its own inode, inside a chosen directory too: an old directory never
    takes a newer file with it.
  - A file is tested right before its unlink (d_type alone when only names and types are
    tested, else one statx with only the fields needed). A directory is tested as the walk
    found it, before any of its entries went (as find -depth does), and goes only if it is
    empty by its rmdir; --prune-empty also removes the directories the run left empty.
  - Ages are exact: 30d is 30 x 24 h before now, to the nanosecond. find -mtime +30 counts
    whole days and so means 31 days or more; reclaim's 30d is find's -newermt '-30 days'.
    6mo and 1y count back on the local calendar, as find's -newermt '-6 months'. Units:
    s, min, h, d, w, mo, y (a bare m is refused: minutes or months?).
  - Sizes are apparent sizes in bytes (K, M, G = 1024-based), as find -size Nc; find's -size
    -1M rounds up to whole MiB, reclaim never does.
  - Globs: '*' and '?' stay within one name ('?' is one byte), '**' spans directories,
    [...] [!...] classes, {a,b} alternatives, '\\' escapes. find -path's '*' also matches '/'.
  - No symlink is followed; other mounts are skipped and reported as without a selection.

  reclaim rm -r ...                        find equivalent
  --name 'test*.txt' D                     find D -mindepth 1 -name 'test*.txt' -delete
  --name cache D                           find D -mindepth 1 -name cache -prune -exec rm -rf {} +
  --path 'logs/*.gz' D                     find D -path 'D/logs/*.gz' ! -path 'D/logs/*/*' -delete
  --older-than 30d D                       find D -mindepth 1 ! -newermt '-30 days' -delete
  --time atime --older-than 60d D          find D -mindepth 1 ! -newerat '-60 days' -delete
  --newer-than 2h D                        find D -mindepth 1 -newermt '-2 hours' -delete
  --larger-than 1G D                       find D -mindepth 1 -size +1073741824c -delete
  --smaller-than 100 D                     find D -mindepth 1 -size -100c -delete
  --type f,l D                             find D -mindepth 1 \\( -type f -o -type l \\) -delete
  --user alice D                           find D -mindepth 1 -user alice -delete
  --empty D                                find D -mindepth 1 -empty -delete
  --exclude .git --name '*.o' D            find D -name .git -prune -o -name '*.o' -delete (*)
  --max-depth 1 --name '*.tmp' D           find D -mindepth 1 -maxdepth 1 -name '*.tmp' -delete
  --from LIST -0                           xargs -0 rm -r < LIST
  (*) -prune does nothing under find's -delete; reclaim never enters an excluded directory.

  --dry-run and --json give totals per top-level directory and per owner; --list FILE writes
  every removed path; --keep-free 15% removes the oldest matching files until 15% is free
  (space pending in the trash counts as free). --background and --wait are refused with a
  selection (a rename into the trash per entry costs as much as removing it).";

#[derive(Parser, Debug)]
#[command(
    name = "reclaim",
    version,
    about = "Remove data from Linux file systems fast, gently and safely",
    after_help = "Exit status: 0 all done, 1 some paths could not be removed (all listed), 2 usage error, \
    128+N stopped by signal N (130 for Ctrl-C: a line says what is left)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Remove files and directory trees (GNU rm flags; never follows symlinks; one file system)
    #[command(
        args_override_self = true,
        infer_long_args = true,
        after_help = RM_MORE,
        after_long_help = rm_long_help()
    )]
    Rm(Deferred<RmArgs>),
    /// Show what is waiting in the trashes to be freed, and the reapers freeing it
    Status(Deferred<StatusArgs>),
    /// Put a trashed entry back at its original path (while no reaper has started on it)
    Restore(Deferred<RestoreArgs>),
    /// Free what can be freed in the trashes now, and exit (`--watch`: keep running)
    ///
    /// Free what can be freed in the trashes now, in the foreground, and exit: entries in their
    /// grace window stay; a reaper at work is waited for, one of another user for at most 30 s
    /// in all and not at all if it is stopped. `--watch` keeps running, for systemd.
    Reap(Deferred<ReapArgs>),
    /// Retention: remove the oldest entries of directories by rules; prints the plan first
    ///
    /// Retention: remove the oldest entries of directories by rules (restic's --keep-last,
    /// --keep-daily, ..., --keep-within; older than; keep X free); always prints the plan
    /// first.
    Prune(Deferred<PruneArgs>),
    /// Where the files are: totals, size histogram, the biggest directories and small-file
    /// hotspots, estimated removal time
    Scan(Deferred<ScanArgs>),
    /// See where the space is and free it interactively (ncdu's keys; deleting is undoable)
    #[command(after_help = crate::ui::browse::help::COMMAND_LINE)]
    Browse(Deferred<BrowseArgs>),
    /// Pack a tree of small files into one verified squashfs archive (DIR.sqfs), then remove
    /// each original proven packed and unchanged (`--mount`: the archive mounted on DIR)
    Pack(Deferred<PackArgs>),
    /// Restore a packed tree exactly into a new directory
    Unpack(Deferred<UnpackArgs>),
    /// Time `rm -rf` against `reclaim rm -r` on a scratch workload on your own disk
    Bench(Deferred<BenchArgs>),
    /// Print shell completions on stdout (e.g. `reclaim completions bash > /etc/bash_completion.d/reclaim`)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (reclaim.1, reclaim-rm.1, ...) into DIR
    #[command(
        long_about = "Write the man pages (reclaim.1 and reclaim-SUBCOMMAND.1 for each \
        subcommand, made from the same definitions as --help) into DIR, replacing pages of \
        those names; nothing else is written. Then e.g. `man -l DIR/reclaim-rm.1`. To install \
        them: `mkdir -p ~/.local/share/man/man1 && reclaim man ~/.local/share/man/man1` (for \
        one user), or `reclaim man /usr/local/share/man/man1` (root, for all)."
    )]
    Man {
        /// An existing directory to write the pages into (e.g. /usr/local/share/man/man1)
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// A subcommand's flags, defined only when that subcommand is the one parsed (clap's
/// `Command::defer`; help, man pages and completions build them all): a start pays for its own
/// subcommand's definition, not for every other one's (DESIGN §15).
#[derive(Debug)]
pub struct Deferred<T>(pub T);

impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.defer(|c| keep_about(c, T::augment_args))
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(|c| keep_about(c, T::augment_args_for_update))
    }
}

/// `augment` applied to `cmd` after the subcommand's own description was set (a deferred
/// definition runs last): the description stays the subcommand's, not that of a struct of
/// flags it flattens.
fn keep_about(cmd: clap::Command, augment: fn(clap::Command) -> clap::Command) -> clap::Command {
    let about = cmd.get_about().cloned();
    let long = cmd.get_long_about().cloned();
    let cmd = augment(cmd);
    let cmd = match about {
        Some(a) => cmd.about(a),
        None => cmd.about(None::<&str>),
    };
    match long {
        Some(l) => cmd.long_about(l),
        None => cmd.long_about(None::<&str>),
    }
}

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(Deferred)
    }
    fn from_arg_matches_mut(m: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(m).map(Deferred)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
    fn update_from_arg_matches_mut(&mut self, m: &mut clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(m)
    }
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
    not keep is removed.\n\nTo remove by name anywhere below a directory: `reclaim rm -r --name GLOB DIR` \
    (rm --help)."
)]
pub struct PruneArgs {
    /// Keep the N newest entries
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,
    /// Keep the newest entry of each of the last N hours that have one
    #[arg(long, value_name = "N")]
    pub keep_hourly: Option<usize>,
    /// Keep the newest entry of each of the last N days that have one
    #[arg(long, value_name = "N")]
    pub keep_daily: Option<usize>,
    /// Keep the newest entry of each of the last N weeks that have one
    ///
    /// ISO weeks: Monday to Sunday
    #[arg(long, value_name = "N")]
    pub keep_weekly: Option<usize>,
    /// Keep the newest entry of each of the last N months that have one
    #[arg(long, value_name = "N")]
    pub keep_monthly: Option<usize>,
    /// Keep the newest entry of each of the last N years that have one
    #[arg(long, value_name = "N")]
    pub keep_yearly: Option<usize>,
    /// Keep the entries newer than the newest one minus SPAN (1y6mo, 7d)
    ///
    /// restic's rule: years and months on the calendar, then days, hours, minutes
    #[arg(long, value_name = "SPAN", value_parser = crate::cli::units::parse_calendar_span)]
    pub keep_within: Option<crate::engine::prune::policy::CalendarSpan>,
    /// Remove entries older than this (3d, 2w, 6mo, 1y); never the newest
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub older_than: Option<std::time::Duration>,
    /// Remove oldest first until the file system will have this much free
    ///
    /// 15% or 200G, counting space still being freed from the trash
    #[arg(long, value_name = "PERCENT|SIZE", value_parser = crate::cli::units::parse_free_target)]
    pub keep_free: Option<crate::engine::prune::policy::FreeTarget>,
    /// Remove oldest first until the file system will have SIZE more free
    ///
    /// 5G more than now, counting space still being freed from the trash; --keep-free is the
    /// absolute form
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::units::parse_size_or_zero)]
    pub free: Option<u64>,
    /// Remove oldest first until the entries total at most SIZE
    ///
    /// Allocated bytes
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::units::parse_size_or_zero)]
    pub max_total: Option<u64>,
    /// Order entries by modification time or by name [default: mtime]
    #[arg(long, value_enum)]
    pub sort: Option<SortArg>,
    /// Take the rules (and directories) from `[prune.NAME]` of the config
    ///
    /// The directories only if none are given
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    /// Only entries whose name matches GLOB ('backup-*'; '*': every entry)
    ///
    /// Without it, only the entries named like the most of them (each run of digits as '*':
    /// db-2026-11-20.tar.gz is db-*-*-*.tar.gz); the others are left out and said, and where no
    /// shape has the most names nothing is planned
    #[arg(long = "match", value_name = "GLOB")]
    pub pattern: Option<String>,
    /// Consider entries whose names start with a dot too
    #[arg(hide_short_help = true, long)]
    pub all: bool,
    /// Allow a plan that removes every entry
    #[arg(hide_short_help = true, long)]
    pub allow_empty: bool,
    /// Start the profile, the measured pool and the governor at once, not once the removal
    /// proves big (for measurements and tests of what they decide)
    #[arg(long, hide = true)]
    pub start_pool: bool,
    /// Print the plan and stop
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Print one JSON object (the plan and what was done) on stdout
    #[arg(long)]
    pub json: bool,
    /// Stay until the space of the removed entries is free
    ///
    /// [default: the trash and a background reaper]
    #[arg(long, conflicts_with = "now")]
    pub wait: bool,
    /// Remove in the foreground without the trash (paced)
    #[arg(long)]
    pub now: bool,
    #[command(flatten)]
    pub pace: PaceArgs,
    /// The free space to leave the others on a file system (5%, 2G; 0: none) [default: the
    /// smaller of 5% and 10G]: under it, or falling toward it, pacing yields (full speed) and
    /// reapers free entries still in their grace window, oldest first, until it holds
    #[arg(long, value_name = "PERCENT|SIZE", value_parser = crate::cli::units::parse_min_free)]
    pub min_free: Option<crate::sys::space::Floor>,

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
    #[arg(long, value_name = "GLOB", value_parser = crate::engine::glob::exclude::parse)]
    pub exclude: Vec<crate::engine::glob::exclude::Pattern>,
    /// Skip the removal-time estimate
    ///
    /// The estimate times a few thousand unlinks of scratch files in a private directory on
    /// the scanned file system, never inside the scanned tree; without --estimate only in
    /// reclaim's cache directory (~/.cache/reclaim, root's /var/cache/reclaim), and only
    /// where that is on the scanned file system
    #[arg(long, conflicts_with = "estimate")]
    pub no_estimate: bool,
    /// Calibrate the removal-time estimate elsewhere too when reclaim's cache directory is
    /// not on the scanned file system: $TMPDIR, the mount's top or a directory above the
    /// PATH (a private directory, made and removed; never inside the scanned tree)
    #[arg(long)]
    pub estimate: bool,
    /// Assume this kind of file system instead of the detected one (its worker count):
    /// local-ssd, rotational, memory, network, fuse
    #[arg(long, value_name = "PROFILE", value_parser = parse_profile)]
    pub profile: Option<crate::engine::profile::Class>,
    /// Share the scan with the other ranks of the MPI job this runs in (`mpirun -np N reclaim
    /// scan PATH`; detected without this flag). Needs a build with `--features mpi`
    #[arg(long)]
    pub mpi: bool,
    /// Pack candidates: subtrees of small files none of which was modified (see --time) for
    /// this long, each with the `reclaim pack` command that turns it into one file
    #[arg(long, default_value = "30d", value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub pack_age: std::time::Duration,
    /// Pack candidates by access time instead of modification time (none read for
    /// --pack-age; only meaningful where atimes are kept: relatime updates them once a day)
    #[arg(long, value_enum, default_value = "mtime", value_name = "mtime|atime")]
    pub time: ScanTime,
    /// Pack candidates have at least this many files
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub pack_min_files: u64,
    /// Also write the whole tree to FILE in ncdu's export format (`ncdu -f FILE`, gdu, dua
    /// load it): one directory PATH; FILE is replaced (a symlink there too, never followed)
    /// only when complete, and must not be inside the scanned tree
    #[arg(long, value_name = "FILE", value_parser = clap::builder::PathBufValueParser::new())]
    pub export: Option<std::path::PathBuf>,
    /// Directories to scan
    #[arg(value_name = "PATH", required = true, value_parser = clap::builder::OsStringValueParser::new())]
    pub paths: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct BrowseArgs {
    /// Deleted entries stay restorable this long (u, `reclaim restore`) [default: [rm] grace, 10m]
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub grace: Option<std::time::Duration>,
    /// Scan other file systems mounted inside too (default: shown, entered only when asked)
    #[arg(long)]
    pub cross_mounts: bool,
    /// Worker threads of the scan [default: as the file system's profile says]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Pack candidates (P): subtrees of small files, none modified this long (as `reclaim scan`)
    #[arg(long, default_value = "30d", value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub pack_age: std::time::Duration,
    /// Pack candidates have at least this many files
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub pack_min_files: u64,
    /// Files smaller than this count as small (pack candidates)
    #[arg(long, default_value = "64K", value_name = "BYTES", value_parser = crate::cli::units::parse_bytes)]
    pub small: u64,
    /// Browse an ncdu-format export (`reclaim scan --export`, `ncdu -o`) instead: nothing changes
    #[arg(long, value_name = "FILE", conflicts_with_all = ["path", "cross_mounts", "threads"])]
    pub import: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub pace: PaceArgs,
    /// The directory to browse
    #[arg(value_name = "PATH", default_value = ".", value_parser = clap::builder::OsStringValueParser::new())]
    pub path: std::ffi::OsString,
}

#[derive(Args, Debug)]
#[command(
    after_help = "The archive is written under a temporary name, read back and compared \
    with every original (BLAKE3), fsynced and renamed; only then each original is removed, if \
    it is unchanged since it was read (inode, size, mtime, ctime). Changed or new files stay and \
    are listed. Interrupted or killed, the same command again finishes. squashfs keeps times to \
    the second and no ACLs: the archive's manifest keeps them exactly for `reclaim unpack`. \
    Exit status: 0 all packed and removed, 1 some entries stayed (listed), 2 usage error or \
    nothing could be packed."
)]
pub struct PackArgs {
    /// The archive [default: DIR.sqfs beside DIR]
    #[arg(long, value_name = "ARCHIVE")]
    pub to: Option<PathBuf>,
    /// Leave the archive mounted read-only on DIR (root: the kernel's squashfs; others:
    /// squashfuse) and print the /etc/fstab line that mounts it at boot
    #[arg(long)]
    pub mount: bool,
    /// With --mount: write a systemd .mount unit for it into DIR_OF_UNITS (e.g.
    /// /etc/systemd/system) instead of printing the fstab line
    #[arg(long, value_name = "DIR_OF_UNITS", requires = "mount")]
    pub mount_unit: Option<PathBuf>,
    /// Write and verify the archive, remove nothing
    #[arg(long, conflicts_with = "mount")]
    pub keep: bool,
    /// Compression of the archive: zstd (default, level 3), lz4, gzip, xz; zstd:N for a level
    #[arg(long, value_name = "NAME[:LEVEL]", value_parser = parse_compressor, default_value = "zstd")]
    pub compress: crate::engine::pack::Compressor,
    /// Readers, and removal workers [default: the file system's profile]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Assume this kind of file system instead of the detected one: local-ssd, rotational,
    /// memory, network, fuse
    #[arg(long, value_name = "PROFILE", value_parser = parse_profile)]
    pub profile: Option<crate::engine::profile::Class>,
    /// Print one JSON object on stdout
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub pace: PaceArgs,
    /// The directory to pack
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

fn parse_compressor(s: &str) -> Result<crate::engine::pack::Compressor, String> {
    use crate::engine::pack::Compressor;
    let (name, level) = match s.split_once(':') {
        Some((n, l)) => (n, Some(l)),
        None => (s, None),
    };
    match (name, level) {
        ("zstd", None) => Ok(Compressor::Zstd(3)),
        ("zstd", Some(l)) => match l.parse::<u32>() {
            Ok(n @ 1..=22) => Ok(Compressor::Zstd(n)),
            _ => Err(format!("'{l}' is not a zstd level (1 to 22)")),
        },
        ("lz4", None) => Ok(Compressor::Lz4),
        ("gzip", None) => Ok(Compressor::Gzip),
        ("xz", None) => Ok(Compressor::Xz),
        _ => Err(format!(
            "'{s}' is not a compressor (use zstd, zstd:N, lz4, gzip or xz)"
        )),
    }
}

#[derive(Args, Debug)]
pub struct UnpackArgs {
    /// Root: restore an archive that is not root's own exactly as it says (owners, setuid and
    /// setgid bits, device nodes, security xattrs); without it, such an archive is unpacked as
    /// GNU tar does for a user (owners yours, those bits dropped, your umask, no devices)
    #[arg(long)]
    pub same_owner: bool,
    /// Print one JSON object on stdout
    #[arg(long)]
    pub json: bool,
    /// The archive (written by `reclaim pack`, or any squashfs image)
    #[arg(value_name = "ARCHIVE")]
    pub archive: PathBuf,
    /// A new directory to restore the tree into (it must not exist)
    #[arg(value_name = "DEST")]
    pub dest: PathBuf,
}

/// Which time makes a scan's pack candidate cold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScanTime {
    Mtime,
    Atime,
}

/// How `reclaim rm` frees space.
#[derive(Args, Debug, Default)]
#[group(multiple = false)]
pub struct ModeArgs {
    /// Remove in the foreground, paced (the default)
    #[arg(hide_short_help = true, long)]
    pub now: bool,
    /// Hide each path in its trash at once; a reaper frees the space later
    ///
    /// A rename into its file system's trash (`<mount>/.reclaim-<uid>/`), then a detached
    /// reaper frees the space. Prints each entry's ID on stdout when that is not a terminal (one
    /// a line, for scripts), and on a terminal (or with -v) each path's ID and, with --grace,
    /// the `reclaim restore ID` that undoes it
    #[arg(long)]
    pub background: bool,
    /// Hide each path at once, then stay until its space is free
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
    /// Latency budget for other I/O [default: 20ms for large files]
    ///
    /// reclaim measures the latency other I/O on the same file system sees (a tiny O_DSYNC
    /// write probe) and slows down when it exceeds this. Given explicitly, trees (-r) are paced
    /// by it too
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub max_latency: Option<std::time::Duration>,
    /// Cap on bytes freed per second (e.g. 200M), on top of the latency budget
    #[arg(hide_short_help = true, long, value_name = "BYTES/s", value_parser = crate::cli::units::parse_bytes)]
    pub rate: Option<u64>,
    /// Cap on unlinks per second in trees (applies with --fast too)
    #[arg(hide_short_help = true, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub iops: Option<u64>,
}

/// `rm --fd-budget`'s default: directory fds a removal holds at most.
pub const FD_BUDGET: u32 = 256;

#[derive(Args, Debug, Default)]
pub struct RmArgs {
    /// Remove directories and their contents recursively
    #[arg(short = 'r', short_alias = 'R', long = "recursive")]
    pub recursive: bool,
    /// Ignore nonexistent files and arguments; never prompt
    #[arg(short, long)]
    pub force: bool,
    /// Prompt before every removal
    ///
    /// Entries one at a time, in GNU rm's order
    #[arg(short = 'i')]
    pub prompt_always: bool,
    /// Prompt once before removing over three arguments, or recursively
    #[arg(short = 'I')]
    pub prompt_once: bool,
    /// Prompt never, once (-I), or always (-i) [default: always]
    ///
    /// The last of -f, -i, -I and --interactive counts
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "always", value_parser = parse_when)]
    pub interactive: Option<When>,
    /// Never leave an argument's file system (reclaim's default; see --cross-mounts)
    #[arg(hide_short_help = true, long, conflicts_with = "cross_mounts")]
    pub one_file_system: bool,
    /// Do not remove '/' (always in effect); with 'all', also refuse an argument on another
    /// device than its parent (a mount point)
    #[arg(hide_short_help = true, long, value_name = "all", num_args = 0..=1, require_equals = true,
          default_missing_value = "", value_parser = ["", "all"])]
    pub preserve_root: Option<String>,
    /// Accepted for GNU rm's scripts; reclaim still refuses '/'
    #[arg(hide_short_help = true, long)]
    pub no_preserve_root: bool,
    /// Remove empty directories
    #[arg(short, long)]
    pub dir: bool,
    /// Print each removed path (`removed 'PATH'`) on stdout
    #[arg(short, long)]
    pub verbose: bool,
    /// Report what would be removed; remove nothing
    ///
    /// Walks and reports the files, directories and allocated bytes that would go
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON object with the summary on stdout
    #[arg(long)]
    pub json: bool,
    /// Worker threads, pinned [default: measured while the removal runs]
    ///
    /// The measurement starts where the file system's profile says
    #[arg(hide_short_help = true, long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Descend into other file systems mounted inside the tree (default: skip and report them)
    #[arg(hide_short_help = true, long)]
    pub cross_mounts: bool,
    /// Assume this kind of file system instead of the detected one (its
    /// defaults: workers, governor, stats): local-ssd, rotational, memory, network, fuse
    #[arg(hide_short_help = true, long, value_name = "PROFILE", value_parser = parse_profile)]
    pub profile: Option<crate::engine::profile::Class>,
    /// Share the removal with the other ranks of the MPI job this runs in
    /// (`mpirun -np N reclaim rm -r PATH`; detected without this flag). Needs a build with
    /// `--features mpi`
    #[arg(hide_short_help = true, long)]
    pub mpi: bool,
    #[command(flatten)]
    pub mode: ModeArgs,
    /// With --background: restorable this long (10min, 2h, 7d)
    ///
    /// The entries wait in the trash that long before a reaper frees them; `reclaim restore ID`
    /// puts one back meanwhile. Unless their file system runs short of space (--min-free): then
    /// they are freed early, and said; on one already short, a grace window is refused
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub grace: Option<std::time::Duration>,
    /// The free space to leave the others (5%, 2G; 0: none) [default: the smaller of 5% and 10G]
    ///
    /// Under it, or falling toward it, pacing yields (full speed, as rm) and reapers free the
    /// entries still in their grace window, oldest first, until it holds
    #[arg(hide_short_help = true, long, value_name = "PERCENT|SIZE", value_parser = crate::cli::units::parse_min_free)]
    pub min_free: Option<crate::sys::space::Floor>,
    /// Survive a power loss: one fsync per affected directory
    ///
    /// One fsync per affected directory after its unlinks (not one per file); with
    /// --background/--wait, the trash protocol's fsyncs
    #[arg(hide_short_help = true, long)]
    pub durable: bool,
    #[command(flatten)]
    pub pace: PaceArgs,
    /// Write the pacer's per-window decisions (JSON lines) to FILE
    #[arg(long, hide = true, value_name = "FILE")]
    pub pace_trace: Option<PathBuf>,
    /// Most directory fds held at once (deep trees reopen evicted ones, verified)
    #[arg(long, hide = true, default_value_t = FD_BUDGET, value_parser = clap::value_parser!(u32).range(2..))]
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
    /// Start the profile, the measured pool and the governor at once, not once the removal
    /// proves big (for measurements and tests of what they decide)
    #[arg(long, hide = true)]
    pub start_pool: bool,
    /// Files and directories to remove
    #[arg(value_name = "PATH", value_parser = clap::builder::OsStringValueParser::new())]
    pub paths: Vec<std::ffi::OsString>,
    #[command(flatten)]
    pub select: SelectArgs,
}

impl RmArgs {
    /// What clap makes of `reclaim rm` without a flag (`cli::plain_rm` starts from it).
    pub fn unflagged() -> RmArgs {
        RmArgs {
            fd_budget: FD_BUDGET,
            ..RmArgs::default()
        }
    }
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
    /// The floor of free space to show for each file system, as the reapers were given it
    /// (5%, 2G; 0: none) [default: min_free of the configuration, else the smaller of 5% and
    /// 10G]
    #[arg(long, value_name = "PERCENT|SIZE", value_parser = crate::cli::units::parse_min_free)]
    pub min_free: Option<crate::sys::space::Floor>,
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
    /// One pass over what is due now, then exit
    ///
    /// A trash another reaper holds is skipped (it frees that), and failed entries wait for their
    /// back-off (the service's passes)
    #[arg(long)]
    pub once: bool,
    /// Only this trash (a `<dir>/.reclaim-<uid>` directory)
    ///
    /// [default: every trash this user may see]
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
    /// Where to log each freed entry and failure [default: auto]
    ///
    /// One line per freed entry (what, how many files, how much, how long, how fast) and per
    /// failure (what could not be freed and why, damaged entries, entries left until their
    /// back-off ends), each with a syslog priority: info for freed, err for failures, notice for
    /// back-offs (so `journalctl -p warning` lists the failures). The journal gets the fields
    /// RECLAIM_EVENT (freed, failed, damaged, backoff, freed_early: a warning, freed before its
    /// grace ended for want of space), RECLAIM_ENTRY, RECLAIM_PATH, RECLAIM_TRASH,
    /// RECLAIM_FILES, RECLAIM_BYTES, RECLAIM_SECONDS, RECLAIM_RATE, RECLAIM_ERROR,
    /// RECLAIM_FREE_BYTES, RECLAIM_FLOOR_BYTES too
    /// (`journalctl -t reclaim RECLAIM_EVENT=failed`). [default: `[reap] log` of the
    /// configuration, else auto]
    #[arg(long, value_enum, value_name = "WHERE")]
    pub log: Option<crate::sys::logging::Target>,
    /// Start each stderr log line with its priority, `<N>` (the service's passes: the
    /// supervisor reads it)
    #[arg(long, hide = true)]
    pub log_prefix: bool,
    /// Free these entries (IDs), or every entry with --all, now
    ///
    /// Also in their grace window (no longer restorable) and failed ones without waiting for
    /// their back-off (what a full disk needs); IDs from `reclaim status`
    #[arg(long, conflicts_with = "watch")]
    pub now: bool,
    /// With --now: every entry of every trash this user may see (or of --trash)
    #[arg(long, requires = "now", conflicts_with = "ids")]
    pub all: bool,
    /// Entry IDs for --now
    #[arg(value_name = "ID", requires = "now")]
    pub ids: Vec<String>,
    /// Stay until the space is back, as `rm --wait` does
    ///
    /// Where btrfs subvolumes were deleted whole, also until btrfs's cleaner has freed them
    /// (root, kernel 6.8+; otherwise it says it cannot wait)
    #[arg(long, conflicts_with_all = ["watch", "detached"])]
    pub wait: bool,
    #[command(flatten)]
    pub pace: PaceArgs,
    /// The free space to leave the others on a file system (5%, 2G; 0: none) [default: the
    /// smaller of 5% and 10G]: under it, or falling toward it, pacing yields (full speed) and
    /// reapers free entries still in their grace window, oldest first, until it holds
    #[arg(long, value_name = "PERCENT|SIZE", value_parser = crate::cli::units::parse_min_free)]
    pub min_free: Option<crate::sys::space::Floor>,
    /// With --once --now: the file system was found short of space so (JSON, from the
    /// --watch supervisor): entries whose grace window this cuts short are recorded as freed
    /// early, with it
    #[arg(long, hide = true, value_name = "JSON", requires = "now")]
    pub early: Option<String>,
    /// With --watch: write the trashes' metrics in Prometheus's text format to FILE (for
    /// node_exporter's textfile collector, e.g.
    /// /var/lib/prometheus/node-exporter/reclaim.prom), replaced whole every few seconds
    #[arg(long, value_name = "FILE", requires = "watch")]
    pub metrics: Option<PathBuf>,
    /// Worker threads for trees [default: as `reclaim rm`]
    #[arg(hide_short_help = true, long, value_parser = clap::value_parser!(u16).range(1..=1024))]
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
    /// Workers for reclaim [default: what `reclaim rm` uses there: the file system's profile,
    /// e.g. 2 × CPUs on ext4]
    #[arg(long)]
    pub threads: Option<u16>,
}
