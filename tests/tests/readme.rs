//! The README's and the manual's commands cannot rot: every command of the `console` blocks
//! (`$ ...`) of README.md and of each page of docs/ runs, in order, in a scratch directory of
//! that page's own with this build as `reclaim` (relative paths only: nothing outside the
//! scratch directory is named), and must succeed; every flag their synopses (the blocks that
//! start with `reclaim SUBCOMMAND [`) name is in that subcommand's `--help`; the README stays a
//! README (at most 300 lines: the manual is docs/), and every relative link of these pages
//! leads to a file (and heading) that exists.

use std::path::{Path, PathBuf};

use crate::util::{self, scratch, Volume};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// The pages of the manual, docs/*.md, in name order.
fn doc_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages
}

/// README.md, then every page of docs/.
fn all_pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    pages.extend(doc_pages());
    pages
}

/// `path` relative to the repository, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
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

/// The commands (`$ ...`) of `text`'s `console` blocks, in order.
fn console_commands(text: &str) -> Vec<String> {
    blocks(text)
        .into_iter()
        .filter(|(info, _)| info == "console")
        .flat_map(|(_, lines)| lines)
        .filter_map(|l| l.strip_prefix("$ ").map(str::to_string))
        .collect()
}

/// Programs an example may run besides `reclaim`.
const TOOLS: &[&str] = &["mkdir", "touch", "printf", "head", "cat"];

/// Where a page's examples run: its directory, and what the environment points at.
struct Place<'a> {
    dir: &'a Path,
    bin: &'a Path,
    state: &'a Path,
}

/// Runs `page`'s `commands` in `place`, in order; each must succeed. Returns how many ran.
fn run_commands(page: &str, commands: &[String], place: &Place) -> usize {
    let path = format!(
        "{}:{}",
        place.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for cmd in commands {
        for part in cmd.split("&&").flat_map(|p| p.split('|')) {
            let words: Vec<&str> = part.split_whitespace().collect();
            let Some(prog) = words.first() else { continue };
            assert!(
                *prog == "reclaim" || TOOLS.contains(prog),
                "{page} runs {prog:?}: only reclaim and {TOOLS:?} may run here"
            );
            for w in &words[1..] {
                assert!(
                    !w.starts_with('/') && !w.starts_with('~') && !w.contains(".."),
                    "{page}'s `{cmd}` names {w:?}: only paths inside the scratch directory"
                );
            }
        }
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(place.dir)
            .env("PATH", &path)
            .env(util::NO_SPAWN, "1")
            .env("XDG_STATE_HOME", place.state)
            .env("RECLAIM_CONFIG", "")
            .env("RECLAIM_UNDER", place.dir)
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{page}'s `{cmd}` failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    commands.len()
}

/// This build as `reclaim`, in a directory to put first in PATH.
fn bin_dir(s: &util::Scratch) -> PathBuf {
    let bin = s.mkdir(".bin");
    std::os::unix::fs::symlink(util::reclaim_bin(), bin.join("reclaim")).unwrap();
    bin
}

#[test]
fn readme_console_commands_run() {
    let s = scratch!();
    let bin = bin_dir(&s);
    let state = util::state_home(&s);
    let place = Place {
        dir: s.root(),
        bin: &bin,
        state: &state,
    };
    let ran = run_commands("README", &console_commands(&readme()), &place);
    assert!(ran >= 5, "the README's console blocks hold {ran} commands");
}

/// Whether `cmd` puts something into a trash (hides it): the trash is made at the top of the
/// file system, so such a command runs only on a file system the test mounted.
fn hides(cmd: &str) -> bool {
    let prune_through_trash = cmd.contains("reclaim prune")
        && !["--now", "--dry-run", " -n "]
            .iter()
            .any(|f| cmd.contains(f));
    cmd.contains("--background")
        || cmd.contains("--wait")
        || cmd.contains("reclaim restore")
        || prune_through_trash
}

/// Every page of docs/ runs its examples as the README does, each in a directory of its own, in
/// name order. The directory is a fresh tmpfs where one can be mounted, so that the trash the
/// undo examples hide into is the test's own (at that file system's top); where none can be, a
/// page whose examples hide something is skipped, and says so. A page that packs needs
/// squashfs-tools-ng (`.ci/run` installs it).
#[test]
fn docs_console_commands_run() {
    let s = scratch!();
    let bin = bin_dir(&s);
    let mut ran = 0;
    let mut pages_run = 0;
    let mut volumes = Vec::new();
    for page in doc_pages() {
        let name = shown(&page);
        let commands = console_commands(&std::fs::read_to_string(&page).unwrap());
        if commands.is_empty() {
            continue;
        }
        let stem = page.file_stem().unwrap().to_string_lossy().into_owned();
        let state = s.mkdir(format!(".state/{stem}"));
        let dir = s.path(&stem);
        match Volume::tmpfs_with(&s, &stem, "size=64m") {
            Ok(v) => volumes.push(v),
            Err(why) => {
                s.mkdir(&stem);
                if let Some(cmd) = commands.iter().find(|c| hides(c)) {
                    util::skipped(
                        util::test_name!(),
                        &format!("{name}: `{cmd}` hides into a trash and no tmpfs for it: {why}"),
                    );
                    continue;
                }
            }
        }
        let packs = commands
            .iter()
            .any(|c| c.contains("reclaim pack") || c.contains("reclaim unpack"));
        if packs {
            if let Err(why) = crate::pack::tools() {
                util::skipped(util::test_name!(), &format!("{name}: {why}"));
                continue;
            }
        }
        let place = Place {
            dir: &dir,
            bin: &bin,
            state: &state,
        };
        ran += run_commands(&name, &commands, &place);
        pages_run += 1;
    }
    assert!(
        pages_run >= 5 && ran >= 30,
        "docs/ ran {ran} commands on {pages_run} pages"
    );
}

#[test]
fn synopses_name_only_real_flags() {
    let mut checked = 0;
    for page in all_pages() {
        let name = shown(&page);
        for (info, lines) in blocks(&std::fs::read_to_string(&page).unwrap()) {
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
                        "{name}'s synopsis of `reclaim {sub}` names {flag}, which its --help does not"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} flags in the synopses");
}

/// The README is what a newcomer reads first: what, why, install, the tests, everyday examples
/// and links. The manual lives in docs/.
#[test]
fn readme_is_at_most_300_lines() {
    let lines = readme().lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: at most 300 (the manual goes to docs/)"
    );
}

/// A heading's anchor as GitHub makes it: lower case, spaces to `-`, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The lines of `text` outside its fenced blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The anchors of `text`'s headings.
fn anchors(text: &str) -> Vec<String> {
    prose_lines(text)
        .into_iter()
        .filter(|line| line.starts_with('#'))
        .map(|line| anchor(line.trim_start_matches('#')))
        .collect()
}

/// The targets of `text`'s Markdown links and images (`](target)`), outside fenced blocks.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find(')') else { break };
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

/// Every relative link of README.md and docs/*.md (pages moved into docs/ link with `../`, the
/// images beside them) leads to a file that exists, and a `#heading` to a heading there.
#[test]
fn relative_links_lead_to_existing_files() {
    let mut checked = 0;
    for page in all_pages() {
        let name = shown(&page);
        let text = std::fs::read_to_string(&page).unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let linked = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            assert!(linked.exists(), "{name} links {target}, which is not there");
            if let Some(fragment) = fragment {
                let there = std::fs::read_to_string(&linked).unwrap();
                assert!(
                    anchors(&there).iter().any(|a| a == fragment),
                    "{name} links {target}: {} has no heading #{fragment}",
                    shown(&linked)
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} relative links checked");
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
