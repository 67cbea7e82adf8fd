//! Shell patterns, all matched by `globset` (the one home of globbing): `Name` reads a pattern
//! as fnmatch(3) without flags does in the C locale (`prune --match`); `compile` and `Globs`
//! are reclaim's own dialect on names and paths (`rm --name/--path/--exclude`, `scan
//! --exclude`): globset's syntax with `*` and `?` never matching a '/' (`**` as a whole
//! component matches any number of directories), `[...]`/`[!...]` classes, `{a,b}`
//! alternatives and `\` escaping the next character, on bytes (a name need not be UTF-8, and
//! `?` is one byte, as GNU find in the C locale). Pure matching: no I/O.
//!
//! fnmatch's syntax is not globset's: `{`, `}` and `,` are plain characters, `**` is `*`, a
//! backslash escapes inside brackets too, a bracket expression may hold `[=c=]` and `[.c.]`, a
//! reversed range is empty, and an unterminated `[` is a plain `[`. `Name` turns the one into the
//! other; the differential test below runs both over generated patterns and names. Names are
//! bytes: `?` and every bracket expression match one byte, as fnmatch does in the C locale (in
//! a UTF-8 locale fnmatch's `?` would match one whole character of a non-ASCII name).

pub mod exclude;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

/// A pattern on names, as fnmatch(3) reads it with no flags: `*` and `?` match any bytes
/// (a leading `.` and `/` too), `[...]` and `[!...]`/`[^...]` a byte of a set, `\c` the
/// character `c`.
#[derive(Clone, Debug)]
pub struct Name {
    /// `None`: the pattern matches no name at all (a trailing backslash, an unknown
    /// character class, a bracket expression that can match nothing).
    matcher: Option<GlobMatcher>,
}

impl Name {
    /// Reads `pattern`; an error only for what globset cannot say the same way (a reversed
    /// range between non-ASCII characters).
    pub fn new(pattern: &str) -> Result<Name, globset::Error> {
        let matcher = match translate(pattern.as_bytes()) {
            Some(g) => Some(
                GlobBuilder::new(&g)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .build()?
                    .compile_matcher(),
            ),
            None => None,
        };
        Ok(Name { matcher })
    }

    pub fn is_match(&self, name: &[u8]) -> bool {
        self.matcher
            .as_ref()
            .is_some_and(|m| m.is_match(OsStr::from_bytes(name)))
    }
}

/// Why a glob cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    #[error("an empty glob matches nothing")]
    Empty,
    /// What globset finds wrong with it, in its words.
    #[error("{0}")]
    Invalid(globset::ErrorKind),
}

/// One glob of reclaim's dialect on names and paths: `*` and `?` never match a '/', `**`
/// does, `\c` is `c`. The error says what is wrong with it.
pub fn compile(text: &str) -> Result<Glob, GlobError> {
    if text.is_empty() {
        return Err(GlobError::Empty);
    }
    GlobBuilder::new(text)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| GlobError::Invalid(e.kind().clone()))
}

/// Several globs of `compile`'s dialect; a candidate matches if any of them does.
#[derive(Clone, Debug, Default)]
pub struct Globs {
    set: Option<GlobSet>,
}

impl Globs {
    pub fn new(globs: impl IntoIterator<Item = Glob>) -> Globs {
        let mut b = GlobSetBuilder::new();
        let mut any = false;
        for g in globs {
            b.add(g);
            any = true;
        }
        Globs {
            set: any.then(|| b.build().expect("globs compiled one by one")),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_none()
    }

    /// Whether some glob matches `candidate` (a name, or a path relative to the argument).
    pub fn is_match(&self, candidate: &[u8]) -> bool {
        self.set
            .as_ref()
            .is_some_and(|s| s.is_match(Path::new(OsStr::from_bytes(candidate))))
    }
}

/// fnmatch's pattern in globset's syntax; `None` if it matches nothing.
fn translate(p: &[u8]) -> Option<String> {
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            b'*' => {
                while i < p.len() && p[i] == b'*' {
                    i += 1;
                }
                out.push(b'*');
                continue;
            }
            b'?' => out.push(b'?'),
            b'\\' => {
                // A trailing backslash matches nothing (glibc).
                let c = *p.get(i + 1)?;
                literal(&mut out, c);
                i += 1;
            }
            b'[' => match bracket(p, i + 1) {
                Bracket::Set(set) => {
                    class(&mut out, &set)?;
                    i = set.end;
                    continue;
                }
                Bracket::Never => return None,
                Bracket::Unterminated => literal(&mut out, b'['),
            },
            c => literal(&mut out, c),
        }
        i += 1;
    }
    // Non-ASCII bytes are copied in the order they came, whole characters together.
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// `c` as a literal: ASCII punctuation escaped, the rest as it is.
fn literal(out: &mut Vec<u8>, c: u8) {
    if c.is_ascii_punctuation() {
        out.push(b'\\');
    }
    out.push(c);
}

/// A bracket expression as read.
struct Set {
    /// Its ASCII members (items of ASCII bytes only).
    ascii: [bool; 128],
    /// Its items that involve non-ASCII bytes, as they were written: globset reads them
    /// as characters, and its byte-wise class of their UTF-8 bytes is what fnmatch's
    /// byte-wise reading makes of them in the C locale.
    raw: Vec<u8>,
    negated: bool,
    /// Where the pattern goes on.
    end: usize,
}

/// What a `[` starts.
enum Bracket {
    Set(Set),
    /// A bracket expression that fails the whole pattern (an unknown class name, a malformed
    /// collating symbol).
    Never,
    /// No closing `]`: the `[` is a plain character.
    Unterminated,
}

/// The bracket expression after the `[` at `start - 1`, read as glibc's fnmatch reads it in the
/// C locale.
fn bracket(p: &[u8], start: usize) -> Bracket {
    let mut i = start;
    let negated = matches!(p.get(i), Some(b'!') | Some(b'^'));
    if negated {
        i += 1;
    }
    let mut set = Set {
        ascii: [false; 128],
        raw: Vec::new(),
        negated,
        end: 0,
    };
    let mut first = true;
    loop {
        let Some(&c) = p.get(i) else {
            return Bracket::Unterminated;
        };
        if c == b']' && !first {
            set.end = i + 1;
            return Bracket::Set(set);
        }
        first = false;
        let item = i;
        // The item's first byte (a whole class is added at once).
        let lo = match c {
            b'\\' => {
                let Some(&e) = p.get(i + 1) else {
                    return Bracket::Never;
                };
                i += 2;
                e
            }
            b'[' if p.get(i + 1) == Some(&b':') => match posix_class(p, i + 2) {
                Some(Ok((members, end))) => {
                    for b in 0..128u8 {
                        set.ascii[b as usize] |= members(b);
                    }
                    i = end;
                    continue;
                }
                Some(Err(())) => return Bracket::Never,
                None => {
                    i += 1;
                    b'['
                }
            },
            b'[' if p.get(i + 1) == Some(&b'=') => {
                // `[=c=]`: in the C locale, the byte `c`.
                match (p.get(i + 2), p.get(i + 3), p.get(i + 4)) {
                    (Some(&e), Some(b'='), Some(b']')) if e.is_ascii() => {
                        set.ascii[e as usize] = true;
                        i += 5;
                        continue;
                    }
                    _ => {
                        i += 1;
                        b'['
                    }
                }
            }
            b'[' if p.get(i + 1) == Some(&b'.') => match collating(p, i + 2) {
                Some(e) => {
                    i += 5;
                    e
                }
                None => return Bracket::Never,
            },
            _ => {
                i += 1;
                c
            }
        };
        // A range: `-` then an end that is not the closing `]` (glibc fails the pattern on a
        // `-` that ends it).
        if p.get(i) == Some(&b'-') && p.get(i + 1).is_none() {
            return Bracket::Never;
        }
        let hi = if p.get(i) == Some(&b'-') && p.get(i + 1).is_some_and(|&e| e != b']') {
            let end = match p[i + 1] {
                b'\\' => p.get(i + 2).map(|&e| (e, i + 3)),
                b'[' if p.get(i + 2) == Some(&b'.') => collating(p, i + 3).map(|e| (e, i + 6)),
                e => Some((e, i + 2)),
            };
            let Some((hi, next)) = end else {
                return Bracket::Never;
            };
            i = next;
            hi
        } else {
            lo
        };
        if lo.is_ascii() && hi.is_ascii() {
            for b in lo..=hi {
                set.ascii[b as usize] = true;
            }
        } else {
            set.raw.extend_from_slice(&p[item..i]);
        }
    }
}

/// `[.c.]` from its `c` at `at`: in the C locale only one byte names itself (anything else
/// fails the pattern: `None`).
fn collating(p: &[u8], at: usize) -> Option<u8> {
    match (p.get(at), p.get(at + 1), p.get(at + 2)) {
        (Some(&e), Some(b'.'), Some(b']')) => Some(e),
        _ => None,
    }
}

/// The members of the C locale's class whose name starts at `at` (after `[:`): `None` if no
/// `:]` closes it (then the `[` is a plain character), `Err` for an unknown name.
#[allow(clippy::type_complexity)]
fn posix_class(p: &[u8], at: usize) -> Option<Result<(fn(u8) -> bool, usize), ()>> {
    let close = p.get(at..)?.windows(2).position(|w| w == b":]")? + at;
    let f: fn(u8) -> bool = match &p[at..close] {
        b"alnum" => |b| b.is_ascii_alphanumeric(),
        b"alpha" => |b| b.is_ascii_alphabetic(),
        b"blank" => |b| b == b' ' || b == b'\t',
        b"cntrl" => |b| b.is_ascii_control(),
        b"digit" => |b| b.is_ascii_digit(),
        b"graph" => |b| b.is_ascii_graphic(),
        b"lower" => |b| b.is_ascii_lowercase(),
        b"print" => |b| b.is_ascii_graphic() || b == b' ',
        b"punct" => |b| b.is_ascii_punctuation(),
        b"space" => |b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
        b"upper" => |b| b.is_ascii_uppercase(),
        b"xdigit" => |b| b.is_ascii_hexdigit(),
        _ => return Some(Err(())),
    };
    Some(Ok((f, close + 2)))
}

/// A bracket expression in globset's syntax; `None` if it matches nothing. The bytes that
/// are special in globset's class are put where they are plain: `]` first, `-` last, `!` and
/// `^` never first; a class of nothing but those two becomes alternatives.
fn class(out: &mut Vec<u8>, s: &Set) -> Option<()> {
    let mut ranges: Vec<(u8, u8)> = Vec::new();
    for b in (0..128u8).filter(|&b| s.ascii[b as usize] && b != b']' && b != b'-') {
        match ranges.last_mut() {
            Some(r) if r.1 + 1 == b => r.1 = b,
            _ => ranges.push((b, b)),
        }
    }
    let close = s.ascii[b']' as usize];
    let dash = s.ascii[b'-' as usize];
    if ranges.is_empty() && !close && !dash && s.raw.is_empty() {
        // Nothing in it: a set that matches nothing, or (negated) any byte.
        if s.negated {
            out.push(b'?');
            return Some(());
        }
        return None;
    }
    let special = |r: &(u8, u8)| r.0 == b'!' || r.0 == b'^';
    let mut dash_first = false;
    if !close && !s.negated && ranges.first().is_some_and(special) {
        if let Some(pos) = ranges.iter().position(|r| !special(r)) {
            ranges.rotate_left(pos);
        } else if dash {
            dash_first = true;
        } else if s.raw.is_empty() {
            // Only `!` and `^`, each alone.
            let alts: Vec<String> = ranges
                .iter()
                .map(|r| format!("\\{}", r.0 as char))
                .collect();
            out.extend_from_slice(format!("{{{}}}", alts.join(",")).as_bytes());
            return Some(());
        }
    }
    out.push(b'[');
    if s.negated {
        out.push(b'!');
    }
    if close {
        out.push(b']');
    }
    if dash_first {
        out.push(b'-');
    }
    // Raw items before the ASCII ones when those would start with `!` or `^`.
    let raw_first = !close && !dash_first && !s.negated && ranges.first().is_some_and(special);
    if raw_first {
        out.extend_from_slice(&s.raw);
    }
    for (lo, hi) in &ranges {
        out.push(*lo);
        if hi > lo {
            out.push(b'-');
            out.push(*hi);
        }
    }
    if !raw_first {
        out.extend_from_slice(&s.raw);
    }
    if dash && !dash_first {
        out.push(b'-');
    }
    out.push(b']');
    Some(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// fnmatch(3) with no flags, in the C locale this test process runs in.
    fn fnmatch(pattern: &str, name: &[u8]) -> bool {
        let p = std::ffi::CString::new(pattern).unwrap();
        let n = std::ffi::CString::new(name).unwrap();
        // SAFETY: both are valid NUL-terminated strings that outlive the call.
        unsafe { libc::fnmatch(p.as_ptr(), n.as_ptr(), 0) == 0 }
    }

    fn m(glob: &str, name: &[u8]) -> bool {
        Globs::new([compile(glob).unwrap()]).is_match(name)
    }

    #[test]
    fn star_and_question_mark_stay_inside_a_component() {
        assert!(m("test*.txt", b"test123.txt"));
        assert!(!m("a/*", b"a/b/c"));
        assert!(m("a/**", b"a/b/c"));
        assert!(m("**/x", b"x"));
        assert!(m("**/x", b"a/b/x"));
        assert!(!m("a?b", b"a/b"));
    }

    #[test]
    fn names_are_bytes() {
        assert!(m("*", b"a\xffb"));
        assert!(m("a?b", b"a\xffb"));
        assert!(m("a?b", b"a\nb"));
        // `?` is one byte: a two-byte UTF-8 character takes two.
        assert!(!m("?", "é".as_bytes()));
        assert!(m("??", "é".as_bytes()));
        assert!(m("*", b".hidden"));
    }

    #[test]
    fn classes_escapes_and_alternatives() {
        assert!(m("[!a]", b"b"));
        assert!(!m("[!a]", b"a"));
        assert!(m("\\*", b"*"));
        assert!(!m("\\*", b"x"));
        assert!(m("{a,b}.log", b"b.log"));
        assert!(m("\\{a\\}", b"{a}"));
    }

    #[test]
    fn bad_globs_are_refused() {
        assert!(compile("").is_err());
        assert!(compile("a[").is_err());
        assert!(compile("a{b").is_err());
        assert!(compile("\\").is_err());
    }

    fn same(pattern: &str, name: &[u8]) -> Result<(), TestCaseError> {
        let ours = Name::new(pattern).unwrap().is_match(name);
        let theirs = fnmatch(pattern, name);
        prop_assert_eq!(
            ours,
            theirs,
            "{:?} on {:?} (as {:?})",
            pattern,
            String::from_utf8_lossy(name),
            translate(pattern.as_bytes())
        );
        Ok(())
    }

    #[test]
    fn examples_match_as_fnmatch_does() {
        for (p, n) in [
            ("backup-*.tar", "backup-2026-11-20.tar"),
            ("*", ".hidden"),
            ("a{b,c}", "a{b,c}"),
            ("a{b,c}", "ab"),
            ("**x", "abx"),
            ("[!a]", "b"),
            ("[^a]", "a"),
            ("[]]", "]"),
            ("[a-]", "-"),
            ("[z-a]", "m"),
            ("[[:digit:]]x", "7x"),
            ("[[:nope:]]", "n"),
            ("[[=a=]]", "a"),
            ("[[.a.]-c]", "b"),
            ("[ab", "[ab"),
            ("[[", "[["),
            ("x[a-", "x[a-"),
            ("[\\]]", "]"),
            ("a\\", "a\\"),
            ("\\*", "*"),
            ("[!]", "x"),
            ("[!-]", "-"),
            ("[!^]", "x"),
        ] {
            same(p, n.as_bytes()).unwrap();
        }
    }

    fn pattern() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => prop::sample::select(vec![
                "a", "b", "z", ".", "-", "!", "^", "]", "[", "*", "?", "\\", "{", "}", ",", ":",
                "=", "/", " ",
            ])
            .prop_map(String::from),
            1 => prop::sample::select(vec![
                "[:alpha:]", "[:digit:]", "[:space:]", "[:punct:]", "[:nope:]", "[=a=]",
                "[.b.]", "[.ab.]", "a-z", "z-a",
            ])
            .prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
    }

    fn name() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop::sample::select(b"abz.-!^][*?\\{},:=/ 0A\t".to_vec()),
            0..6,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn names_match_as_fnmatch_does(p in pattern(), n in name()) {
            same(&p, &n)?;
        }
    }

    #[test]
    fn a_glob_error_says_what_is_wrong() {
        assert_eq!(
            compile("").unwrap_err().to_string(),
            "an empty glob matches nothing"
        );
        let globset = GlobBuilder::new("a[").build().unwrap_err();
        assert_eq!(
            compile("a[").unwrap_err().to_string(),
            globset.kind().to_string()
        );
    }
}
