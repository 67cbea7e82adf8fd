//! Man pages and shell completions, generated from the clap definition in `args.rs` (so they
//! cannot drift from the real flags), as bytes: `cmd::man` and `cmd::completions` write them.

use clap::CommandFactory;

use crate::cli::args::Cli;

/// Shell completions for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "reclaim", &mut out);
    out
}

/// `reclaim.1` and one page per subcommand (`reclaim-rm.1`, ...): each file name with its
/// text.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let cmd = Cli::command();
    let page = |cmd: clap::Command, name: String| -> (String, Vec<u8>) {
        let mut out = Vec::new();
        let sub = name.strip_prefix("reclaim-").unwrap_or("");
        // clap wants a 'static name; these few strings live until the process exits.
        let static_name: &'static str = Box::leak(name.clone().into_boxed_str());
        let versioned = cmd.get_version().is_some();
        let typed = if sub.is_empty() {
            "reclaim".to_string()
        } else {
            format!("reclaim {sub}")
        };
        let headings: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_help_heading().map(String::from))
            .collect();
        let synopsis = synopsis(&cmd, &typed);
        let man = clap_mangen::Man::new(cmd.name(static_name))
            .source(format!("reclaim {}", env!("CARGO_PKG_VERSION")));
        let rendered: std::io::Result<()> = (|| {
            man.render_title(&mut out)?;
            man.render_name_section(&mut out)?;
            out.extend_from_slice(synopsis.as_bytes());
            man.render_description_section(&mut out)?;
            let mut options = Vec::new();
            man.render_options_section(&mut options)?;
            out.extend_from_slice(keep_heading_case(&options, &headings).as_bytes());
            if sub.is_empty() {
                man.render_subcommands_section(&mut out)?;
            }
            Ok(())
        })();
        rendered.expect("writing into memory");
        for (title, body) in extra_sections(sub) {
            out.extend_from_slice(roff_section(title, &body).as_bytes());
        }
        if versioned {
            man.render_version_section(&mut out)
                .expect("writing into memory");
        }
        (format!("{name}.1"), out)
    };
    let mut pages = vec![page(cmd.clone(), "reclaim".into())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        // Its flags, deferred until it is built (`args::Deferred`).
        let mut sub = sub.clone();
        sub.build();
        let name = format!("reclaim-{}", sub.get_name());
        pages.push(page(sub, name));
    }
    pages
}

/// Text for roff: `\` and `-` escaped.
fn roff_text(s: &str) -> String {
    s.replace('\\', "\\e").replace('-', "\\-")
}

/// The SYNOPSIS as the command is typed (`reclaim rm`, not the page's name `reclaim-rm`), each
/// option with its argument (`[--threads THREADS]`, `[--interactive[=WHEN]]`), then the
/// operands (`[PATH]...`) or, for `reclaim` itself, the subcommand.
fn synopsis(cmd: &clap::Command, typed: &str) -> String {
    let bold = |s: &str| format!("\\fB{}\\fR", roff_text(s));
    let italic = |s: &str| format!("\\fI{}\\fR", roff_text(s));
    let mut line = bold(typed);
    for a in cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .filter(|a| {
            !matches!(
                a.get_action(),
                clap::ArgAction::Help | clap::ArgAction::HelpShort | clap::ArgAction::HelpLong
            )
        })
    {
        let mut flag = match (a.get_short(), a.get_long()) {
            (Some(s), Some(l)) => format!("{}|{}", bold(&format!("-{s}")), bold(&format!("--{l}"))),
            (Some(s), None) => bold(&format!("-{s}")),
            (None, Some(l)) => bold(&format!("--{l}")),
            (None, None) => continue,
        };
        if a.get_action().takes_values() {
            let names: Vec<String> = match a.get_value_names() {
                Some(v) => v.iter().map(|n| n.to_string()).collect(),
                None => vec![a.get_id().as_str().to_uppercase()],
            };
            let value = italic(&names.join(" "));
            let optional = a.get_num_args().is_some_and(|n| n.min_values() == 0);
            if optional {
                flag.push_str(&format!("[={value}]"));
            } else {
                flag.push_str(&format!(" {value}"));
            }
        }
        line.push_str(&format!(" [{flag}]"));
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let name = a
            .get_value_names()
            .and_then(|v| v.first().map(|n| n.to_string()))
            .unwrap_or_else(|| a.get_id().as_str().to_uppercase());
        let many = a.get_num_args().is_some_and(|n| n.max_values() > 1);
        let dots = if many { "..." } else { "" };
        if a.is_required_set() {
            line.push_str(&format!(" {}{dots}", italic(&name)));
        } else {
            line.push_str(&format!(" [{}]{dots}", italic(&name)));
        }
    }
    if cmd.has_subcommands() {
        line.push_str(&format!(" {} [{}]...", italic("COMMAND"), italic("OPTION")));
    }
    // Neither hyphenated nor justified: an option's name stays whole.
    format!(".SH SYNOPSIS\n.nh\n.ad l\n{line}\n.ad\n.hy\n")
}

/// The options' section headings as clap_mangen writes them (all capitals) with the case of
/// what they name kept: `SELECTION (WITH -r)`, not `SELECTION (WITH -R)` (`-R` is another
/// option, or none).
fn keep_heading_case(options: &[u8], headings: &[String]) -> String {
    let text = String::from_utf8_lossy(options);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let heading = line
            .strip_prefix(".SH ")
            .map(|h| h.trim_end().trim_matches('"').replace("\\-", "-"));
        match heading.and_then(|h| headings.iter().find(|g| g.to_uppercase() == h)) {
            Some(g) => {
                let kept: Vec<String> = g
                    .split(' ')
                    .map(|w| {
                        if w.trim_start_matches('(').starts_with('-') {
                            w.to_string()
                        } else {
                            w.to_uppercase()
                        }
                    })
                    .collect();
                out.push_str(&format!(".SH \"{}\"\n", roff_text(&kept.join(" "))));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// A roff section: each paragraph becomes `.PP` text, with roff's special characters escaped.
fn roff_section(title: &str, paragraphs: &[String]) -> String {
    let mut out = if title.contains(' ') {
        format!(".SH \"{title}\"\n")
    } else {
        format!(".SH {title}\n")
    };
    // The selection's table keeps its columns: no filling.
    let preformatted = title == "SELECTION RULES";
    for p in paragraphs {
        out.push_str(".PP\n");
        if preformatted {
            out.push_str(".nf\n");
        }
        for line in p.lines() {
            let escaped = line.replace('\\', "\\e").replace('-', "\\-");
            // A line starting with . or ' would be a roff request.
            if escaped.starts_with('.') || escaped.starts_with('\'') {
                out.push_str("\\&");
            }
            out.push_str(&escaped);
            out.push('\n');
        }
        if preformatted {
            out.push_str(".fi\n");
        }
    }
    out
}

/// EXIT STATUS, FILES, ENVIRONMENT and EXAMPLES of `reclaim` (`sub` empty) or a subcommand.
fn extra_sections(sub: &str) -> Vec<(&'static str, Vec<String>)> {
    let exit = match sub {
        "rm" => vec![
            "0 everything named was removed (or, with -f, was not there).".to_string(),
            "1 some paths could not be removed; each is named on stderr as it fails.".into(),
            "2 usage error.".into(),
            "128+N stopped by signal N (130 for Ctrl-C); a line says what is left, and \
             running the same command again finishes it."
                .into(),
            "Invoked through a link named rm, the exit status is GNU rm's: 0 all removed, 1 \
             something was not (or a usage error); and 128+N when stopped by signal N (130 for \
             Ctrl-C, 141 when the reader of -v's output went away)."
                .into(),
        ],
        "" => vec![
            "0 success.".to_string(),
            "1 something failed (named on stderr, or in the --json object).".into(),
            "2 usage error.".into(),
            "128+N stopped by signal N (130 for Ctrl-C); reclaim rm and prune say what is \
             left, and the same command again finishes it."
                .into(),
        ],
        "scan" | "status" | "restore" | "reap" | "prune" => vec![
            "0 success.".to_string(),
            "1 something failed (named on stderr, or in the --json object).".into(),
            "2 usage error.".into(),
        ],
        _ => vec!["0 success; 1 failure; 2 usage error.".to_string()],
    };
    let files = vec![
        "/etc/reclaim.toml, then ~/.config/reclaim.toml ($XDG_CONFIG_HOME): defaults for \
         reclaim rm ([rm]: mode, max_latency, rate, iops, fast, durable, grace), where \
         reapers log ([reap]: log) \
         and retention policies for reclaim prune ([prune.NAME]); command-line flags win. \
         Each must be a regular file of the caller's or root's."
            .to_string(),
        "~/.local/state/reclaim/trashes ($XDG_STATE_HOME): the trashes made below a mount \
         top, so that status, reap and restore find them again. HOME and the XDG \
         directories are used only if they belong to the caller or root (for root: to root) \
         and nobody else may write in them; otherwise reclaim says so once and does without \
         (sudo -E keeps a user's HOME)."
            .into(),
        "/var/tmp/.reclaim-trashes-UID: the machine's index of user UID's trashes below mount \
         tops, which root's status, reap and reap --watch read (a regular file of UID's; each \
         record counts only for a trash of UID, checked as every trash is)."
            .into(),
        "~/.cache/reclaim/ ($XDG_CACHE_HOME; root: /var/cache/reclaim/): where reclaim scan \
         times its calibration, when that is on the scanned file system (made with mode \
         0700; one another user made, or a symlink, is not used); elsewhere only with \
         --estimate."
            .into(),
        "MOUNT/.reclaim-UID/: the trash of user UID on the file system mounted at MOUNT \
         (mode 0700, owned by UID; MOUNT/.reclaim-UID.HEX when that name was taken by \
         someone else). Each entry is a directory named by its ID holding meta.json and the \
         hidden data; reaper.log, reaper.json and failed.json are the reaper's log, state and \
         back-off list."
            .into(),
        "/run/systemd/journal/socket and /dev/log: where reapers log with --log journal and \
         --log syslog (auto picks the journal when stderr is the journal's stream)."
            .into(),
    ];
    let env = vec![
        "RECLAIM_CONFIG=FILE reads only FILE as the configuration (empty: none).".to_string(),
        "RECLAIM_MODE, RECLAIM_MAX_LATENCY, RECLAIM_RATE, RECLAIM_IOPS: as the [rm] keys of \
         the configuration, over the files and under the flags."
            .into(),
        "RECLAIM_UNDER=DIR: only trashes of file systems mounted at or below DIR are looked at, \
         and the index of trashes below mount tops is DIR/var/tmp (a container's view; tests)."
            .into(),
        "JOURNAL_STREAM=DEV:INO (set by systemd): when it names stderr's device and inode, \
         reapers log to the journal (--log auto)."
            .into(),
        "RECLAIM_JOURNAL_SOCKET, RECLAIM_SYSLOG_SOCKET: other sockets to send the journal's \
         and syslog's records to (tests)."
            .into(),
        "LC_ALL, LC_CTYPE, LANG: whether names are shown with UTF-8 characters or escaped, as \
         GNU rm quotes them."
            .into(),
        "OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE (set by mpirun or srun): rm and scan run as \
         ranks of that job (a build with --features mpi; without it, reclaim refuses to run as \
         one of several ranks)."
            .into(),
    ];
    let examples: Vec<String> = match sub {
        "rm" => vec![
            "reclaim rm -r /var/backups/2026-11-15    # a tree, in parallel; large files paced".into(),
            "reclaim rm -r --background --grace 1h old/   # gone now, freed later, restorable for an hour".into(),
            "reclaim rm --max-latency 5ms /data/dump.sql    # gentler next to a database".into(),
            "ln -s \"$(command -v reclaim)\" ~/.local/bin/rm   # reclaim as a drop-in GNU rm".into(),
            "mpirun -np 32 --hostfile hosts reclaim rm -r /lustre/scratch/old   # 32 ranks on many clients (--features mpi)".into(),
            "reclaim rm -r --name 'test*.txt' .    # a million log files among others, at the unlink rate".into(),
            "reclaim rm -r --time atime --older-than 60d --prune-empty --dry-run /scratch   # a purge's plan, per user".into(),
            "reclaim rm -r --name '*.gz' --older-than 14d --list purged.txt /var/log/app    # a log cleanup, audited".into(),
            "find /data -name '*.tmp' -print0 | reclaim rm --from - -0    # find chooses, reclaim removes".into(),
        ],
        "status" => vec!["reclaim status --count    # what waits in the trashes, measured".into()],
        "restore" => vec!["reclaim restore /srv/app/config.yaml    # the newest entry of that path".into()],
        "reap" => vec![
            "reclaim reap            # free what can be freed now".into(),
            "reclaim reap --watch    # the service: free entries as they come".into(),
            "reclaim reap --watch --log syslog    # from a sysvinit script or cron".into(),
            "journalctl -t reclaim -p warning    # what the reapers could not free".into(),
        ],
        "prune" => vec![
            "reclaim prune --keep-last 7 --keep-free 20G --dry-run /backups".into(),
        ],
        "scan" => vec![
            "reclaim scan /home    # where the bytes and the files are".into(),
            "reclaim scan --top 20 --exclude node_modules --exclude 'build/*' ~/src".into(),
            "mpirun -np 16 --hostfile hosts reclaim scan /lustre/scratch   # counted by 16 ranks".into(),
        ],
        _ => vec![
            "reclaim rm -r DIR; reclaim status; reclaim scan DIR; reclaim bench --quick".into(),
        ],
    };
    let mut sections = Vec::new();
    if sub == "rm" {
        // Where reclaim's output differs from GNU rm's, and the selection's rules and find
        // equivalents, as `rm --help` says them.
        sections.push(("NOTES", vec![crate::cli::args::RM_NOTES.to_string()]));
        sections.push((
            "SELECTION RULES",
            vec![crate::cli::args::SELECT_HELP.to_string()],
        ));
    }
    sections.extend([
        ("EXIT STATUS", exit),
        ("FILES", files),
        ("ENVIRONMENT", env),
        ("EXAMPLES", examples),
    ]);
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_pages_cover_every_command_and_flag() {
        let pages = man_pages();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        for want in [
            "reclaim.1",
            "reclaim-rm.1",
            "reclaim-status.1",
            "reclaim-prune.1",
        ] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        let text = |name: &str| {
            let (_, t) = pages.iter().find(|(n, _)| n == name).unwrap();
            String::from_utf8(t.clone()).unwrap()
        };
        let rm = text("reclaim-rm.1");
        for flag in ["background", "durable", r"max\-latency", "grace"] {
            assert!(rm.contains(flag), "reclaim-rm.1 lacks {flag}");
        }
        for name in &names {
            let text = text(name);
            for section in [
                ".SH NAME",
                ".SH SYNOPSIS",
                ".SH DESCRIPTION",
                ".SH OPTIONS",
                ".SH \"EXIT STATUS\"",
                ".SH FILES",
                ".SH ENVIRONMENT",
                ".SH EXAMPLES",
            ] {
                assert!(text.contains(section), "{name}: no {section}");
            }
        }
    }

    /// SYNOPSIS names the command as typed, with each option's argument; headings keep the
    /// case of the options they name; the rm page says where it differs from GNU rm.
    #[test]
    fn synopsis_and_headings_read_as_typed() {
        let pages = man_pages();
        let text = |name: &str| {
            let (_, t) = pages.iter().find(|(n, _)| n == name).unwrap();
            String::from_utf8(t.clone()).unwrap()
        };
        let rm = text("reclaim-rm.1");
        let synopsis = rm.split(".SH SYNOPSIS").nth(1).unwrap();
        let synopsis = synopsis.split(".SH ").next().unwrap();
        assert!(synopsis.contains("\\fBreclaim rm\\fR ["), "{synopsis}");
        assert!(!synopsis.contains("reclaim\\-rm"), "{synopsis}");
        for want in [
            "[\\fB\\-\\-threads\\fR \\fITHREADS\\fR]",
            "[\\fB\\-\\-grace\\fR \\fIDURATION\\fR]",
            "[\\fB\\-\\-interactive\\fR[=\\fIWHEN\\fR]]",
            "[\\fB\\-r\\fR|\\fB\\-\\-recursive\\fR]",
            "[\\fIPATH\\fR]...",
        ] {
            assert!(synopsis.contains(want), "no {want} in {synopsis}");
        }
        assert!(rm.contains(".SH \"SELECTION (WITH \\-r)\""), "{rm}");
        assert!(!rm.contains("(WITH \\-R"), "{rm}");
        assert!(rm.contains(".SH NOTES") && rm.contains(".SH \"SELECTION RULES\""));
        let prune = text("reclaim-prune.1");
        assert!(prune.contains("\\fBreclaim prune\\fR ["), "{prune}");
        assert!(prune.contains("[\\fIDIR\\fR]..."), "{prune}");
        let top = text("reclaim.1");
        assert!(top.contains("\\fBreclaim\\fR \\fICOMMAND\\fR"), "{top}");
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
