//! A pass in a child process (`reclaim reap --trash T --once --json`) as the trash's owner:
//! its command line, built in one place for every caller (root's `reap`, the `--watch`
//! supervisor, a relief), where its lines go, and its summary read back. Never runs a pass
//! in this process.

use std::ffi::OsString;
use std::path::Path;

use super::ReapSummary;

use crate::sys::error::ErrorEntry;
use crate::sys::logging::{Dest, Sink};

/// The flags that make a child reaper (another user's pass) log where this one does, each line
/// with its priority for this process to read (`Sink::relay`).
pub fn child_log_args(dest: Dest) -> [OsString; 2] {
    [
        format!("--log={}", dest.arg()).into(),
        "--log-prefix".into(),
    ]
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
    args: &[OsString],
    on_line: &mut dyn FnMut(&str),
) -> ReapSummary {
    match pass_as_owner(path, uid, args, on_line) {
        Ok(s) => s,
        Err(e) => ReapSummary {
            errors: vec![ErrorEntry::new(path, e.to_string())],
            error: None,
            ..ReapSummary::default()
        },
    }
}

/// One `reap --trash T --once --json ARGS` pass over `path` in a child: as its owner `uid`
/// (this process's own user: no change of user); what it prints on stderr goes to `on_line`.
pub fn pass_as_owner(
    path: &Path,
    uid: u32,
    args: &[OsString],
    on_line: &mut dyn FnMut(&str),
) -> Result<ReapSummary, crate::sys::asuser::ChildError> {
    let who = crate::sys::asuser::needed(uid).then(|| crate::sys::asuser::Identity::of(uid));
    let mut argv: Vec<OsString> = vec![
        "reap".into(),
        "--trash".into(),
        path.as_os_str().to_owned(),
        "--once".into(),
        "--json".into(),
    ];
    argv.extend(args.iter().cloned());
    crate::sys::asuser::run_json::<ReapSummary>(who.as_ref(), &argv, on_line).map(|(s, _)| s)
}
