//! `reclaim status`: the trashes' status (`reaper::status`), as text or one JSON object.

use crate::cmd::exit::Exit;
use std::process::ExitCode;

use crate::reaper::status::{collect, Status};
use crate::sys::error::ErrorEntry;
use crate::sys::quote::quote;
use crate::trash::{self, Trash};

/// `reclaim status [--json | --brief] [--count] [--trash DIR] [--min-free F]`.
pub fn run(
    (json, brief, count): (bool, bool, bool),
    only: Option<&std::path::Path>,
    floor: crate::sys::space::Floor,
) -> ExitCode {
    let found = match only {
        Some(p) => match Trash::open_path(p).and_then(|t| Ok(trash::Found::of(&t)?)) {
            Ok(t) => trash::Discovery::one(t),
            Err(e) => {
                let err = format!("cannot use trash {}: {e}", quote(p));
                if json {
                    let st = Status {
                        errors: vec![ErrorEntry::new(p, e.to_string())],
                        ..Status::default()
                    };
                    println!("{}", serde_json::to_string(&st).expect("status serializes"));
                } else {
                    eprintln!("reclaim status: {err}");
                }
                return Exit::Failed.into();
            }
        },
        None => trash::discover(trash::uid()),
    };
    let trashes = found.trashes.clone();
    let mut st = collect(found, count, &mut |l| eprintln!("reclaim status: {l}"));
    st.space = crate::reaper::space::by_file_system(&trashes, &st, floor);
    if only.is_none() {
        st.file_systems = crate::reaper::status::file_systems();
    }
    if json {
        println!("{}", serde_json::to_string(&st).expect("status serializes"));
    } else if brief {
        println!("{}", crate::ui::status::brief(&st));
    } else {
        println!("{}", crate::ui::status::human(&st));
    }
    Exit::failed_if(!st.errors.is_empty()).into()
}
