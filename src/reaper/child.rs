//! A pass in a child process (`reclaim reap --trash T --once --json`) as the trash's owner:
//! its command line, built in one place for every caller (root's `reap`, the `--watch`
//! supervisor, a relief), where its lines go, and its summary read back. Never runs a pass
//! in this process.

use std::ffi::OsString;
use std::path::Path;

use super::ReapSummary;

use crate::sys::error::ErrorEntry;
use crate::sys::logging::{Dest, Sink};

/// The flags every child pass of this process gets: the caller's (pacing, the floor of free
/// space, the workers asked for) and where to log, each line with its priority for this
/// process to read (`Sink::relay`).
#[derive(Clone, Debug, Default)]
pub struct ChildArgs(Vec<OsString>);

impl ChildArgs {
    /// `common`, with the flags that make a child log where this process does (`dest`).
    pub fn new(common: Vec<OsString>, dest: Dest) -> ChildArgs {
        let mut args = common;
        args.push(format!("--log={}", dest.arg()).into());
        args.push("--log-prefix".into());
        ChildArgs(args)
    }

    /// The whole command line of a pass over `path` asked so: `reap --trash T --once --json`,
    /// these flags, then what `ask` asks.
    fn argv(&self, path: &Path, ask: &Ask<'_>) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![
            "reap".into(),
            "--trash".into(),
            path.as_os_str().to_owned(),
            "--once".into(),
            "--json".into(),
        ];
        argv.extend(self.0.iter().cloned());
        if ask.retry_failed {
            argv.push("--retry-failed".into());
        }
        if let Some(p) = ask.early {
            let p = serde_json::to_string(p).expect("serializes");
            argv.push(format!("--early={p}").into());
        }
        match ask.now {
            Now::Due => {}
            Now::All => argv.extend(["--now".into(), "--all".into()]),
            Now::Ids(ids) => {
                argv.extend(["--now".into(), "--".into()]);
                argv.extend(ids.iter().map(OsString::from));
            }
        }
        argv
    }
}

/// What one child pass is asked beyond the flags every child gets.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ask<'a> {
    /// `--retry-failed`: entries that failed before are tried now, not after their back-off.
    pub retry_failed: bool,
    /// What is freed also in its grace window.
    pub now: Now<'a>,
    /// `--early`: the file system was found short of space so (an entry whose grace window
    /// this cuts short is recorded as freed early).
    pub early: Option<&'a crate::sys::space::Pressure>,
}

/// Which entries a child pass frees now, also in their grace window (`--now`).
#[derive(Clone, Copy, Debug, Default)]
pub enum Now<'a> {
    /// None: what is due.
    #[default]
    Due,
    /// Every entry (`--now --all`).
    All,
    /// These entries (`--now -- ID...`).
    Ids(&'a [String]),
}

/// Where a reaper's own messages and its children's stderr lines go: with the log when that is
/// the journal or syslog, else on stderr.
pub fn relay_sink(dest: Dest, prefix: bool) -> Sink {
    let to = match dest {
        Dest::Journal | Dest::Syslog => dest,
        Dest::None | Dest::File | Dest::Stderr => Dest::Stderr,
    };
    Sink::new(to).prefixed(prefix)
}

/// Reaps another user's trash (`path`, of `uid`) in a child running as that user (`reclaim
/// reap --trash T --once --json`), and returns its summary (a child that failed as an error
/// of it).
pub fn as_owner(
    path: &Path,
    uid: u32,
    (args, ask): (&ChildArgs, &Ask<'_>),
    on_line: &mut dyn FnMut(&str),
) -> ReapSummary {
    match pass_as_owner(path, uid, (args, ask), on_line) {
        Ok(s) => s,
        Err(e) => ReapSummary {
            errors: vec![ErrorEntry::new(path, e.to_string())],
            error: None,
            ..ReapSummary::default()
        },
    }
}

/// One `reap --trash T --once --json ARGS` pass over `path` in a child (`args`, asked `ask`):
/// as its owner `uid` (this process's own user: no change of user); what it prints on stderr
/// goes to `on_line`.
pub fn pass_as_owner(
    path: &Path,
    uid: u32,
    (args, ask): (&ChildArgs, &Ask<'_>),
    on_line: &mut dyn FnMut(&str),
) -> Result<ReapSummary, crate::sys::asuser::ChildError> {
    let who = crate::sys::asuser::needed(uid).then(|| crate::sys::asuser::Identity::of(uid));
    let argv = args.argv(path, ask);
    crate::sys::asuser::run_json::<ReapSummary>(who.as_ref(), &argv, on_line).map(|(s, _)| s)
}
