//! Man pages and shell completions, generated from the clap definition in `cli.rs` (so they
//! cannot drift from the real flags). Writes only where it is told to.

use std::path::Path;

use clap::CommandFactory;

use crate::cli::Cli;

/// Shell completions for `shell`, on stdout.
pub fn completions(shell: clap_complete::Shell) {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "reclaim", &mut std::io::stdout());
}

/// `reclaim.1` and one page per subcommand (`reclaim-rm.1`, ...) into `dir`.
pub fn man_pages(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let cmd = Cli::command();
    let mut written = Vec::new();
    let page = |cmd: clap::Command, name: String| -> std::io::Result<std::path::PathBuf> {
        let path = dir.join(format!("{name}.1"));
        let mut out = Vec::new();
        // clap wants a 'static name; these few strings live until the process exits.
        let static_name: &'static str = Box::leak(name.clone().into_boxed_str());
        clap_mangen::Man::new(cmd.name(static_name)).render(&mut out)?;
        std::fs::write(&path, out)?;
        Ok(path)
    };
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        written.push(page(sub.clone(), format!("reclaim-{}", sub.get_name()))?);
    }
    written.insert(0, page(cmd, "reclaim".into())?);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_pages_cover_every_command_and_flag() {
        let dir = tempfile::tempdir().unwrap();
        let pages = man_pages(dir.path()).unwrap();
        let names: Vec<String> = pages
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for want in [
            "reclaim.1",
            "reclaim-rm.1",
            "reclaim-status.1",
            "reclaim-prune.1",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
        }
        let rm = std::fs::read_to_string(dir.path().join("reclaim-rm.1")).unwrap();
        for flag in ["background", "durable", r"max\-latency", "grace"] {
            assert!(rm.contains(flag), "reclaim-rm.1 lacks {flag}");
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
