//! Property tests: random trees (files, directories, symlinks of every kind, fifos, sockets,
//! hard links to files inside and outside) are removed completely, and an outside directory
//! they point into and share inodes with is left exactly as it was.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use crate::util::{self, assert_same, parse_report, scratch, Scratch};

#[derive(Clone, Debug)]
enum Link {
    Dangling,
    SelfLoop,
    Dot,
    DotDot,
    /// `../..`-style relative path to the outside directory.
    OutsideRel,
    /// Absolute path of the outside directory.
    OutsideAbs,
    /// Absolute path of a file in the outside directory.
    OutsideFile,
    /// A directory inside outside, with a trailing slash.
    OutsideSubSlash,
    /// The target directory itself (absolute).
    TargetRoot,
    /// The scratch root (absolute): parent of both target and outside.
    ScratchRoot,
    /// A looping chain through outside: outside/loop -> outside/loop.
    OutsideLoop,
}

#[derive(Clone, Debug)]
enum Node {
    File(Vec<u8>),
    /// A file that the outside directory also holds a hard link to.
    SharedFile(Vec<u8>),
    Dir(BTreeMap<Vec<u8>, Node>),
    Symlink(Link),
    Fifo,
    Socket,
    /// A hard link to an earlier file of the target (index modulo their number).
    HardLinkInside(usize),
    /// A hard link to a file of the outside directory.
    HardLinkOutside(usize),
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[a-z0-9_]{1,6}".prop_map(String::into_bytes),
        1 => proptest::collection::vec(any::<u8>().prop_filter("no NUL or /", |b| *b != 0 && *b != b'/'), 1..10)
            .prop_filter("not . or ..", |n| n != b"." && n != b".."),
    ]
}

fn link() -> impl Strategy<Value = Link> {
    prop_oneof![
        Just(Link::Dangling),
        Just(Link::SelfLoop),
        Just(Link::Dot),
        Just(Link::DotDot),
        Just(Link::OutsideRel),
        Just(Link::OutsideAbs),
        Just(Link::OutsideFile),
        Just(Link::OutsideSubSlash),
        Just(Link::TargetRoot),
        Just(Link::ScratchRoot),
        Just(Link::OutsideLoop),
    ]
}

fn leaf() -> impl Strategy<Value = Node> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(Node::File),
        1 => proptest::collection::vec(any::<u8>(), 0..16).prop_map(Node::SharedFile),
        1 => Just(Node::Dir(BTreeMap::new())),
        3 => link().prop_map(Node::Symlink),
        1 => Just(Node::Fifo),
        1 => Just(Node::Socket),
        1 => any::<usize>().prop_map(Node::HardLinkInside),
        1 => any::<usize>().prop_map(Node::HardLinkOutside),
    ]
}

/// A directory's children, `depth` levels at most.
fn tree(depth: u32, width: usize) -> impl Strategy<Value = BTreeMap<Vec<u8>, Node>> {
    let node = leaf().prop_recursive(depth, 64, width as u32, move |inner| {
        proptest::collection::btree_map(name(), inner, 0..width).prop_map(Node::Dir)
    });
    proptest::collection::btree_map(name(), node, 0..width + 2)
}

/// Builds a tree of children under `root/rel`, recording regular files for hard links.
struct Builder<'a> {
    s: &'a Scratch,
    files: Vec<PathBuf>,
    hardlinks: Vec<(PathBuf, usize)>,
    shared: usize,
}

impl Builder<'_> {
    fn build(&mut self, rel: &Path, children: &BTreeMap<Vec<u8>, Node>) {
        self.s.mkdir(rel);
        for (name, node) in children {
            let p = rel.join(OsStr::from_bytes(name));
            match node {
                Node::File(contents) => {
                    self.s.file(&p, contents);
                    self.files.push(p);
                }
                Node::SharedFile(contents) => {
                    self.s.file(&p, contents);
                    self.s
                        .hardlink(format!("outside/shared/{}", self.shared), &p);
                    self.shared += 1;
                    self.files.push(p);
                }
                Node::Dir(grand) => self.build(&p, grand),
                Node::Symlink(l) => {
                    let ups = "../".repeat(rel.components().count());
                    let target: PathBuf = match l {
                        Link::Dangling => "no/such/entry".into(),
                        Link::SelfLoop => PathBuf::from(OsStr::from_bytes(name)),
                        Link::Dot => ".".into(),
                        Link::DotDot => "..".into(),
                        Link::OutsideRel => format!("{ups}outside").into(),
                        Link::OutsideAbs => self.s.path("outside"),
                        Link::OutsideFile => self.s.path("outside/file1"),
                        Link::OutsideSubSlash => format!("{ups}outside/sub/").into(),
                        Link::TargetRoot => self.s.path("target"),
                        Link::ScratchRoot => self.s.root().to_path_buf(),
                        Link::OutsideLoop => self.s.path("outside/loop"),
                    };
                    self.s.symlink(&p, target);
                }
                Node::Fifo => {
                    self.s.fifo(&p);
                }
                Node::Socket => {
                    self.s.socket(&p);
                }
                Node::HardLinkInside(i) => self.hardlinks.push((p, *i)),
                Node::HardLinkOutside(i) => {
                    self.s.hardlink(&p, format!("outside/file{}", i % 8));
                }
            }
        }
    }

    fn finish(&mut self) {
        for (p, i) in std::mem::take(&mut self.hardlinks) {
            if self.files.is_empty() {
                self.s.file(&p, "no file to link to");
            } else {
                let src = self.files[i % self.files.len()].clone();
                self.s.hardlink(&p, src);
            }
        }
    }
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    }
}

/// Builds the scratch dir `s` (outside + target), removes target with `extra` flags, checks.
fn check(s: Scratch, children: &BTreeMap<Vec<u8>, Node>, extra: &[&str]) {
    s.make_outside("outside");
    s.mkdir("outside/shared");
    s.symlink("outside/loop", "loop");
    let mut b = Builder {
        s: &s,
        files: Vec::new(),
        hardlinks: Vec::new(),
        shared: 0,
    };
    b.build(Path::new("target"), children);
    b.finish();
    let outside = s.snapshot("outside");
    let (files, dirs) = util::count_entries(&s.path("target"));
    let mut args = vec!["-r", "--json"];
    args.extend_from_slice(extra);
    args.push("target");
    let out = s.rm(&args).output().unwrap();
    let stderr = util::stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(!s.exists("target"), "target left behind");
    assert_same("outside", &outside, &s.snapshot("outside"));
    s.assert_marker();
    let r = parse_report(&out.stdout);
    assert_eq!((r.files, r.dirs), (files, dirs), "{r:?}");
    assert!(r.errors.is_empty(), "{r:?}");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn removes_random_trees_and_nothing_else(children in tree(4, 6)) {
        check(scratch!(), &children, &["--threads", "2"]);
    }

    #[test]
    fn removes_random_deep_trees_with_fd_budget_2(children in tree(8, 3)) {
        check(scratch!(), &children, &["--threads", "2", "--fd-budget", "2"]);
    }
}
