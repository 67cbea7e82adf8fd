//! `reclaim restore`: puts trashed entries back (`trash::restore`) and says what became of
//! each, as lines or one JSON object.

use crate::cmd::exit::Exit;
use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use crate::sys::error::ErrorEntry;
use crate::sys::quote::quote;
use crate::trash::restore::{restore, Report};
use crate::trash::{self, Trash};

/// Restored paths of one argument said one by one up to this many; more in one line.
const MAX_LINES: usize = 10;

/// `reclaim restore [--json] [--trash DIR] [--to PATH] ID|PATH...`.
pub fn run(args: &[OsString], json: bool, only: Option<&Path>, to: Option<&Path>) -> ExitCode {
    let me = trash::uid();
    let trashes = match only {
        Some(p) => match Trash::open_path(p).and_then(|t| Ok(trash::Found::of(&t)?)) {
            Ok(t) => vec![t],
            Err(e) => {
                let report = Report {
                    errors: vec![ErrorEntry::new(p, format!("cannot use this trash: {e}"))],
                    ..Report::default()
                };
                if json {
                    finish(json, report);
                } else {
                    eprintln!("reclaim: {}", report.errors[0]);
                }
                return Exit::Failed.into();
            }
        },
        None => trash::discover(me).trashes,
    };
    let mut report = Report::default();
    for a in args {
        let outcomes = restore(&trashes, a, me, to);
        // Entries that keep some of their paths (a batch restored in part): said after them.
        let mut kept: Vec<(String, u64)> = Vec::new();
        let restored = outcomes.iter().filter(|o| o.is_ok()).count();
        let restored_any = restored > 0;
        // A batch's many paths: one line (`--json` lists each).
        let one_line = restored > MAX_LINES;
        if let (false, Some(Ok(r))) = (json || !one_line, outcomes.iter().find(|o| o.is_ok())) {
            let dir = r.path.exact();
            let dir = dir.parent().unwrap_or(Path::new("/"));
            println!(
                "restored {}{} of entry {} into {} (`--json` lists each)",
                if r.partial {
                    "what a reaper could not free of "
                } else {
                    ""
                },
                crate::sys::format::plural(restored as u64, "path", "paths"),
                quote(&r.id),
                quote(dir)
            );
        }
        for o in outcomes {
            match o {
                Ok(r) => {
                    if !json && !one_line {
                        let what = if r.partial {
                            "what a reaper could not free of "
                        } else {
                            ""
                        };
                        println!("restored {what}{} (entry {})", r.path, quote(&r.id));
                    }
                    report.restored.push(r);
                }
                Err((original, id, e)) => {
                    let arg = Path::new(a);
                    // The entry by its ID, whatever it was asked by.
                    let shown = match (&original, &id) {
                        (Some(o), Some(id)) => format!("{} (entry {})", quote(o), quote(id)),
                        (None, Some(id)) if id.as_bytes() != arg.as_os_str().as_encoded_bytes() => {
                            format!("{} (entry {})", quote(arg), quote(id))
                        }
                        _ => quote(arg),
                    };
                    if !json {
                        eprintln!("reclaim: cannot restore {shown}: {e}");
                    }
                    if let (Some(id), true) = (&id, restored_any) {
                        match kept.iter_mut().find(|(k, _)| k == id) {
                            Some((_, n)) => *n += 1,
                            None => kept.push((id.clone(), 1)),
                        }
                    }
                    report.errors.push(ErrorEntry::new(
                        original.as_deref().unwrap_or(arg),
                        e.to_string(),
                    ));
                }
            }
        }
        if !json {
            for (id, n) in kept {
                eprintln!(
                    "reclaim: entry {} keeps {} (named above); `reclaim restore {}` again puts \
                     them back once their names are free",
                    quote(&id),
                    crate::sys::format::plural(n, "path", "paths"),
                    crate::sys::quote::quote_if_needed(&id)
                );
            }
        }
    }
    let failed = !report.errors.is_empty();
    finish(json, report);
    Exit::failed_if(failed).into()
}

fn finish(json: bool, report: Report) {
    if json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("report serializes")
        );
    }
}
