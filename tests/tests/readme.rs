//! The README's commands cannot rot: every command of its `console` blocks (`$ ...`) runs, in
//! order, in the test's scratch directory with this build as `reclaim` (relative paths only:
//! nothing outside the scratch directory is named), and must succeed; and every flag its
//! synopses (the blocks that start with `reclaim SUBCOMMAND [`) name is in that subcommand's
//! `--help`.

use std::path::PathBuf;

use crate::util::{self, scratch};

fn readme() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md");
    std::fs::read_to_string(path).unwrap()
}

/// The fenced blocks of `text`: (info string, lines).
fn blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), Vec::new())),
            (Some(_), Some(_)) => out.push(open.take().unwrap()),
            (Some((_, lines)), None) => lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    out
}

/// Programs a README example may run besides `reclaim`.
const TOOLS: &[&str] = &["mkdir", "touch", "printf", "head", "cat"];

#[test]
fn readme_console_commands_run() {
    let s = scratch!();
    // This build as `reclaim`, first in PATH.
    let bin = s.mkdir(".bin");
    std::os::unix::fs::symlink(util::reclaim_bin(), bin.join("reclaim")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for (info, lines) in blocks(&readme()) {
        if info != "console" {
            continue;
        }
        for cmd in lines.iter().filter_map(|l| l.strip_prefix("$ ")) {
            for part in cmd.split("&&").flat_map(|p| p.split('|')) {
                let words: Vec<&str> = part.split_whitespace().collect();
                let Some(prog) = words.first() else { continue };
                assert!(
                    *prog == "reclaim" || TOOLS.contains(prog),
                    "README runs {prog:?}: only reclaim and {TOOLS:?} may run here"
                );
                for w in &words[1..] {
                    assert!(
                        !w.starts_with('/') && !w.starts_with('~') && !w.contains(".."),
                        "README's `{cmd}` names {w:?}: only paths inside the scratch directory"
                    );
                }
            }
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .current_dir(s.root())
                .env("PATH", &path)
                .env(util::NO_SPAWN, "1")
                .env("XDG_STATE_HOME", util::state_home(&s))
                .env("RECLAIM_CONFIG", "")
                .env("RECLAIM_UNDER", s.root())
                .env("LC_ALL", "C")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "README's `{cmd}` failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    assert!(ran >= 5, "the README's console blocks hold {ran} commands");
}

#[test]
fn readme_synopses_name_only_real_flags() {
    let mut checked = 0;
    for (info, lines) in blocks(&readme()) {
        if !info.is_empty() {
            continue;
        }
        // Each line `reclaim SUB ...` starts a synopsis; indented lines continue it.
        let mut sub: Option<String> = None;
        for line in &lines {
            let line = line.split(" # ").next().unwrap_or("");
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.first() == Some(&"reclaim") {
                sub = words
                    .get(1)
                    .filter(|w| !w.starts_with('[') && !w.starts_with('-'))
                    .map(|w| w.to_string());
            } else if !line.starts_with(' ') {
                sub = None;
            }
            let Some(sub) = &sub else { continue };
            let help = util::reclaim().args([sub, "--help"]).output().unwrap();
            util::assert_success(&help);
            let help = String::from_utf8_lossy(&help.stdout).into_owned();
            for flag in line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter(|w| w.starts_with("--") && w.len() > 2)
            {
                assert!(
                    help.contains(flag),
                    "README's synopsis of `reclaim {sub}` names {flag}, which its --help does not"
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} flags in the README's synopses"
    );
}

/// The repository stands on its own (issue 26): no document, code comment or test points at a
/// design file outside it, the README's links into the repository lead to files that exist
/// (docs/ARCHITECTURE.md and docs/TRUST.md among them), and the install is followed by the
/// installed binary, not by a second build (`cargo run --release`).
#[test]
fn docs_point_only_inside_the_repository() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs" || x == "md") {
                out.push(p);
            }
        }
    }
    for dir in ["src", "tests", "docs", "bench"] {
        if root.join(dir).is_dir() && dir != "bench" {
            walk(&root.join(dir), &mut files);
        }
    }
    files.push(root.join("bench/README.md"));
    let design = ["DESIGN", ".md"].concat();
    let shared = ["../", "shared/"].concat();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(
            !text.contains(&design) && !text.contains(&shared),
            "{} points outside the repository",
            f.display()
        );
    }
    let text = readme();
    for link in ["docs/ARCHITECTURE.md", "docs/TRUST.md"] {
        assert!(
            text.contains(&format!("]({link})")),
            "README does not link {link}"
        );
    }
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let target = &rest[..rest.find(')').unwrap()];
        if !target.contains("://") && !target.starts_with('#') {
            let path = target.split('#').next().unwrap();
            assert!(
                root.join(path).exists(),
                "README links {target}, which is not there"
            );
        }
    }
    let install = text
        .lines()
        .skip_while(|l| !l.starts_with("cargo install --locked --path ."))
        .take(6)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(install.contains("\nreclaim bench --quick"), "{install}");
    // What a newcomer needs before and after: the toolchain, where the binary goes, the man
    // pages.
    for needed in [
        "Rust toolchain, 1.88 or newer",
        "~/.cargo/bin",
        "reclaim man ~/.local/share/man/man1",
    ] {
        assert!(text.contains(needed), "README does not say {needed:?}");
    }
    assert!(
        !text.contains("cargo run --release -- bench"),
        "README rebuilds to bench"
    );
}
