//! `--exclude GLOB` (`reclaim scan`, `reclaim rm -r`): which entries of a tree are left out
//! (neither counted, removed nor descended into). A glob without a '/' is matched against an
//! entry's name, one with a '/' against its path relative to PATH; a trailing '/' limits it to
//! directories. The dialect is reclaim's one for paths (`super::compile`, also `rm
//! --name/--path`): `*` and `?` never match a '/' (`**` does).
//! Pure matching: no I/O.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};

/// One `--exclude` argument, checked.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// As given on the command line.
    pub text: String,
    glob: Glob,
    /// Matched against the path relative to PATH (the glob had a '/'), else the name.
    on_path: bool,
    /// Only directories match (the glob ended in '/').
    dir_only: bool,
}

/// Parses one `--exclude` value (clap's value parser).
pub fn parse(text: &str) -> Result<Pattern, crate::engine::glob::GlobError> {
    let mut body = text;
    let dir_only = body.len() > 1 && body.ends_with('/');
    if dir_only {
        body = &body[..body.len() - 1];
    }
    let on_path = body.contains('/');
    // Relative to PATH either way: a leading "/" or "./" anchors nothing more.
    let body = body
        .strip_prefix("./")
        .or_else(|| body.strip_prefix('/'))
        .unwrap_or(body);
    // The one glob dialect on paths (src/engine/glob.rs).
    let glob = crate::engine::glob::compile(body)?;
    Ok(Pattern {
        text: text.to_string(),
        glob,
        on_path,
        dir_only,
    })
}

/// The compiled `--exclude` globs.
#[derive(Clone, Debug, Default)]
pub struct Exclude {
    names: Set,
    paths: Set,
}

#[derive(Clone, Debug, Default)]
struct Set {
    globs: Option<GlobSet>,
    /// Per glob of `globs`: only directories match.
    dir_only: Vec<bool>,
}

impl Set {
    fn build(patterns: &[&Pattern]) -> Set {
        if patterns.is_empty() {
            return Set::default();
        }
        let mut b = GlobSetBuilder::new();
        for p in patterns {
            b.add(p.glob.clone());
        }
        Set {
            globs: Some(b.build().expect("globs checked one by one")),
            dir_only: patterns.iter().map(|p| p.dir_only).collect(),
        }
    }

    fn matches(&self, candidate: &[u8], is_dir: bool) -> bool {
        let Some(set) = &self.globs else {
            return false;
        };
        let path = Path::new(OsStr::from_bytes(candidate));
        if is_dir || !self.dir_only.contains(&true) {
            return set.is_match(path);
        }
        set.matches(path).iter().any(|&i| !self.dir_only[i])
    }
}

impl Exclude {
    pub fn new(patterns: &[Pattern]) -> Exclude {
        let (paths, names): (Vec<&Pattern>, Vec<&Pattern>) =
            patterns.iter().partition(|p| p.on_path);
        Exclude {
            names: Set::build(&names),
            paths: Set::build(&paths),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.globs.is_none() && self.paths.globs.is_none()
    }

    /// Whether some glob looks at paths (the caller then builds them).
    pub fn needs_path(&self) -> bool {
        self.paths.globs.is_some()
    }

    /// Whether the entry `name`, at `rel` below its PATH (computed only if `needs_path`), is
    /// left out. `is_dir`: it is known to be a directory (a directory-only glob matches only
    /// then).
    pub fn excludes(&self, name: &[u8], rel: impl FnOnce() -> Vec<u8>, is_dir: bool) -> bool {
        self.names.matches(name, is_dir)
            || (self.needs_path() && self.paths.matches(&rel(), is_dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(globs: &[&str]) -> Exclude {
        let p: Vec<Pattern> = globs.iter().map(|g| parse(g).unwrap()).collect();
        Exclude::new(&p)
    }

    fn hit(e: &Exclude, rel: &str, is_dir: bool) -> bool {
        let name = rel.rsplit('/').next().unwrap();
        e.excludes(name.as_bytes(), || rel.as_bytes().to_vec(), is_dir)
    }

    #[test]
    fn names_match_at_any_depth() {
        let e = ex(&["*.o", "node_modules"]);
        assert!(hit(&e, "a.o", false));
        assert!(hit(&e, "src/deep/b.o", false));
        assert!(hit(&e, "web/node_modules", true));
        assert!(!hit(&e, "a.c", false));
        assert!(!hit(&e, "node_modules_x", true));
    }

    #[test]
    fn globs_with_a_slash_match_the_relative_path() {
        let e = ex(&["build/*", "/top", "./dot", "**/cache/tmp"]);
        assert!(hit(&e, "build/x", false));
        // `*` does not cross a '/'.
        assert!(!hit(&e, "build/x/y", false));
        assert!(!hit(&e, "sub/build/x", false));
        assert!(hit(&e, "top", true));
        assert!(!hit(&e, "sub/top", true));
        assert!(hit(&e, "dot", false));
        assert!(hit(&e, "cache/tmp", true));
        assert!(hit(&e, "a/b/cache/tmp", true));
    }

    #[test]
    fn a_trailing_slash_matches_only_directories() {
        let e = ex(&["cache/", "logs/old/"]);
        assert!(hit(&e, "a/cache", true));
        assert!(!hit(&e, "a/cache", false));
        assert!(hit(&e, "logs/old", true));
        assert!(!hit(&e, "logs/old", false));
    }

    #[test]
    fn bad_globs_are_refused() {
        assert!(parse("").is_err());
        assert!(parse("/").is_err());
        assert!(parse("a[").is_err());
        assert!(ex(&[]).is_empty());
        assert!(!ex(&["x"]).needs_path());
    }
}
