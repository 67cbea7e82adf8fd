//! Where a reaper's log lines go (`reclaim reap --log`, `[reap] log`): systemd's journal
//! (its native protocol, with `RECLAIM_*` fields), syslog (`/dev/log`), stderr, or the
//! trash's `reaper.log` (which the reaper appends to itself, as the trash's owner). One line
//! per freed entry and per failure, each with a priority. Writing a line never stops the
//! reaper: a journal or syslog that cannot take it gets it on stderr instead.

pub mod journal;
pub mod syslog;

use std::io::Write;
use std::path::{Path, PathBuf};

/// What `--log` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// The journal under systemd, reaper.log for a detached reaper, stderr for --watch; a
    /// plain `reap` and `reap --once` log nothing (their summary lists what was freed and
    /// each failure)
    Auto,
    /// systemd's journal (native protocol, structured RECLAIM_* fields; stderr if it cannot
    /// be reached)
    Journal,
    /// syslog through /dev/log (facility daemon, tag reclaim[PID])
    Syslog,
    /// stderr, one line per entry (a detached reaper, whose stderr is /dev/null: reaper.log)
    Stderr,
    /// each trash's reaper.log, whose last lines `reclaim status` shows
    File,
    /// nowhere
    None,
}

impl Target {
    /// The `--log` value (and `[reap] log` key) naming it.
    pub fn name(self) -> &'static str {
        match self {
            Target::Auto => "auto",
            Target::Journal => "journal",
            Target::Syslog => "syslog",
            Target::Stderr => "stderr",
            Target::File => "file",
            Target::None => "none",
        }
    }

    /// The target named `s` (as `--log` takes it).
    pub fn parse(s: &str) -> Option<Target> {
        <Target as clap::ValueEnum>::from_str(s, false).ok()
    }

    /// Where lines go: `auto` decided for a reaper that is `detached` (started by `rm
    /// --background`), or the service (`watch`).
    pub fn resolve(self, detached: bool, watch: bool) -> Dest {
        match self {
            Target::Journal => Dest::Journal,
            Target::Syslog => Dest::Syslog,
            // A detached reaper's stderr is /dev/null.
            Target::Stderr if detached => Dest::File,
            Target::Stderr => Dest::Stderr,
            Target::File => Dest::File,
            Target::None => Dest::None,
            Target::Auto if detached => Dest::File,
            Target::Auto if journal::stderr_is_journal() => Dest::Journal,
            Target::Auto if watch => Dest::Stderr,
            Target::Auto => Dest::None,
        }
    }
}

/// Where lines go (`Target` with `auto` decided).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    None,
    /// The trash's `reaper.log` (the reaper writes it; lines about no trash go to stderr).
    File,
    Stderr,
    Journal,
    Syslog,
}

impl Dest {
    /// The explicit `--log` value for a child that must log to the same place.
    pub fn arg(self) -> &'static str {
        match self {
            Dest::None => "none",
            Dest::File => "file",
            Dest::Stderr => "stderr",
            Dest::Journal => "journal",
            Dest::Syslog => "syslog",
        }
    }
}

/// How much a line matters: syslog's levels, as the journal's `PRIORITY=`, syslog's PRI and
/// the `<N>` prefix of a stderr line the journal reads take them. `journalctl -p warning`
/// shows the failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// Something could not be freed, or is damaged.
    Err = 3,
    Warning = 4,
    /// Left for later on purpose (a failed entry's back-off).
    Notice = 5,
    /// Freed.
    Info = 6,
}

impl Priority {
    pub fn level(self) -> u8 {
        self as u8
    }

    fn from_level(n: u8) -> Option<Priority> {
        Some(match n {
            3 => Priority::Err,
            4 => Priority::Warning,
            5 => Priority::Notice,
            6 => Priority::Info,
            _ => return None,
        })
    }
}

/// One log line, and the fields the journal keeps beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub priority: Priority,
    /// One line (paths quoted, so no newline or control character in it).
    pub message: String,
    /// Journal fields (`RECLAIM_PATH`, ...): names of capital letters, digits and `_` that
    /// do not start with `_`; any bytes as values.
    pub fields: Vec<(&'static str, Vec<u8>)>,
}

impl Record {
    pub fn new(priority: Priority, message: impl Into<String>) -> Record {
        Record {
            priority,
            message: message.into(),
            fields: Vec::new(),
        }
    }

    pub fn field(mut self, name: &'static str, value: impl AsRef<[u8]>) -> Record {
        debug_assert!(journal::valid_name(name), "{name}");
        self.fields.push((name, value.as_ref().to_vec()));
        self
    }

    /// A path's exact bytes (not UTF-8, newlines and all).
    pub fn path(self, name: &'static str, p: &Path) -> Record {
        use std::os::unix::ffi::OsStrExt;
        self.field(name, p.as_os_str().as_bytes())
    }
}

/// Writes records where a `Dest` says.
#[derive(Clone, Debug)]
pub struct Sink {
    dest: Dest,
    /// stderr lines start with their priority, `<N>`: stderr is the journal's stream
    /// (`JOURNAL_STREAM` matches it; the journal reads the prefix), or a parent reaper reads
    /// this one's lines (`prefixed`).
    prefix: bool,
    journal: PathBuf,
    syslog: PathBuf,
}

impl Sink {
    /// A sink to `dest`; the sockets are the system's unless `RECLAIM_JOURNAL_SOCKET` or
    /// `RECLAIM_SYSLOG_SOCKET` name others (tests).
    pub fn new(dest: Dest) -> Sink {
        let env = |k: &str, default: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from(default), PathBuf::from)
        };
        Sink {
            dest,
            prefix: journal::stderr_is_journal(),
            journal: env(journal::SOCKET_ENV, journal::SOCKET),
            syslog: env(syslog::SOCKET_ENV, syslog::SOCKET),
        }
    }

    /// A sink that writes nothing.
    pub fn quiet() -> Sink {
        Sink {
            dest: Dest::None,
            prefix: false,
            journal: PathBuf::new(),
            syslog: PathBuf::new(),
        }
    }

    /// Also with `<N>` prefixes on stderr when `yes`.
    pub fn prefixed(mut self, yes: bool) -> Sink {
        self.prefix |= yes;
        self
    }

    pub fn dest(&self) -> Dest {
        self.dest
    }

    /// Writes `rec`. `context` starts its stderr form (the trash it is about); the journal has
    /// it as a field instead, and syslog's messages name their paths already.
    pub fn write(&self, rec: &Record, context: Option<&str>) {
        let sent = match self.dest {
            Dest::None => return,
            Dest::Journal => journal::send(&self.journal, rec),
            Dest::Syslog => syslog::send(&self.syslog, rec),
            Dest::Stderr | Dest::File => {
                return stderr_line(rec, context, self.prefix);
            }
        };
        if sent.is_err() {
            // Asked for the journal: its stream's form, which a journal reads.
            stderr_line(rec, context, self.prefix || self.dest == Dest::Journal);
        }
    }

    /// A line a child reaper printed on stderr (see `asuser::run`), which may begin with a
    /// priority `<N>` (its fallback when the journal could not be reached); without one, or
    /// with one a child may not claim (above `err`), it is a warning.
    pub fn relay(&self, line: &str, context: Option<&str>) {
        let (priority, text) = split_priority(line);
        self.write(&Record::new(priority, text), context);
    }
}

/// A line's `<N>` prefix (3 to 6) and the rest; `Warning` and the whole line without one.
pub fn split_priority(line: &str) -> (Priority, &str) {
    let b = line.as_bytes();
    if b.len() >= 3 && b[0] == b'<' && b[2] == b'>' && b[1].is_ascii_digit() {
        if let Some(p) = Priority::from_level(b[1] - b'0') {
            return (p, &line[3..]);
        }
    }
    (Priority::Warning, line)
}

/// The stderr form: `[<N>][CONTEXT: ]MESSAGE`, written at once.
fn stderr_line(rec: &Record, context: Option<&str>, prefix: bool) {
    let mut line = String::new();
    if prefix {
        line.push_str(&format!("<{}>", rec.priority.level()));
    }
    if let Some(c) = context {
        line.push_str(c);
        line.push_str(": ");
    }
    line.push_str(&rec.message);
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_by_name() {
        for t in [
            Target::Auto,
            Target::Journal,
            Target::Syslog,
            Target::Stderr,
            Target::File,
            Target::None,
        ] {
            assert_eq!(Target::parse(t.name()), Some(t));
        }
        assert_eq!(Target::parse("journald"), None);
    }

    #[test]
    fn auto_is_the_file_when_detached_and_nothing_for_a_plain_reap() {
        // (Under systemd's JOURNAL_STREAM the tests' stderr is not the journal.)
        if journal::stderr_is_journal() {
            return;
        }
        assert_eq!(Target::Auto.resolve(true, false), Dest::File);
        assert_eq!(Target::Auto.resolve(false, true), Dest::Stderr);
        assert_eq!(Target::Auto.resolve(false, false), Dest::None);
        assert_eq!(Target::Syslog.resolve(true, true), Dest::Syslog);
    }

    #[test]
    fn a_relayed_line_keeps_only_the_priorities_a_reaper_uses() {
        assert_eq!(
            split_priority("<3>cannot free"),
            (Priority::Err, "cannot free")
        );
        assert_eq!(split_priority("<6>freed"), (Priority::Info, "freed"));
        assert_eq!(split_priority("<0>panic"), (Priority::Warning, "<0>panic"));
        assert_eq!(split_priority("<1"), (Priority::Warning, "<1"));
        assert_eq!(split_priority("plain"), (Priority::Warning, "plain"));
    }
}
