//! GNU `rm`'s command line, parsed as glibc's `getopt_long` and coreutils' `rm.c` do: options
//! and operands in any order (unless `POSIXLY_CORRECT`), `--` ends the options, clusters like
//! `-rfv`, long options by unique prefix (`--rec`), `--interactive[=WHEN]` by argmatch (`=n`,
//! `=a`), the last of `-f`/`-i`/`-I` wins, and every usage error with glibc's message.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use crate::sys::quote::quote;

pub use crate::engine::gnu::Interactive;

/// `--interactive=WHEN`, and what `-f`, `-i` and `-I` stand for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Never,
    /// `-I`: one question before removing more than three arguments or recursively.
    Once,
    Always,
}

/// One of the options that decide the prompting, as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptFlag {
    /// `-f`, `--force`.
    Force,
    /// `-i` (`Always`), `-I` (`Once`), `--interactive[=WHEN]`.
    Interactive(When),
}

/// What `-f`, `-i`, `-I` and `--interactive` add up to, by GNU rm's rules (the one home of
/// them: `rm` mode and `reclaim rm` both fold their flags through `apply`, in the order given):
/// the last one decides when to ask; `-f` ignores missing files unless `-i`, `-I` or
/// `--interactive=once|always` follow it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prompting {
    /// `None`: none was given (GNU rm asks about write-protected files on a terminal;
    /// `reclaim rm` never asks).
    pub when: Option<When>,
    pub ignore_missing: bool,
}

impl Prompting {
    pub fn apply(&mut self, flag: PromptFlag) {
        match flag {
            PromptFlag::Force => {
                self.when = Some(When::Never);
                self.ignore_missing = true;
            }
            PromptFlag::Interactive(When::Never) => self.when = Some(When::Never),
            PromptFlag::Interactive(w) => {
                self.when = Some(w);
                self.ignore_missing = false;
            }
        }
    }
}

/// Everything `rm`'s options decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GnuRmOptions {
    pub prompting: Prompting,
    pub one_file_system: bool,
    pub remove_empty_dirs: bool,
    pub recursive: bool,
    pub preserve_root: bool,
    pub preserve_all_root: bool,
    /// `---presume-input-tty` (GNU's undocumented testing option).
    pub presume_tty: bool,
    pub verbose: bool,
    pub operands: Vec<OsString>,
}

impl GnuRmOptions {
    pub fn ignore_missing(&self) -> bool {
        self.prompting.ignore_missing
    }

    /// When to ask about each entry.
    pub fn interactive(&self) -> Interactive {
        match self.prompting.when {
            None | Some(When::Once) => Interactive::Sometimes,
            Some(When::Never) => Interactive::Never,
            Some(When::Always) => Interactive::Always,
        }
    }

    /// `-I`, `--interactive=once`: one question before removing more than three arguments or
    /// recursively.
    pub fn prompt_once(&self) -> bool {
        self.prompting.when == Some(When::Once)
    }

    /// What the engine's GNU walk is to do; `stdin_tty`: whether stdin is a terminal.
    pub fn rules(&self, stdin_tty: bool) -> crate::engine::gnu::Rules {
        crate::engine::gnu::Rules {
            interactive: self.interactive(),
            ignore_missing: self.ignore_missing(),
            recursive: self.recursive,
            remove_empty_dirs: self.remove_empty_dirs,
            one_file_system: self.one_file_system,
            preserve_root: self.preserve_root,
            preserve_all_root: self.preserve_all_root,
            verbose: self.verbose,
            stdin_tty: self.presume_tty || stdin_tty,
        }
    }
}

impl Default for GnuRmOptions {
    fn default() -> Self {
        GnuRmOptions {
            prompting: Prompting::default(),
            one_file_system: false,
            remove_empty_dirs: false,
            recursive: false,
            preserve_root: true,
            preserve_all_root: false,
            presume_tty: false,
            verbose: false,
            operands: Vec::new(),
        }
    }
}

/// What the command line asks for besides removing.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Remove(GnuRmOptions),
    Help,
    Version,
    /// A usage error: the lines to print (without the program name), then the
    /// "Try '… --help'" hint when `try_help` is set; exit status 1.
    Usage(UsageError),
}

/// A usage error in GNU's words.
#[derive(Debug, PartialEq, Eq)]
pub struct UsageError {
    /// Lines printed as `<program>: <line>`.
    pub lines: Vec<String>,
    /// Lines printed as they are (argmatch's list of valid arguments).
    pub raw: Vec<String>,
    /// Whether "Try '<program> --help' …" follows.
    pub try_help: bool,
    /// Whether the dash hint ("Try 'rm ./-foo' …") comes first (getopt's errors only).
    pub dash_hint: bool,
}

impl UsageError {
    /// An error of getopt's: the dash hint, then the pointer to `--help`.
    fn getopt(line: String) -> Self {
        UsageError {
            lines: vec![line],
            raw: Vec::new(),
            try_help: true,
            dash_hint: true,
        }
    }
    /// coreutils' `usage (EXIT_FAILURE)` after a message.
    fn with_help(line: String) -> Self {
        UsageError {
            dash_hint: false,
            ..Self::getopt(line)
        }
    }
    /// coreutils' `die`: the message alone.
    fn alone(line: String) -> Self {
        UsageError {
            try_help: false,
            dash_hint: false,
            ..Self::getopt(line)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Long {
    Force,
    Interactive,
    OneFileSystem,
    NoPreserveRoot,
    PreserveRoot,
    PresumeTty,
    Recursive,
    Dir,
    Verbose,
    Help,
    Version,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum HasArg {
    No,
    Optional,
}

/// `rm.c`'s `long_opts`, in its order (which is the order of glibc's ambiguity list).
const LONG: &[(&str, HasArg, Long)] = &[
    ("force", HasArg::No, Long::Force),
    ("interactive", HasArg::Optional, Long::Interactive),
    ("one-file-system", HasArg::No, Long::OneFileSystem),
    ("no-preserve-root", HasArg::No, Long::NoPreserveRoot),
    ("preserve-root", HasArg::Optional, Long::PreserveRoot),
    ("-presume-input-tty", HasArg::No, Long::PresumeTty),
    ("recursive", HasArg::No, Long::Recursive),
    ("dir", HasArg::No, Long::Dir),
    ("verbose", HasArg::No, Long::Verbose),
    ("help", HasArg::No, Long::Help),
    ("version", HasArg::No, Long::Version),
];

/// `--interactive`'s arguments and what they mean (argmatch: unique prefixes, or prefixes
/// whose every match means the same).
const WHEN: &[(&str, When)] = &[
    ("never", When::Never),
    ("no", When::Never),
    ("none", When::Never),
    ("once", When::Once),
    ("always", When::Always),
    ("yes", When::Always),
];

/// Parses `args` (without argv[0]) as GNU `rm` does.
pub fn parse(args: &[OsString]) -> Parsed {
    let posixly = std::env::var_os("POSIXLY_CORRECT").is_some();
    let mut o = GnuRmOptions::default();
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_bytes();
        i += 1;
        if arg == b"--" {
            operands.extend(args[i..].iter().cloned());
            break;
        }
        if arg.len() < 2 || arg[0] != b'-' {
            if posixly {
                operands.extend(args[i - 1..].iter().cloned());
                break;
            }
            operands.push(args[i - 1].clone());
            continue;
        }
        let step = if let Some(long) = arg.strip_prefix(b"--") {
            long_option(&mut o, long)
        } else {
            short_options(&mut o, &arg[1..])
        };
        match step {
            Step::Go => {}
            Step::Stop(p) => return p,
        }
    }
    if operands.is_empty() && !o.ignore_missing() {
        return Parsed::Usage(UsageError::with_help("missing operand".into()));
    }
    o.operands = operands;
    Parsed::Remove(o)
}

enum Step {
    Go,
    Stop(Parsed),
}

fn short_options(o: &mut GnuRmOptions, cluster: &[u8]) -> Step {
    for &c in cluster {
        match c {
            b'd' => o.remove_empty_dirs = true,
            b'f' => o.prompting.apply(PromptFlag::Force),
            b'i' => o.prompting.apply(PromptFlag::Interactive(When::Always)),
            b'I' => o.prompting.apply(PromptFlag::Interactive(When::Once)),
            b'r' | b'R' => o.recursive = true,
            b'v' => o.verbose = true,
            _ => {
                // glibc prints the byte as it is.
                let shown = String::from_utf8_lossy(&[c]).into_owned();
                return Step::Stop(Parsed::Usage(UsageError::getopt(format!(
                    "invalid option -- '{shown}'"
                ))));
            }
        }
    }
    Step::Go
}

fn long_option(o: &mut GnuRmOptions, text: &[u8]) -> Step {
    let (name, value) = match text.iter().position(|&b| b == b'=') {
        Some(eq) => (&text[..eq], Some(&text[eq + 1..])),
        None => (text, None),
    };
    let lossy = String::from_utf8_lossy(text);
    let exact = LONG.iter().find(|(n, ..)| n.as_bytes() == name);
    let found = match exact {
        Some(f) => *f,
        None => {
            let matches: Vec<_> = LONG
                .iter()
                .filter(|(n, ..)| n.as_bytes().starts_with(name))
                .collect();
            match matches.as_slice() {
                [] => {
                    return Step::Stop(Parsed::Usage(UsageError::getopt(format!(
                        "unrecognized option '--{lossy}'"
                    ))))
                }
                [one] => **one,
                many => {
                    let names: Vec<String> =
                        many.iter().map(|(n, ..)| format!(" '--{n}'")).collect();
                    let shown = String::from_utf8_lossy(name);
                    return Step::Stop(Parsed::Usage(UsageError::getopt(format!(
                        "option '--{shown}' is ambiguous; possibilities:{}",
                        names.concat()
                    ))));
                }
            }
        }
    };
    let (full, has_arg, which) = found;
    if value.is_some() && has_arg == HasArg::No {
        return Step::Stop(Parsed::Usage(UsageError::getopt(format!(
            "option '--{full}' doesn't allow an argument"
        ))));
    }
    match which {
        Long::Force => short_options(o, b"f"),
        Long::Recursive => short_options(o, b"r"),
        Long::Dir => short_options(o, b"d"),
        Long::Verbose => short_options(o, b"v"),
        Long::Interactive => interactive(o, value),
        Long::OneFileSystem => {
            o.one_file_system = true;
            Step::Go
        }
        Long::NoPreserveRoot => {
            if text != b"no-preserve-root" {
                return Step::Stop(Parsed::Usage(UsageError::alone(
                    "you may not abbreviate the --no-preserve-root option".into(),
                )));
            }
            o.preserve_root = false;
            Step::Go
        }
        Long::PreserveRoot => {
            if let Some(v) = value {
                if v != b"all" {
                    return Step::Stop(Parsed::Usage(UsageError::alone(format!(
                        "unrecognized --preserve-root argument: {}",
                        quote(OsStr::from_bytes(v))
                    ))));
                }
                o.preserve_all_root = true;
            }
            o.preserve_root = true;
            Step::Go
        }
        Long::PresumeTty => {
            o.presume_tty = true;
            Step::Go
        }
        Long::Help => Step::Stop(Parsed::Help),
        Long::Version => Step::Stop(Parsed::Version),
    }
}

/// `--interactive[=WHEN]`.
fn interactive(o: &mut GnuRmOptions, value: Option<&[u8]>) -> Step {
    let when = match value {
        None => When::Always,
        Some(v) => match argmatch(v) {
            Ok(w) => w,
            Err(kind) => {
                let mut e = UsageError::with_help(format!(
                    "{kind} argument {} for '--interactive'",
                    quote(OsStr::from_bytes(v))
                ));
                e.raw = vec![
                    "Valid arguments are:".into(),
                    "  - 'never', 'no', 'none'".into(),
                    "  - 'once'".into(),
                    "  - 'always', 'yes'".into(),
                ];
                return Step::Stop(Parsed::Usage(e));
            }
        },
    };
    o.prompting.apply(PromptFlag::Interactive(when));
    Step::Go
}

/// `--interactive`'s argument by argmatch: an exact match, or a prefix whose matches all mean
/// the same (`never`/`no`/`none`, `once`, `always`/`yes`); else `"ambiguous"` or `"invalid"`.
pub fn argmatch(v: &[u8]) -> Result<When, &'static str> {
    if let Some((_, w)) = WHEN.iter().find(|(n, _)| n.as_bytes() == v) {
        return Ok(*w);
    }
    let mut found: Option<When> = None;
    for (n, w) in WHEN {
        if n.as_bytes().starts_with(v) {
            match found {
                None => found = Some(*w),
                Some(f) if f == *w => {}
                Some(_) => return Err("ambiguous"),
            }
        }
    }
    found.ok_or("invalid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Parsed {
        let v: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse(&v)
    }

    fn opts(args: &[&str]) -> GnuRmOptions {
        match p(args) {
            Parsed::Remove(o) => o,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn usage(args: &[&str]) -> Vec<String> {
        match p(args) {
            Parsed::Usage(e) => e.lines,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn options_anywhere_and_the_last_of_f_i_wins() {
        let o = opts(&["a", "-rf", "b", "-i", "--", "-v"]);
        assert!(o.recursive);
        assert_eq!(o.interactive(), Interactive::Always);
        assert!(!o.ignore_missing());
        assert!(!o.verbose);
        assert_eq!(o.operands, vec!["a", "b", "-v"]);
        let o = opts(&["-I", "-f", "x"]);
        assert_eq!(o.interactive(), Interactive::Never);
        assert!(!o.prompt_once());
        assert_eq!(opts(&["-"]).operands, vec!["-"]);
    }

    #[test]
    fn long_prefixes_and_argmatch() {
        assert!(opts(&["--rec", "x"]).recursive);
        assert_eq!(
            opts(&["--interactive=n", "x"]).interactive(),
            Interactive::Never
        );
        assert!(opts(&["--inter=o", "x"]).prompt_once());
        assert_eq!(
            opts(&["--interactive", "x"]).interactive(),
            Interactive::Always
        );
        assert!(opts(&["--preserve-root=all", "x"]).preserve_all_root);
        assert!(!opts(&["--no-preserve-root", "x"]).preserve_root);
        assert!(opts(&["---presume-input-tty", "x"]).presume_tty);
    }

    #[test]
    fn usage_errors_read_as_glibc_writes_them() {
        assert_eq!(
            usage(&["--v"]),
            ["option '--v' is ambiguous; possibilities: '--verbose' '--version'"]
        );
        assert_eq!(usage(&["-q"]), ["invalid option -- 'q'"]);
        assert_eq!(usage(&["--foo=bar"]), ["unrecognized option '--foo=bar'"]);
        assert_eq!(
            usage(&["--force=1"]),
            ["option '--force' doesn't allow an argument"]
        );
        assert_eq!(
            usage(&["--no", "x"]),
            ["you may not abbreviate the --no-preserve-root option"]
        );
        assert_eq!(
            usage(&["--preserve-root=x"]),
            ["unrecognized --preserve-root argument: 'x'"]
        );
        assert_eq!(
            usage(&["--interactive="]),
            ["ambiguous argument '' for '--interactive'"]
        );
        assert_eq!(
            usage(&["--interactive=q"]),
            ["invalid argument 'q' for '--interactive'"]
        );
        assert_eq!(usage(&[]), ["missing operand"]);
        assert!(matches!(p(&["-f"]), Parsed::Remove(_)));
        assert_eq!(p(&["--he", "-q"]), Parsed::Help);
        assert!(matches!(p(&["-q", "--help"]), Parsed::Usage(_)));
    }
}
