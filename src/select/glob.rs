//! The one glob dialect of reclaim (`rm --name/--path/--exclude`, `scan --exclude`): globset's,
//! with `*` and `?` never matching a '/' (`**` as a whole component matches any number of
//! directories), `[...]`/`[!...]` classes, `{a,b}` alternatives and `\` escaping the next
//! character. Matching is on bytes: a name need not be UTF-8, and `?` is one byte (as GNU find
//! in the C locale). Pure: no I/O.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Compiles one glob of the dialect; the error says what is wrong with it.
pub fn compile(text: &str) -> Result<Glob, String> {
    if text.is_empty() {
        return Err("an empty glob matches nothing".into());
    }
    GlobBuilder::new(text)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// Several globs; a candidate matches if any of them does.
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

    /// The indices of the globs matching `candidate`.
    pub fn matches(&self, candidate: &[u8]) -> Vec<usize> {
        self.set
            .as_ref()
            .map(|s| s.matches(Path::new(OsStr::from_bytes(candidate))))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
