//! The config file: the free space removals and reapers leave the others (`min_free`), defaults
//! for `reclaim rm` (mode, pacing, durability), where reapers log (`[reap] log`), and named
//! retention policies for `reclaim prune --policy NAME`. Read from `/etc/reclaim.toml`, then
//! `~/.config/reclaim.toml` (`$XDG_CONFIG_HOME`), a later file overriding an earlier one key by
//! key; `RECLAIM_CONFIG=FILE` reads only that file (`RECLAIM_CONFIG=` reads none).
//! Command-line flags always win. Never removes anything itself.
//!
//! ```toml
//! min_free = "5%"          # the free space to leave the others (or "2G"; "0": none)
//!
//! [rm]
//! mode = "background"      # now | background | wait
//! max_latency = "20ms"
//! rate = "200M"
//! iops = 5000
//! fast = false
//! durable = false
//! grace = "10min"        # durations: s, min, h, d, w, mo, y (a bare m is refused)
//!
//! [reap]
//! log = "auto"             # auto | journal | syslog | stderr | file | none
//!
//! [prune.backups]
//! dirs = ["/srv/backups"]
//! match = "backup-*"
//! keep_last = 3
//! keep_hourly = 24
//! keep_daily = 7
//! keep_weekly = 5
//! keep_monthly = 12
//! keep_yearly = 10
//! keep_within = "1y6mo"
//! older_than = "14d"
//! keep_free = "15%"
//! max_total = "300G"
//! sort = "name"            # mtime | name
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cli::args::{PaceArgs, PruneArgs, ReapArgs, RmArgs, SortArg};
use crate::cli::units::QuantityError;

/// `[rm]`: defaults for `reclaim rm` (and the pacing of `prune`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RmDefaults {
    pub mode: Option<String>,
    pub max_latency: Option<String>,
    pub rate: Option<String>,
    pub iops: Option<u64>,
    pub fast: Option<bool>,
    pub durable: Option<bool>,
    pub grace: Option<String>,
}

/// `[reap]`: defaults for `reclaim reap` and the reapers `rm --background` starts.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReapDefaults {
    /// Where reapers log (`--log`).
    pub log: Option<String>,
}

/// `[prune.NAME]`: a retention policy.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PrunePolicy {
    #[serde(default)]
    pub dirs: Vec<PathBuf>,
    #[serde(rename = "match")]
    pub pattern: Option<String>,
    pub keep_last: Option<usize>,
    pub keep_hourly: Option<usize>,
    pub keep_daily: Option<usize>,
    pub keep_weekly: Option<usize>,
    pub keep_monthly: Option<usize>,
    pub keep_yearly: Option<usize>,
    pub keep_within: Option<String>,
    pub older_than: Option<String>,
    pub keep_free: Option<String>,
    pub max_total: Option<String>,
    pub sort: Option<String>,
    pub all: Option<bool>,
    pub allow_empty: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The free space removals and reapers leave the others on a file system (`--min-free`).
    pub min_free: Option<String>,
    #[serde(default)]
    pub rm: RmDefaults,
    #[serde(default)]
    pub reap: ReapDefaults,
    #[serde(default)]
    pub prune: BTreeMap<String, PrunePolicy>,
}

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read '{0}': {1}")]
    Read(PathBuf, std::io::Error),
    #[error("'{0}': {1}")]
    Parse(PathBuf, String),
    #[error("'{0}': {1}")]
    Value(PathBuf, ValueError),
}

/// A value in the configuration that cannot be used (checked when read).
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    #[error("[rm] mode = '{0}': use now, background or wait")]
    Mode(String),
    /// A duration, size or free-space target that does not parse, in `[section]` (`rm`,
    /// `prune.NAME`) at `key`.
    #[error("[{section}] {key}: {error}")]
    Quantity {
        section: String,
        key: &'static str,
        error: QuantityError,
    },
    /// As `--iops`: at least one unlink per second (0 would stop every tree).
    #[error("[rm] iops = 0: must be at least 1")]
    ZeroIops,
    #[error("[prune.{policy}] sort: '{value}': use mtime or name")]
    Sort { policy: String, value: String },
    #[error("[reap] log = '{0}': use auto, journal, syslog, stderr, file or none")]
    Log(String),
    #[error("min_free = '{0}': {1}")]
    MinFree(String, String),
}

/// Why `reclaim prune --policy NAME` cannot be filled from the configuration.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// No `[prune.NAME]` in the files read (`files`), which define the policies `known`.
    #[error(
        "no policy [prune.{name}] in {} (known: {})",
        .files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "),
        if .known.is_empty() { "none".to_string() } else { .known.join(", ") }
    )]
    Unknown {
        name: String,
        files: Vec<PathBuf>,
        known: Vec<String>,
    },
    #[error("[prune.{0}] has no dirs and none were given")]
    NoDirs(String),
    #[error("[prune.{policy}]: {error}")]
    Quantity {
        policy: String,
        error: QuantityError,
    },
}

impl Config {
    /// The files read, in order (later ones override earlier ones).
    pub fn files() -> Vec<PathBuf> {
        if let Some(one) = std::env::var_os("RECLAIM_CONFIG") {
            return if one.is_empty() {
                Vec::new()
            } else {
                vec![PathBuf::from(one)]
            };
        }
        // Only a directory of the caller's own (root's, for root): see `userdirs`.
        let user = crate::sys::userdirs::config_home();
        let mut v = vec![PathBuf::from("/etc/reclaim.toml")];
        v.extend(user.map(|u| u.join("reclaim.toml")));
        v
    }

    /// Loads and merges the config files; a missing file is no error (except one named by
    /// `RECLAIM_CONFIG`), a malformed one is. What to warn about (files skipped) goes to
    /// `warnings`.
    pub fn load(warnings: &mut Vec<String>) -> Result<Config, ConfigError> {
        let explicit = std::env::var_os("RECLAIM_CONFIG").is_some();
        let mut cfg = Config::default();
        for f in Config::files() {
            match read_file(&f) {
                Ok(text) => cfg.merge(Config::parse(&f, &text)?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {}
                // Another user's HOME (sudo -u keeps it): not ours to read; say so, go on.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && !explicit => {
                    warnings.push(format!("skipping '{}': {e}", f.display()));
                }
                Err(e) => return Err(ConfigError::Read(f, e)),
            }
        }
        cfg.merge(Config::from_env()?);
        Ok(cfg)
    }

    /// `RECLAIM_MODE`, `RECLAIM_MAX_LATENCY`, `RECLAIM_RATE`, `RECLAIM_IOPS`, as an `[rm]`;
    /// `RECLAIM_MIN_FREE` as `min_free`.
    fn from_env() -> Result<Config, ConfigError> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let iops = match var("RECLAIM_IOPS") {
            Some(v) => Some(v.parse::<u64>().map_err(|e| {
                ConfigError::Parse("environment".into(), format!("RECLAIM_IOPS={v}: {e}"))
            })?),
            None => None,
        };
        let cfg = Config {
            rm: RmDefaults {
                mode: var("RECLAIM_MODE"),
                max_latency: var("RECLAIM_MAX_LATENCY"),
                rate: var("RECLAIM_RATE"),
                iops,
                ..RmDefaults::default()
            },
            min_free: var("RECLAIM_MIN_FREE"),
            reap: ReapDefaults::default(),
            prune: BTreeMap::new(),
        };
        cfg.check()
            .map_err(|e| ConfigError::Value("environment".into(), e))?;
        Ok(cfg)
    }

    pub fn parse(file: &Path, text: &str) -> Result<Config, ConfigError> {
        let cfg: Config =
            toml::from_str(text).map_err(|e| ConfigError::Parse(file.into(), e.to_string()))?;
        cfg.check()
            .map_err(|e| ConfigError::Value(file.into(), e))?;
        Ok(cfg)
    }

    /// Values are checked when read, so a typo fails every command at once, not the nightly
    /// prune alone.
    fn check(&self) -> Result<(), ValueError> {
        let r = &self.rm;
        if let Some(m) = &r.mode {
            if !["now", "background", "wait"].contains(&m.as_str()) {
                return Err(ValueError::Mode(m.clone()));
            }
        }
        let rm = |key: &'static str| {
            move |error| ValueError::Quantity {
                section: "rm".into(),
                key,
                error,
            }
        };
        for (k, v) in [("max_latency", &r.max_latency), ("grace", &r.grace)] {
            if let Some(v) = v {
                crate::cli::units::parse_duration(v).map_err(rm(k))?;
            }
        }
        if let Some(v) = &r.rate {
            crate::cli::units::parse_bytes(v).map_err(rm("rate"))?;
        }
        // As `--iops`: at least one unlink per second (0 would stop every tree).
        if r.iops == Some(0) {
            return Err(ValueError::ZeroIops);
        }
        if let Some(v) = &self.min_free {
            crate::cli::units::parse_min_free(v).map_err(|e| ValueError::MinFree(v.clone(), e))?;
        }
        if let Some(l) = &self.reap.log {
            if crate::sys::logging::Target::parse(l).is_none() {
                return Err(ValueError::Log(l.clone()));
            }
        }
        for (name, p) in &self.prune {
            let at = |key: &'static str| {
                move |error| ValueError::Quantity {
                    section: format!("prune.{name}"),
                    key,
                    error,
                }
            };
            if let Some(v) = &p.keep_within {
                crate::cli::units::parse_calendar_span(v).map_err(at("keep_within"))?;
            }
            if let Some(v) = &p.older_than {
                crate::cli::units::parse_duration(v).map_err(at("older_than"))?;
            }
            if let Some(v) = &p.keep_free {
                crate::cli::units::parse_free_target(v).map_err(at("keep_free"))?;
            }
            if let Some(v) = &p.max_total {
                crate::cli::units::parse_size_or_zero(v).map_err(at("max_total"))?;
            }
            if let Some(s) = &p.sort {
                if s != "mtime" && s != "name" {
                    return Err(ValueError::Sort {
                        policy: name.clone(),
                        value: s.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    fn merge(&mut self, later: Config) {
        self.min_free = later.min_free.or(self.min_free.take());
        let (a, b) = (&mut self.rm, later.rm);
        a.mode = b.mode.or(a.mode.take());
        a.max_latency = b.max_latency.or(a.max_latency.take());
        a.rate = b.rate.or(a.rate.take());
        a.iops = b.iops.or(a.iops);
        a.fast = b.fast.or(a.fast);
        a.durable = b.durable.or(a.durable);
        a.grace = b.grace.or(a.grace.take());
        self.reap.log = later.reap.log.or(self.reap.log.take());
        self.prune.extend(later.prune);
    }
}

impl Config {
    /// `min_free` (checked when read).
    fn min_free(&self) -> Option<crate::sys::space::Floor> {
        self.min_free
            .as_deref()
            .and_then(|v| crate::cli::units::parse_min_free(v).ok())
    }

    /// Fills what `reclaim rm`'s command line left open from `[rm]`.
    pub fn apply_rm(&self, a: &mut RmArgs) {
        let r = &self.rm;
        if !(a.mode.now || a.mode.background || a.mode.wait) {
            match r.mode.as_deref() {
                Some("background") => a.mode.background = true,
                Some("wait") => a.mode.wait = true,
                _ => {}
            }
        }
        apply_pace(r, &mut a.pace);
        a.min_free = a.min_free.or_else(|| self.min_free());
        a.durable |= r.durable.unwrap_or(false);
        if a.grace.is_none() && a.mode.background {
            a.grace = r
                .grace
                .as_deref()
                .and_then(|g| crate::cli::units::parse_duration(g).ok());
        }
    }

    /// Fills `reclaim status`'s floor from `min_free`.
    pub fn apply_status(&self, a: &mut crate::cli::args::StatusArgs) {
        a.min_free = a.min_free.or_else(|| self.min_free());
    }

    /// Fills `reclaim browse`'s open pacing flags from `[rm]`; its grace window (the flag,
    /// else `[rm] grace`, else 10 minutes) and free-space floor (`min_free`, else the default).
    pub fn apply_browse(
        &self,
        a: &mut crate::cli::args::BrowseArgs,
    ) -> (std::time::Duration, crate::sys::space::Floor) {
        apply_pace(&self.rm, &mut a.pace);
        let grace = a
            .grace
            .or_else(|| {
                self.rm
                    .grace
                    .as_deref()
                    .and_then(|g| crate::cli::units::parse_duration(g).ok())
            })
            .unwrap_or(std::time::Duration::from_secs(600));
        (grace, self.min_free().unwrap_or_default())
    }

    /// Fills `reclaim reap`'s open flags from `[reap]`.
    pub fn apply_reap(&self, a: &mut ReapArgs) {
        a.min_free = a.min_free.or_else(|| self.min_free());
        if a.log.is_none() {
            a.log = self
                .reap
                .log
                .as_deref()
                .and_then(crate::sys::logging::Target::parse);
        }
    }

    /// Fills `reclaim prune`'s open flags from `[prune.NAME]` (`--policy NAME`) and `[rm]`.
    pub fn apply_prune(&self, a: &mut PruneArgs) -> Result<(), PolicyError> {
        apply_pace(&self.rm, &mut a.pace);
        a.min_free = a.min_free.or_else(|| self.min_free());
        let Some(name) = &a.policy else {
            return Ok(());
        };
        let p = self.prune.get(name).ok_or_else(|| PolicyError::Unknown {
            name: name.clone(),
            files: Config::files(),
            known: self.prune.keys().cloned().collect(),
        })?;
        if a.dirs.is_empty() {
            a.dirs = p.dirs.iter().map(|d| d.clone().into_os_string()).collect();
        }
        if a.dirs.is_empty() {
            return Err(PolicyError::NoDirs(name.clone()));
        }
        a.pattern = a.pattern.take().or_else(|| p.pattern.clone());
        a.keep_last = a.keep_last.or(p.keep_last);
        a.keep_hourly = a.keep_hourly.or(p.keep_hourly);
        a.keep_daily = a.keep_daily.or(p.keep_daily);
        a.keep_weekly = a.keep_weekly.or(p.keep_weekly);
        a.keep_monthly = a.keep_monthly.or(p.keep_monthly);
        a.keep_yearly = a.keep_yearly.or(p.keep_yearly);
        let u = |error| PolicyError::Quantity {
            policy: name.clone(),
            error,
        };
        if a.keep_within.is_none() {
            a.keep_within = p
                .keep_within
                .as_deref()
                .map(crate::cli::units::parse_calendar_span)
                .transpose()
                .map_err(u)?;
        }
        if a.older_than.is_none() {
            a.older_than = p
                .older_than
                .as_deref()
                .map(crate::cli::units::parse_duration)
                .transpose()
                .map_err(u)?;
        }
        if a.keep_free.is_none() {
            a.keep_free = p
                .keep_free
                .as_deref()
                .map(crate::cli::units::parse_free_target)
                .transpose()
                .map_err(u)?;
        }
        if a.max_total.is_none() {
            a.max_total = p
                .max_total
                .as_deref()
                .map(crate::cli::units::parse_size_or_zero)
                .transpose()
                .map_err(u)?;
        }
        if a.sort.is_none() {
            a.sort = match p.sort.as_deref() {
                Some("name") => Some(SortArg::Name),
                Some("mtime") => Some(SortArg::Mtime),
                _ => None,
            };
        }
        a.all |= p.all.unwrap_or(false);
        a.allow_empty |= p.allow_empty.unwrap_or(false);
        Ok(())
    }
}

/// Pacing defaults, unless the command line chose: an explicit `--fast` ignores a configured
/// latency budget and rate, and an explicit budget or rate ignores a configured `fast`.
/// The most a configuration file may hold.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A configuration file's text, read as hostile input (`safefile`): never through a final
/// symlink, never blocking on a FIFO, only a regular file of the caller's or root's of at most
/// `MAX_CONFIG_BYTES`. What it is instead is an error of kind `InvalidData` saying so.
fn read_file(f: &Path) -> std::io::Result<String> {
    use crate::trash::safefile::{self, Bad, Expect};
    let me = rustix::process::geteuid().as_raw();
    let want = Expect {
        owners: &[me, 0],
        max: MAX_CONFIG_BYTES,
        one_link: false,
    };
    let bad = |b: Bad| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("it {b}"));
    match safefile::read_path(f, &want) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text")
        }),
        Err(Bad::Missing) => Err(std::io::ErrorKind::NotFound.into()),
        Err(Bad::Os(e)) => Err(std::io::Error::from_raw_os_error(e.raw_os_error())),
        Err(b) => Err(bad(b)),
    }
}

fn apply_pace(r: &RmDefaults, p: &mut PaceArgs) {
    let explicit = p.fast || p.max_latency.is_some() || p.rate.is_some();
    if !explicit {
        p.fast = r.fast.unwrap_or(false);
        if !p.fast {
            p.max_latency = r
                .max_latency
                .as_deref()
                .and_then(|v| crate::cli::units::parse_duration(v).ok());
            p.rate = r
                .rate
                .as_deref()
                .and_then(|v| crate::cli::units::parse_bytes(v).ok());
        }
    }
    p.iops = p.iops.or(r.iops);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let doc = include_str!("config.rs");
        let example: String = doc
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| l.trim_start_matches("//!").trim_start())
            .collect::<Vec<_>>()
            .join("\n");
        let cfg = Config::parse(Path::new("doc"), &example).unwrap();
        assert_eq!(cfg.rm.mode.as_deref(), Some("background"));
        assert_eq!(cfg.prune["backups"].keep_last, Some(3));
        assert_eq!(cfg.prune["backups"].keep_yearly, Some(10));
        assert_eq!(cfg.prune["backups"].keep_within.as_deref(), Some("1y6mo"));
        assert_eq!(cfg.prune["backups"].pattern.as_deref(), Some("backup-*"));
        assert_eq!(cfg.reap.log.as_deref(), Some("auto"));
    }

    #[test]
    fn contrib_example_parses() {
        let cfg = Config::parse(
            Path::new("contrib"),
            include_str!("../../contrib/reclaim.toml"),
        )
        .unwrap();
        assert_eq!(cfg.prune["backups"].keep_daily, Some(7));
    }

    #[test]
    fn the_floor_of_free_space_is_one_key_for_every_command() {
        use crate::sys::space::Floor;
        let cfg = Config::parse(Path::new("t"), "min_free = \"2G\"\n[rm]\n").unwrap();
        assert_eq!(cfg.min_free(), Some(Floor::Bytes(2 << 30)));
        let later = Config::parse(Path::new("u"), "min_free = \"0\"").unwrap();
        let mut merged = cfg.clone();
        merged.merge(later);
        assert_eq!(merged.min_free(), Some(Floor::Off));
        assert_eq!(
            Config::default().min_free(),
            None,
            "unset: the default floor"
        );
    }

    #[test]
    fn rejects_typos_and_bad_values() {
        for bad in [
            "[rm]\nmax_latncy = \"20ms\"",
            "[rm]\nmode = \"later\"",
            "[rm]\nmax_latency = \"fast\"",
            "[prune.x]\nkeep_free = \"150%\"",
            "[prune.x]\nsort = \"size\"",
            "[prune.x]\nkeep_within = \"6m\"",
            "[prune.x]\nolder_than = \"6m\"",
            "[rm]\ngrace = \"10m\"",
            "[rm]\nmax_latency = \"20\"",
            "[prune.x]\nkeep_hourli = 3",
            "[reap]\nlog = \"journald\"",
            "[reap]\nlogs = \"file\"",
            "min_free = \"150%\"",
            "min_free = \"lots\"",
        ] {
            assert!(Config::parse(Path::new("t"), bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_name_the_file_section_and_key() {
        let err = |text: &str| Config::parse(Path::new("t"), text).unwrap_err().to_string();
        assert_eq!(
            err("[rm]\nmode = \"later\""),
            "'t': [rm] mode = 'later': use now, background or wait"
        );
        assert_eq!(
            err("[rm]\ngrace = \"fast\""),
            "'t': [rm] grace: 'fast' is not a duration (try 30s, 10min, 12h, 3d, 2w, 6mo, 1y, 3d12h)"
        );
        assert_eq!(
            err("[rm]\niops = 0"),
            "'t': [rm] iops = 0: must be at least 1"
        );
        assert_eq!(
            err("min_free = \"150%\""),
            "'t': min_free = '150%': '150%' is not a percentage from 0% to 100%"
        );
        assert_eq!(
            err("[prune.x]\nkeep_free = \"150%\""),
            "'t': [prune.x] keep_free: '150%' is not a percentage from 0% to 100%"
        );
        assert_eq!(
            err("[prune.x]\nsort = \"size\""),
            "'t': [prune.x] sort: 'size': use mtime or name"
        );
        assert_eq!(
            err("[prune.x]\nkeep_within = \"6m\""),
            "'t': [prune.x] keep_within: 6m: minutes or months? say 6min or 6mo"
        );
        assert_eq!(
            err("[rm]\ngrace = \"10m\""),
            "'t': [rm] grace: 10m: minutes or months? say 10min or 10mo"
        );
    }

    #[test]
    fn prune_policies_take_restics_keys_and_flags_win() {
        use clap::Parser;
        let cfg = Config::parse(
            Path::new("t"),
            "[prune.p]\ndirs = [\"/srv/b\"]\nkeep_last = 1\nkeep_hourly = 24\nkeep_daily = 7\n\
             keep_weekly = 5\nkeep_monthly = 12\nkeep_yearly = 3\nkeep_within = \"2y5mo7d3h\"\n",
        )
        .unwrap();
        let cli = crate::cli::args::Cli::try_parse_from([
            "reclaim",
            "prune",
            "--policy",
            "p",
            "--keep-daily",
            "2",
            "--keep-within",
            "36h",
        ])
        .unwrap();
        let crate::cli::args::Command::Prune(crate::cli::args::Deferred(mut a)) = cli.command
        else {
            panic!("not prune");
        };
        cfg.apply_prune(&mut a).unwrap();
        assert_eq!(a.dirs, [std::ffi::OsString::from("/srv/b")]);
        assert_eq!(
            (a.keep_last, a.keep_hourly, a.keep_daily, a.keep_weekly),
            (Some(1), Some(24), Some(2), Some(5))
        );
        assert_eq!((a.keep_monthly, a.keep_yearly), (Some(12), Some(3)));
        assert_eq!(
            a.keep_within,
            Some(crate::engine::prune::policy::CalendarSpan {
                hours: 36,
                ..Default::default()
            })
        );
    }

    #[test]
    fn policy_errors_read_as_before() {
        let unknown = PolicyError::Unknown {
            name: "x".into(),
            files: vec!["/etc/reclaim.toml".into(), "/h/.config/reclaim.toml".into()],
            known: vec![],
        };
        assert_eq!(
            unknown.to_string(),
            "no policy [prune.x] in /etc/reclaim.toml, /h/.config/reclaim.toml (known: none)"
        );
        let unknown = PolicyError::Unknown {
            name: "x".into(),
            files: vec!["/etc/reclaim.toml".into()],
            known: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            unknown.to_string(),
            "no policy [prune.x] in /etc/reclaim.toml (known: a, b)"
        );
        let quantity = PolicyError::Quantity {
            policy: "x".into(),
            error: crate::cli::units::parse_duration("3d12").unwrap_err(),
        };
        assert_eq!(
            quantity.to_string(),
            format!(
                "[prune.x]: '3d12': a number needs a unit ({})",
                crate::cli::units::UNITS
            )
        );
        assert_eq!(
            PolicyError::NoDirs("x".into()).to_string(),
            "[prune.x] has no dirs and none were given"
        );
    }

    #[test]
    fn reap_log_fills_what_the_command_line_left_open() {
        use crate::sys::logging::Target;
        use clap::Parser;
        let cfg = Config::parse(Path::new("t"), "[reap]\nlog = \"syslog\"").unwrap();
        let reap = |args: &[&str]| {
            let cli = crate::cli::args::Cli::try_parse_from(args).unwrap();
            let crate::cli::args::Command::Reap(crate::cli::args::Deferred(mut a)) = cli.command
            else {
                panic!("not reap");
            };
            cfg.apply_reap(&mut a);
            a.log
        };
        assert_eq!(reap(&["reclaim", "reap", "--watch"]), Some(Target::Syslog));
        assert_eq!(
            reap(&["reclaim", "reap", "--watch", "--log", "journal"]),
            Some(Target::Journal)
        );
        assert_eq!(
            Config::parse(Path::new("t"), "[reap]\nlog = \"x\"")
                .unwrap_err()
                .to_string(),
            "'t': [reap] log = 'x': use auto, journal, syslog, stderr, file or none"
        );
    }

    #[test]
    fn later_files_override_key_by_key() {
        let mut a = Config::parse(Path::new("a"), "[rm]\nrate = \"1M\"\niops = 5").unwrap();
        a.merge(Config::parse(Path::new("b"), "[rm]\niops = 7").unwrap());
        assert_eq!(a.rm.rate.as_deref(), Some("1M"));
        assert_eq!(a.rm.iops, Some(7));
    }
}
