//! `rm -r`'s selection flags (find's tests): their definition and the plain option struct
//! they become.

use super::*;

/// Selection on `rm -r` (the rules are in src/engine/select/mod.rs and `rm --help`).
#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "Selection (with -r)")]
pub struct SelectArgs {
    /// Entries whose name matches GLOB (find -name); repeatable
    ///
    /// Any of the repeated patterns. A matching directory goes whole, its contents carried into
    /// the size and age tests (--type f for files only)
    #[arg(long, value_name = "GLOB")]
    pub name: Vec<String>,
    /// Entries whose path below PATH matches GLOB (find -path); repeatable
    ///
    /// '*' and '?' stay within one name, '**' spans directories (find -path 'PATH/GLOB', whose
    /// '*' also matches '/'). A matching directory goes whole, as with --name
    #[arg(long = "path", value_name = "GLOB")]
    pub path_glob: Vec<String>,
    /// Never remove nor enter entries whose name matches GLOB; repeatable
    ///
    /// With a '/': whose path below PATH does; a trailing '/': directories only (find -name GLOB
    /// -prune)
    #[arg(long, value_name = "GLOB", value_parser = crate::engine::glob::exclude::parse)]
    pub exclude: Vec<crate::engine::glob::exclude::Pattern>,
    /// Test entries at most N levels below PATH (find -maxdepth N); a matching directory
    /// still goes whole
    #[arg(hide_short_help = true, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_depth: Option<u32>,
    /// Entries whose time (--time) is at least DURATION ago (30d, 6mo, 1y)
    ///
    /// Exactly: 30d is 30 x 24 h to the second (find ! -newermt '-30 days'; find -mtime +30
    /// rounds to whole days: 31+); 6mo and 1y count back on the local calendar
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub older_than: Option<std::time::Duration>,
    /// Entries whose time (--time) is less than DURATION ago
    ///
    /// find -newermt '-30 days' for 30d
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::units::parse_duration)]
    pub newer_than: Option<std::time::Duration>,
    /// Which time the age tests read: mtime (default), atime, ctime, btime
    ///
    /// mtime: data changed; atime: last read (least recently used first); ctime: inode
    /// changed; btime: created (a PATH whose file system records no creation times is not
    /// searched, and said so)
    #[arg(hide_short_help = true, long, value_name = "TIME", value_parser = crate::engine::select::TimeField::parse)]
    pub time: Option<crate::engine::select::TimeField>,
    /// Entries larger than SIZE bytes, apparent size (find -size +Nc)
    ///
    /// 100M, 1G: K, M, G are 1024-based, never rounded up as find's -size Nk
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::units::parse_size)]
    pub larger_than: Option<u64>,
    /// Entries smaller than SIZE bytes, apparent size (find -size -Nc)
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::units::parse_size)]
    pub smaller_than: Option<u64>,
    /// Entries of these types (find -type): f, d, l, p, s, b, c
    ///
    /// f file, d directory, l symlink, p fifo, s socket, b block, c character device;
    /// comma-separated or repeated
    #[arg(long = "type", value_name = "TYPES", value_parser = crate::engine::select::parse_types)]
    pub types: Vec<u8>,
    /// Entries owned by this user (find -user); repeatable: any of them
    #[arg(hide_short_help = true, long, value_name = "NAME|UID", value_parser = crate::engine::select::owner::parse_user)]
    pub user: Vec<u32>,
    /// Entries of this group (find -group); repeatable: any of them
    #[arg(hide_short_help = true, long, value_name = "NAME|GID", value_parser = crate::engine::select::owner::parse_group)]
    pub group: Vec<u32>,
    /// Empty regular files and empty directories (find -empty)
    #[arg(hide_short_help = true, long)]
    pub empty: bool,
    /// Then also remove the directories this run left empty (never the PATHs themselves)
    #[arg(hide_short_help = true, long)]
    pub prune_empty: bool,
    /// Remove exactly the paths listed in FILE ('-': standard input)
    ///
    /// One per line (or NUL-separated with -0), instead of PATH operands: `find ... -print0 |
    /// reclaim rm -r --from - -0`. Parents are opened once each and never through a symlink
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// --from and --list records are NUL-separated
    #[arg(hide_short_help = true, short = '0', long = "null")]
    pub null: bool,
    /// Write every removed path to FILE ('-': stdout): the audit trail
    ///
    /// With --dry-run: every path that would go. One per line with '\' as '\\' and a newline
    /// as '\n' (NUL-separated with -0); the run never removes it, even where it matches
    #[arg(long, value_name = "FILE")]
    pub list: Option<PathBuf>,
    /// Remove the oldest matching files until the file system has this much free
    ///
    /// 15% or 200G (by --time), counting space still pending in the trash; two walks, bounded
    /// memory
    #[arg(hide_short_help = true, long, value_name = "PERCENT|SIZE", value_parser = crate::cli::units::parse_free_target)]
    pub keep_free: Option<crate::engine::prune::policy::FreeTarget>,
}

impl SelectArgs {
    /// The tests, as a plain option struct.
    pub fn spec(&self) -> crate::engine::select::Spec {
        crate::engine::select::Spec {
            names: self.name.clone(),
            paths: self.path_glob.clone(),
            exclude: self.exclude.clone(),
            max_depth: self.max_depth,
            older_than: self.older_than,
            newer_than: self.newer_than,
            time: self.time.unwrap_or_default(),
            larger_than: self.larger_than,
            smaller_than: self.smaller_than,
            types: self.types.iter().fold(0, |a, t| a | t),
            users: self.user.clone(),
            groups: self.group.clone(),
            empty: self.empty,
            prune_empty: self.prune_empty,
        }
    }

    /// Whether anything of the selection was asked for.
    pub fn is_active(&self) -> bool {
        self.spec().is_active()
            || self.time.is_some()
            || self.from.is_some()
            || self.list.is_some()
            || self.keep_free.is_some()
    }

    /// The selection asked for, if any.
    pub fn asked(&self) -> Option<crate::reaper::rm::Asked> {
        self.is_active().then(|| crate::reaper::rm::Asked {
            spec: self.spec(),
            from: self.from.clone(),
            null: self.null,
            list: self.list.clone(),
            keep_free: self.keep_free,
        })
    }
}
