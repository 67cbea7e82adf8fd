//! Differential tests of reclaim invoked as `rm` (a link named `rm`, issue 13) against GNU
//! coreutils' `rm` (`/usr/bin/rm`, or `$GNU_RM`): the same tree is built in two sibling
//! directories, GNU `rm` runs in one and reclaim-as-`rm` in the other with the same arguments,
//! uid, stdin (answers to prompts typed on a pseudo-terminal) and environment (`LC_ALL=C`),
//! and stdout, stderr, the exit code and the resulting tree must be identical.
//!
//! - `generated_scenarios_match_gnu_rm`: proptest scenarios (`GNU_RM_CASES`, default 400;
//!   from a fixed seed unless `GNU_RM_GEN_SEED` says another or `random`);
//!   a difference is shrunk to a minimal one and printed as a shell reproduction with both
//!   outputs side by side. `generated_scenarios_match_gnu_rm_thousands` (ignored) runs 5000.
//! - `generated_scenarios_report`: `GNU_RM_REPORT_CASES` (default 500) scenarios from a fixed
//!   seed (`GNU_RM_SEED`), all run, then a summary: how many ran, how many matched, and the
//!   categories that differ, with the smallest example of each.
//! - `harness_gnu_against_itself_always_matches` (`GNU_RM_SELF_CASES`, default 300): the
//!   harness's own check: with GNU on both
//!   sides every generated scenario must match (readdir order, prompts, paths are
//!   deterministic), so a difference against reclaim is reclaim's.
//! - Where coreutils 9.2 changed behaviour (`rm -d` of a directory its user may not read),
//!   reclaim follows 9.2+; with an older system `rm` those scenarios are not compared (said in
//!   the report's summary) and rm_gnu.rs proves the 9.2+ behaviour instead.
//! - One hand-written test per finding of issue 13; each first checks that GNU really does
//!   what the issue says (on this system's coreutils), then that reclaim does the same.
//!
//! Run (as root for all of it):
//!   cargo test --test tests gnu_rm::                                   # everything here
//!   cargo test --test tests gnu_rm::generated_scenarios_report -- --nocapture   # the summary
//!   GNU_RM_CASES=5000 cargo test --test tests gnu_rm::generated_scenarios_match_gnu_rm_thousands -- --ignored
//!   RECLAIM_TEST_BIN=/usr/bin/rm cargo test --test tests gnu_rm::     # GNU vs GNU: must pass
//!
//! `RECLAIM_TEST_BIN=/path/to/binary` runs the same tests against any binary (util.rs); the
//! link `bin/rm` in the second side points to it, and it runs with argv[0] `rm`.
//! Root is needed for other uids, tmpfs, ext4, xfs and btrfs loop images, mount points,
//! `chattr`, and for everything that names `/`, which runs only in a mount namespace where all
//! but the scratch directory is read-only; without root those scenarios say "skipped".

#[path = "gnu_rm_harness.rs"]
mod harness;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use crate::util::{self, scratch, Scratch};

use harness::{
    category, check, command_line, explain, need_gnu_rm, verdict, weight, Attr, Caps, Fs, Kind,
    Node, NotRun, Outcome, Scenario, SideSnapshot, Stdin, User, World, W,
};

// ---------------------------------------------------------------------------------------------
// The generator.

/// What a tree may hold besides plain files, directories and links inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    None,
    /// Symlinks to `/` (the scenario then runs in the read-only namespace).
    RootLinks,
    /// tmpfs mount points in the tree.
    Mounts,
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        12 => select(vec!["a", "b", "c", "x", "sub"]).prop_map(|s| s.as_bytes().to_vec()),
        2 => Just(b"-foo".to_vec()),
        1 => Just(b"with space".to_vec()),
        1 => Just(b"it's".to_vec()),
        1 => Just(b"q\"uote".to_vec()),
        1 => Just(b"new\nline".to_vec()),
        1 => Just(b"\xff\xferaw".to_vec()),
        1 => Just(b"-".to_vec()),
    ]
}

fn file_mode() -> impl Strategy<Value = u32> {
    prop_oneof![
        8 => Just(0o644),
        4 => Just(0o444),
        1 => Just(0o000),
        1 => Just(0o600),
        1 => Just(0o200),
    ]
}

fn dir_mode() -> impl Strategy<Value = u32> {
    prop_oneof![
        12 => Just(0o755),
        3 => Just(0o555),
        1 => Just(0o111),
        2 => Just(0o300),
        2 => Just(0o000),
        1 => Just(0o100),
        1 => Just(0o500),
        1 => Just(0o311),
        1 => Just(0o1777),
    ]
}

fn attr(fs: Fs) -> BoxedStrategy<Attr> {
    if fs == Fs::Ext4 {
        prop_oneof![6 => Just(Attr::None), 2 => Just(Attr::Immutable), 1 => Just(Attr::AppendOnly)]
            .boxed()
    } else {
        Just(Attr::None).boxed()
    }
}

fn link_target(special: Special) -> BoxedStrategy<Vec<u8>> {
    let inside = prop_oneof![
        6 => select(vec!["a", "sub", "x", ".", "missing", "../a", "sub/x", "../w", "-foo"])
            .prop_map(|s| s.as_bytes().to_vec()),
        2 => select(vec!["", "/a", "/sub", "/missing"])
            .prop_map(|s| format!("{W}{s}").into_bytes()),
        1 => Just(b"/nonexistent-reclaim-gnu-test/x".to_vec()),
    ];
    if special == Special::RootLinks {
        prop_oneof![3 => inside, 2 => Just(b"/".to_vec())].boxed()
    } else {
        inside.boxed()
    }
}

/// (kind, mode, attr) of one generated entry.
fn entry(fs: Fs, special: Special) -> BoxedStrategy<(Kind, u32, Attr)> {
    let contents = select(vec!["", "x\n", "hello"]).prop_map(|s| s.as_bytes().to_vec());
    let file = (contents, file_mode(), attr(fs)).prop_map(|(c, m, a)| (Kind::File(c), m, a));
    let dir = (dir_mode(), attr(fs)).prop_map(|(m, a)| (Kind::Dir, m, a));
    let link = link_target(special).prop_map(|t| (Kind::Link(t), 0o777, Attr::None));
    if special == Special::Mounts {
        prop_oneof![5 => file, 4 => dir, 2 => link, 2 => dir_mode().prop_map(|m| (Kind::Mount, m, Attr::None))]
            .boxed()
    } else {
        prop_oneof![5 => file, 4 => dir, 2 => link].boxed()
    }
}

fn tree(fs: Fs, special: Special) -> impl Strategy<Value = Vec<Node>> {
    prop::collection::vec((any::<Index>(), name(), entry(fs, special)), 0..10).prop_map(|items| {
        let mut nodes: Vec<Node> = Vec::new();
        let mut dirs: Vec<Vec<u8>> = vec![Vec::new()];
        for (parent, name, (kind, mode, attr)) in items {
            let parent = parent.get(&dirs).clone();
            let mut path = parent.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(&name);
            if nodes.iter().any(|n| n.path == path) {
                continue;
            }
            if matches!(kind, Kind::Dir | Kind::Mount) {
                dirs.push(path.clone());
            }
            nodes.push(Node {
                path,
                kind,
                mode,
                attr,
            });
        }
        nodes
    })
}

/// How an operand is spelled, applied to a path of the tree (or a missing one).
#[derive(Clone, Copy, Debug)]
enum Spelling {
    Plain,
    Slash,
    Slash2,
    Slash3,
    SlashDot,
    SlashDotDot,
    DotPrefix,
    Absolute,
    Below,
    InnerDoubleSlash,
}

fn spell(path: &[u8], how: Spelling) -> Vec<u8> {
    let cat = |a: &[u8], b: &[u8]| [a, b].concat();
    match how {
        Spelling::Plain => path.to_vec(),
        Spelling::Slash => cat(path, b"/"),
        Spelling::Slash2 => cat(path, b"//"),
        Spelling::Slash3 => cat(path, b"///"),
        Spelling::SlashDot => cat(path, b"/."),
        Spelling::SlashDotDot => cat(path, b"/.."),
        Spelling::DotPrefix => cat(b"./", path),
        Spelling::Absolute => cat(format!("{W}/").as_bytes(), path),
        Spelling::Below => cat(path, b"/x"),
        Spelling::InnerDoubleSlash => {
            let mut v = path.to_vec();
            if let Some(i) = v.iter().position(|&c| c == b'/') {
                v.insert(i, b'/');
            } else {
                v.splice(0..0, b".//".iter().copied());
            }
            v
        }
    }
}

fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![
        20 => Just(Spelling::Plain),
        3 => Just(Spelling::Slash),
        1 => Just(Spelling::Slash2),
        2 => Just(Spelling::Slash3),
        1 => Just(Spelling::SlashDot),
        1 => Just(Spelling::SlashDotDot),
        2 => Just(Spelling::DotPrefix),
        2 => Just(Spelling::Absolute),
        2 => Just(Spelling::Below),
        1 => Just(Spelling::InnerDoubleSlash),
    ]
}

const OPTIONS: &[(u32, &str)] = &[
    (10, "-r"),
    (6, "-f"),
    (6, "-v"),
    (8, "-rf"),
    (4, "-rv"),
    (3, "-fv"),
    (2, "-rfv"),
    (3, "-d"),
    (2, "-dv"),
    (3, "-R"),
    (2, "-i"),
    (2, "-I"),
    (1, "-Ir"),
    (1, "-if"),
    (1, "-fi"),
    (1, "-vrR"),
    (2, "--recursive"),
    (1, "--rec"),
    (1, "--dir"),
    (2, "--verbose"),
    (1, "--verb"),
    (2, "--force"),
    (1, "--for"),
    (1, "--interactive"),
    (1, "--interactive=never"),
    (1, "--interactive=once"),
    (1, "--interactive=always"),
    (1, "--interactive=no"),
    (1, "--interactive=yes"),
    (1, "--interactive=none"),
    (1, "--interactive=n"),
    (1, "--inter=once"),
    (2, "--one-file-system"),
    (1, "--one"),
    (2, "--preserve-root"),
    (1, "--preserve-root=all"),
    (1, "--pres"),
    (2, "--no-preserve-root"),
    (1, "--no-preserve"),
    (1, "--help"),
    (1, "--version"),
    (1, "-x"),
    (1, "--bogus"),
    (1, "--interactive=bogus"),
    (1, "--preserve-root=bogus"),
    (1, "--verbose=1"),
];

fn option() -> impl Strategy<Value = Vec<u8>> {
    let weighted: Vec<(u32, BoxedStrategy<Vec<u8>>)> = OPTIONS
        .iter()
        .map(|&(w, o)| (w, Just(o.as_bytes().to_vec()).boxed()))
        .collect();
    proptest::strategy::Union::new_weighted(weighted)
}

/// One token of the command line before it is resolved against the tree.
#[derive(Clone, Debug)]
enum Tok {
    Opt(Vec<u8>),
    /// A path of the tree (or of the extras: missing names, `.`, `..`), spelled somehow.
    Operand(Index, Spelling),
    /// `/`, `//`, `///`, `/.`, `/..` (only with symlinks to `/`, in the read-only world).
    RootLike(&'static str),
}

fn tokens(special: Special) -> BoxedStrategy<Vec<Tok>> {
    let operand = (any::<Index>(), spelling()).prop_map(|(i, s)| Tok::Operand(i, s));
    let operand = if special == Special::RootLinks {
        prop_oneof![
            6 => operand,
            2 => select(vec!["/", "//", "///", "/.", "/.."]).prop_map(Tok::RootLike),
        ]
        .boxed()
    } else {
        operand.boxed()
    };
    // Operands (usually some), and options put between them anywhere (GNU permutes).
    (
        prop_oneof![
            1 => Just(Vec::new()),
            12 => prop::collection::vec(operand, 1..4),
        ],
        prop::collection::vec((any::<Index>(), option()), 0..4),
    )
        .prop_map(|(mut toks, opts)| {
            for (at, o) in opts {
                let i = at.index(toks.len() + 1);
                toks.insert(i, Tok::Opt(o));
            }
            toks
        })
        .boxed()
}

fn answer() -> impl Strategy<Value = Vec<u8>> {
    select(vec!["y", "n", "yes", "Y", "N", "", "no", "maybe"]).prop_map(|s| s.as_bytes().to_vec())
}

fn stdin() -> impl Strategy<Value = Stdin> {
    prop_oneof![
        6 => Just(Stdin::Null),
        3 => prop::collection::vec(answer(), 0..5).prop_map(Stdin::Pty),
        1 => prop::collection::vec(answer(), 0..5).prop_map(Stdin::Terminal),
    ]
}

fn assemble(
    nodes: Vec<Node>,
    toks: Vec<Tok>,
    dashdash: Option<Index>,
    special: Special,
) -> Vec<Vec<u8>> {
    let mut pool: Vec<Vec<u8>> = nodes.iter().map(|n| n.path.clone()).collect();
    for extra in ["missing", "a/missing", ".", "..", "a", "sub"] {
        pool.push(extra.as_bytes().to_vec());
    }
    let mut args: Vec<Vec<u8>> = toks
        .into_iter()
        .map(|t| match t {
            Tok::Opt(o) if special == Special::RootLinks && o.starts_with(b"--n") => {
                b"--preserve-root".to_vec()
            }
            Tok::Opt(o) => o,
            Tok::Operand(i, s) => {
                let p = i.get::<Vec<u8>>(&pool);
                if p.as_slice() == b".." && matches!(s, Spelling::SlashDotDot) {
                    // `../..` would leave the side directory.
                    p.clone()
                } else {
                    spell(p, s)
                }
            }
            Tok::RootLike(r) => r.as_bytes().to_vec(),
        })
        .collect();
    if let Some(i) = dashdash {
        let at = i.index(args.len() + 1);
        args.insert(at, b"--".to_vec());
    }
    args
}

fn scenario(caps: Caps) -> BoxedStrategy<Scenario> {
    let fs: BoxedStrategy<Fs> = if caps.root && caps.ext4 && caps.xfs && caps.btrfs {
        prop_oneof![
            6 => Just(Fs::Host),
            2 => Just(Fs::Tmpfs),
            2 => Just(Fs::Ext4),
            1 => Just(Fs::Xfs),
            1 => Just(Fs::Btrfs)
        ]
        .boxed()
    } else if caps.root && caps.ext4 {
        prop_oneof![6 => Just(Fs::Host), 2 => Just(Fs::Tmpfs), 2 => Just(Fs::Ext4)].boxed()
    } else if caps.root {
        prop_oneof![6 => Just(Fs::Host), 2 => Just(Fs::Tmpfs)].boxed()
    } else {
        Just(Fs::Host).boxed()
    };
    let user: BoxedStrategy<User> = if caps.root {
        prop_oneof![Just(User::Me), Just(User::Other)].boxed()
    } else {
        Just(User::Me).boxed()
    };
    (fs, user, 0..6u8)
        .prop_flat_map(move |(fs, user, sp)| {
            let special = match sp {
                0 if caps.root && user == User::Me && fs == Fs::Host => Special::RootLinks,
                1 if caps.root && fs == Fs::Host => Special::Mounts,
                _ => Special::None,
            };
            (
                Just(fs),
                Just(user),
                Just(special),
                tree(fs, special),
                tokens(special),
                prop::option::weighted(0.15, any::<Index>()),
                stdin(),
                prop_oneof![12 => Just(0o755u32), 1 => Just(0o555), 1 => Just(0o311)],
                prop::bool::weighted(0.05),
            )
        })
        .prop_map(
            |(fs, user, special, nodes, toks, dashdash, stdin, w_mode, argv0_path)| Scenario {
                fs,
                user,
                w_mode,
                args: assemble(nodes.clone(), toks, dashdash, special),
                nodes,
                stdin,
                argv0_path,
            },
        )
        .boxed()
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------------
// Generated scenarios.

/// Runs `cases` generated scenarios under proptest; a difference is shrunk and printed.
fn run_generated(scratch: Scratch, cases: u32) {
    let test = &scratch.test().to_string();
    if let Err(why) = need_gnu_rm() {
        return util::skipped(test, &why);
    }
    let mut world = World::new(scratch);
    let caps = world.caps;
    if !caps.root {
        util::skipped(test, "in part: not root, so only the test's uid on the host file system (other uids, tmpfs, ext4, chattr, mounts and / not generated)");
    }
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4000,
        max_shrink_time: 45_000,
        ..Config::default()
    };
    // Reproducible by default (a CI run must not fail on a scenario nobody saw before it
    // landed): `GNU_RM_GEN_SEED=N` picks another stream, `GNU_RM_GEN_SEED=random` explores.
    let seed = match std::env::var("GNU_RM_GEN_SEED").ok().as_deref() {
        Some("random") => None,
        Some(v) => v.parse::<u64>().ok(),
        None => Some(u64::from(cases)),
    };
    let mut runner = match seed {
        None => TestRunner::new(config),
        Some(seed) => {
            eprintln!("{test}: seed {seed} (GNU_RM_GEN_SEED=random to explore)");
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
        }
    };
    let world = std::cell::RefCell::new(&mut world);
    let (ran, skipped) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    // The first scenario that differs, as it was seen: shrinking runs scenarios again, and a
    // difference that comes and goes (a race) may not be there in the minimal one.
    let first = std::cell::RefCell::new(None::<String>);
    let result = runner.run(&scenario(caps), |sc| {
        match world.borrow_mut().run(&sc) {
            Err(NotRun::Skipped(_)) => {
                skipped.set(skipped.get() + 1);
                Ok(())
            }
            // Never run: a spelling whose resolution leaves the side (a missing name below a
            // symlink to `/`). Rare; proptest counts it as a rejected input.
            Err(NotRun::Refused(why)) => Err(TestCaseError::reject(why)),
            // Not comparable with this coreutils (before 9.2; reclaim follows 9.2+, proven
            // by rm_gnu::rm_d_removes_an_empty_directory_it_cannot_read).
            Err(NotRun::Newer) => Err(TestCaseError::reject("coreutils < 9.2 differs here")),
            Ok(c) => {
                ran.set(ran.get() + 1);
                // What a terminal shows depends on when the pty is read (the echo of a typed
                // answer may land after the capture ends), and so does stderr where answers
                // are typed on a pty (each is written in where the harness saw a read): a
                // scenario that differs only there is run twice more, and a real difference
                // shows every time.
                let pty = matches!(sc.stdin, Stdin::Pty(_));
                let only_terminal = c
                    .differs
                    .iter()
                    .all(|d| *d == "terminal" || (pty && *d == "stderr"));
                let flaked = || {
                    (0..2).any(|_| {
                        matches!(world.borrow_mut().run(&sc), Ok(again) if again.differs.is_empty())
                    })
                };
                if c.differs.is_empty() || (only_terminal && flaked()) {
                    Ok(())
                } else {
                    first.borrow_mut().get_or_insert_with(|| explain(&sc, &c));
                    Err(TestCaseError::fail(format!(
                        "differs in {}",
                        c.differs.join(", ")
                    )))
                }
            }
        }
    });
    let (ran, skipped) = (ran.get(), skipped.get());
    if skipped > 0 {
        util::skipped(
            test,
            &format!("in part: {skipped} scenarios cannot run here"),
        );
    }
    match result {
        Ok(()) => eprintln!("{test}: {ran} scenarios matched GNU rm ({skipped} skipped)"),
        Err(TestError::Fail(why, sc)) => {
            let detail = match world.borrow_mut().run(&sc) {
                Ok(c) => explain(&sc, &c),
                Err(e) => format!("{e:?}"),
            };
            let first = first.borrow_mut().take().unwrap_or_default();
            panic!(
                "{test}: a generated scenario differs ({why}); the first seen:\n{first}\n\
                 the minimal one found (run again):\n{detail}\n\
                 (the summary of many: cargo test generated_scenarios_report -- --nocapture)"
            );
        }
        Err(TestError::Abort(why)) => panic!("{test}: aborted: {why}"),
    }
}

#[test]
fn generated_scenarios_match_gnu_rm() {
    run_generated(scratch!(), env_u32("GNU_RM_CASES", 400));
}

#[test]
#[ignore = "thousands of scenarios: minutes; run with --ignored (GNU_RM_CASES sets the count)"]
fn generated_scenarios_match_gnu_rm_thousands() {
    run_generated(scratch!(), env_u32("GNU_RM_CASES", 5000));
}

/// Samples `n` scenarios from a fixed seed (`GNU_RM_SEED`, a number).
fn sample(caps: Caps, n: u32) -> Vec<Scenario> {
    let seed = std::env::var("GNU_RM_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(13);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strat = scenario(caps);
    (0..n)
        .map(|_| strat.new_tree(&mut runner).expect("generate").current())
        .collect()
}

#[derive(Default)]
struct Tally {
    count: usize,
    aspects: BTreeMap<&'static str, usize>,
    example: Option<(usize, String, String)>,
}

fn first_line(o: &Outcome) -> String {
    // With `Stdin::Terminal` both streams are the terminal: what it showed.
    let b = if !o.stderr.is_empty() {
        &o.stderr
    } else if !o.stdout.is_empty() {
        &o.stdout
    } else {
        &o.terminal
    };
    let l = b.split(|&c| c == b'\n').next().unwrap_or(b"");
    let mut s = String::from_utf8_lossy(l).into_owned();
    if s.len() > 70 {
        s.truncate(70);
        s.push('…');
    }
    format!("exit {} {:?}", o.code, s)
}

/// Runs many scenarios without stopping and summarizes them.
fn report(world: &mut World, scenarios: &[Scenario]) -> (usize, usize, String) {
    let test = &world.scratch.test().to_string();
    let (mut ran, mut matched, mut skipped, mut refused) = (0, 0, BTreeMap::new(), 0);
    let mut newer = 0;
    let mut cats: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let mut matched_cats: BTreeMap<&'static str, usize> = BTreeMap::new();
    for sc in scenarios {
        match world.run(sc) {
            Err(NotRun::Skipped(why)) => *skipped.entry(why).or_insert(0) += 1,
            Err(NotRun::Newer) => newer += 1,
            Err(NotRun::Refused(why)) => {
                refused += 1;
                eprintln!("{test}: refused: {why}");
            }
            Ok(c) => {
                ran += 1;
                let cat = category(sc, &c);
                if c.differs.is_empty() {
                    matched += 1;
                    *matched_cats.entry(cat).or_insert(0) += 1;
                    continue;
                }
                let t = cats.entry(cat).or_default();
                t.count += 1;
                for a in &c.differs {
                    *t.aspects.entry(a).or_insert(0) += 1;
                }
                let w = weight(sc);
                if t.example.as_ref().is_none_or(|(w0, _, _)| w < *w0) {
                    let line = format!(
                        "{}   GNU: {}   reclaim: {}",
                        command_line(sc),
                        first_line(&c.gnu),
                        first_line(&c.reclaim)
                    );
                    t.example = Some((w, line, explain(sc, &c)));
                }
            }
        }
    }
    for (why, n) in &skipped {
        util::skipped(test, &format!("in part: {n} scenarios: {why}"));
    }
    let mut s = String::new();
    let pct = if ran > 0 {
        100.0 * matched as f64 / ran as f64
    } else {
        0.0
    };
    let _ = writeln!(
        s,
        "GNU rm differential: {} scenarios generated, {ran} ran, {matched} matched ({pct:.1}%), {} differ",
        scenarios.len(),
        ran - matched
    );
    for (why, n) in &skipped {
        let _ = writeln!(s, "  skipped {n}: {why}");
    }
    if refused > 0 {
        let _ = writeln!(
            s,
            "  refused by the harness (outside the scratch): {refused}"
        );
    }
    if newer > 0 {
        let _ = writeln!(
            s,
            "  not compared: {newer} (-d and a directory its user may not read: this rm is \
             older than coreutils 9.2, whose behaviour reclaim follows)"
        );
    }
    if !matched_cats.is_empty() {
        let _ = writeln!(s, "matched by category: {matched_cats:?}");
    }
    if !cats.is_empty() {
        let _ = writeln!(
            s,
            "differences by category (what GNU did; which outputs differ):"
        );
    }
    let mut examples = String::new();
    for (cat, t) in &cats {
        let aspects: Vec<String> = t.aspects.iter().map(|(a, n)| format!("{a} {n}")).collect();
        let _ = writeln!(s, "  {cat}: {} ({})", t.count, aspects.join(", "));
        if let Some((_, line, full)) = &t.example {
            let _ = writeln!(s, "      e.g. {line}");
            let _ = writeln!(examples, "##### smallest example of \"{cat}\"\n{full}");
        }
    }
    eprintln!("{examples}");
    (ran, matched, s)
}

#[test]
fn generated_scenarios_report() {
    let test = util::test_name!();
    util::or_skip!(need_gnu_rm());
    let mut world = World::new(scratch!());
    let scenarios = sample(world.caps, env_u32("GNU_RM_REPORT_CASES", 500));
    let (ran, matched, summary) = report(&mut world, &scenarios);
    if ran == matched {
        eprintln!("{summary}");
    }
    assert_eq!(ran, matched, "{test}:\n{summary}");
}

/// The harness checked against itself: GNU on both sides must always agree. A difference here
/// is the harness's (nondeterminism in building trees, prompting, paths), not reclaim's.
#[test]
fn harness_gnu_against_itself_always_matches() {
    let test = util::test_name!();
    util::or_skip!(need_gnu_rm());
    let mut world = World::new(scratch!());
    world.program = Some(harness::gnu_rm());
    let mut scenarios = sample(world.caps, env_u32("GNU_RM_SELF_CASES", 300));
    // Make sure prompts on a terminal are among them.
    for sc in scenarios.iter_mut().take(10) {
        sc.stdin = Stdin::Pty(vec![b"y".to_vec(), b"n".to_vec(), b"yes".to_vec()]);
        sc.args.insert(0, b"-i".to_vec());
    }
    let (ran, matched, summary) = report(&mut world, &scenarios);
    eprintln!("{summary}");
    assert!(ran > 0, "{test}: nothing ran");
    assert_eq!(ran, matched, "{test}:\n{summary}");
}

// ---------------------------------------------------------------------------------------------
// Hand-written scenarios: one per finding of issue 13.

fn f(path: &str) -> Node {
    Node::file(path.as_bytes(), b"", 0o644)
}
fn fc(path: &str, contents: &str) -> Node {
    Node::file(path.as_bytes(), contents.as_bytes(), 0o644)
}
fn d(path: &str) -> Node {
    Node::dir(path.as_bytes(), 0o755)
}
fn dm(path: &str, mode: u32) -> Node {
    Node::dir(path.as_bytes(), mode)
}
fn l(path: &str, target: &str) -> Node {
    Node::link(path.as_bytes(), target.as_bytes())
}
fn sc(nodes: Vec<Node>, args: &[&str]) -> Scenario {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    Scenario::new(nodes, &args)
}

/// What GNU must do in a hand-written scenario.
fn gnu_does(
    code: i32,
    stdout: &str,
    stderr: &str,
) -> impl FnOnce(&Outcome, &SideSnapshot) -> Result<(), String> {
    let (stdout, stderr) = (stdout.to_string(), stderr.to_string());
    move |o, _| {
        let got = (
            o.code,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        if (got.0, got.1.as_ref(), got.2.as_ref()) == (code, stdout.as_str(), stderr.as_str()) {
            Ok(())
        } else {
            Err(format!(
                "expected exit {code}, stdout {stdout:?}, stderr {stderr:?}"
            ))
        }
    }
}

/// GNU exits with `code` and leaves exactly these paths (relative to the side: `w/...`).
fn gnu_leaves(
    code: i32,
    left: &[&str],
) -> impl FnOnce(&Outcome, &SideSnapshot) -> Result<(), String> {
    let left: Vec<String> = left.iter().map(|s| s.to_string()).collect();
    gnu_leaves_owned(code, left)
}

fn gnu_leaves_owned(
    code: i32,
    left: Vec<String>,
) -> impl FnOnce(&Outcome, &SideSnapshot) -> Result<(), String> {
    let mut want: Vec<Vec<u8>> = vec![b"".to_vec(), b"bin".to_vec(), b"bin/rm".to_vec()];
    want.extend(left.iter().map(|p| p.as_bytes().to_vec()));
    want.sort();
    move |o, tree| {
        let got: Vec<Vec<u8>> = tree.keys().cloned().collect();
        if o.code == code && got == want {
            Ok(())
        } else {
            Err(format!("expected exit {code} and {:?} left", left))
        }
    }
}

fn ok_any(_: &Outcome, _: &SideSnapshot) -> Result<(), String> {
    Ok(())
}

/// Runs several scenarios of one test and reports every difference at once.
fn check_all(world: &mut World, cases: Vec<(Scenario, Expect)>) {
    let test = world.scratch.test().to_string();
    let total = cases.len();
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(scenario, expect)| verdict(world, &scenario, expect).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{test}: {} of {total} scenarios failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

type Expect = Box<dyn FnOnce(&Outcome, &SideSnapshot) -> Result<(), String>>;

fn bx(e: impl FnOnce(&Outcome, &SideSnapshot) -> Result<(), String> + 'static) -> Expect {
    Box::new(e)
}

#[test]
fn gnu_force_ignores_enotdir() {
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let t = || vec![fc("f", "x\n")];
    check_all(
        &mut w,
        vec![
            (sc(t(), &["-f", "f/x"]), bx(gnu_does(0, "", ""))),
            (sc(t(), &["-f", "f/x/y"]), bx(gnu_does(0, "", ""))),
            (sc(t(), &["-rf", "f/x", "f/"]), bx(gnu_does(0, "", ""))),
            (
                sc(t(), &["f/x"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: cannot remove 'f/x': Not a directory\n",
                )),
            ),
        ],
    );
}

#[test]
fn gnu_rf_removes_unreadable_empty_directories() {
    util::or_skip!(need_gnu_rm());
    util::require_root!();
    let mut w = World::new(scratch!());
    let tree = || {
        vec![
            dm("d", 0o000),
            dm("d2", 0o100),
            d("t"),
            f("t/f"),
            dm("t/u", 0o000),
            dm("t/v", 0o100),
        ]
    };
    check_all(
        &mut w,
        vec![
            (
                sc(tree(), &["-rf", "d", "d2", "t"]).by_other(),
                bx(gnu_leaves(0, &["w"])),
            ),
            (sc(tree(), &["-r", "d"]).by_other(), bx(gnu_does(0, "", ""))),
            (
                sc(tree(), &["-rv", "t"]).by_other(),
                bx(gnu_leaves(0, &["w", "w/d", "w/d2"])),
            ),
        ],
    );
}

#[test]
fn gnu_search_only_parent_directories() {
    util::or_skip!(need_gnu_rm());
    util::require_root!();
    let mut w = World::new(scratch!());
    check_all(
        &mut w,
        vec![
            // chmod 0300 p; rm p/f
            (
                sc(vec![dm("p", 0o300), f("p/f")], &["p/f"]).by_other(),
                bx(gnu_leaves(0, &["w", "w/p"])),
            ),
            (
                sc(vec![dm("p", 0o100), d("p/q"), f("p/q/f")], &["-r", "p/q"]).by_other(),
                bx(ok_any),
            ),
            // A tree whose top directory is only searchable.
            (
                sc(
                    vec![dm("t", 0o300), f("t/f"), d("t/s"), f("t/s/g")],
                    &["-r", "t"],
                )
                .by_other(),
                bx(ok_any),
            ),
            (
                sc(vec![dm("t", 0o311), d("t/s"), f("t/s/g")], &["-rf", "t/s"]).by_other(),
                bx(gnu_leaves(0, &["w", "w/t"])),
            ),
        ],
    );
}

#[test]
fn gnu_symlink_to_root_is_removed_as_a_link() {
    util::or_skip!(need_gnu_rm());
    util::require_root!();
    let mut w = World::new(scratch!());
    check_all(
        &mut w,
        vec![
            (sc(vec![l("l", "/")], &["l"]), bx(gnu_does(0, "", ""))),
            (sc(vec![l("l", "/")], &["-r", "l"]), bx(gnu_does(0, "", ""))),
            (
                sc(vec![l("l", "/")], &["-rfv", "l"]),
                bx(gnu_does(0, "removed 'l'\n", "")),
            ),
            (
                sc(vec![l("l", "//")], &["-d", "l"]),
                bx(gnu_does(0, "", "")),
            ),
            (
                sc(vec![d("t"), l("t/root", "/"), f("t/f")], &["-r", "t"]),
                bx(gnu_leaves(0, &["w"])),
            ),
        ],
    );
}

#[test]
fn gnu_verbose_order_and_paths() {
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let tree = || {
        vec![
            d("a"),
            f("a/x"),
            d("a/b"),
            f("a/b/y"),
            d("c"),
            f("c/z"),
            f("e"),
            l("a/l", "../e"),
        ]
    };
    check_all(
        &mut w,
        vec![
            (
                sc(vec![d("a"), f("a/x")], &["-rv", "a///"]),
                bx(gnu_does(0, "removed 'a/x'\nremoved directory 'a/'\n", "")),
            ),
            (
                sc(tree(), &["-rv", "a//", "c/", "e"]),
                bx(gnu_leaves(0, &["w"])),
            ),
            (
                sc(tree(), &["-rv", "e", "c", "a"]),
                bx(gnu_leaves(0, &["w"])),
            ),
            (sc(tree(), &["-rv", "./c", "a/b/"]), bx(ok_any)),
            (
                sc(tree(), &["-v", "e", "missing", "a", "c/z"]),
                bx(gnu_leaves(
                    1,
                    &["w", "w/a", "w/a/b", "w/a/b/y", "w/a/l", "w/a/x", "w/c"],
                )),
            ),
            (sc(tree(), &["-dv", "c/z", "c", "e"]), bx(ok_any)),
            (
                sc(tree(), &["-rv", &format!("{W}/a"), "c"]),
                bx(gnu_leaves(0, &["w", "w/e"])),
            ),
        ],
    );
}

#[test]
fn gnu_errors_once_in_order_without_recap() {
    let test = util::test_name!();
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let tree = || vec![d("dir"), f("dir/x"), f("a"), f("b")];
    check_all(&mut w,
        vec![
            (
                sc(tree(), &["m1", "a", "dir", "m2", "b", "a"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: cannot remove 'm1': No such file or directory\n\
                     rm: cannot remove 'dir': Is a directory\n\
                     rm: cannot remove 'm2': No such file or directory\n\
                     rm: cannot remove 'a': No such file or directory\n",
                )),
            ),
            (sc(tree(), &["-d", "dir", "m1"]), bx(gnu_does(
                1,
                "",
                "rm: cannot remove 'dir': Directory not empty\nrm: cannot remove 'm1': No such file or directory\n",
            ))),
        ],
    );
    if util::is_root() {
        // Errors inside trees, as another uid: an unwritable subdirectory.
        check_all(
            &mut w,
            vec![(
                sc(
                    vec![
                        d("t"),
                        dm("t/ro", 0o555),
                        f("t/ro/f"),
                        f("t/g"),
                        d("u"),
                        f("u/h"),
                    ],
                    &["-r", "t", "u", "missing"],
                )
                .by_other(),
                bx(gnu_does(
                    1,
                    "",
                    "rm: cannot remove 't/ro/f': Permission denied\n\
                     rm: cannot remove 'missing': No such file or directory\n",
                )),
            )],
        );
    } else {
        util::skipped(test, "in part: errors as another uid need root");
    }
}

#[test]
fn gnu_repeated_argument_is_missing_the_second_time() {
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let t = || vec![d("t"), f("t/x")];
    check_all(
        &mut w,
        vec![
            (
                sc(t(), &["-r", "t", "t"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: cannot remove 't': No such file or directory\n",
                )),
            ),
            (sc(t(), &["-rf", "t", "t"]), bx(gnu_does(0, "", ""))),
            (sc(t(), &["-rv", "t", "t/"]), bx(ok_any)),
            (
                sc(vec![f("a")], &["a", "./a"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: cannot remove './a': No such file or directory\n",
                )),
            ),
        ],
    );
}

#[test]
fn gnu_every_listed_option_is_accepted() {
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let mut cases = Vec::new();
    for opt in [
        "-f",
        "-i",
        "-I",
        "-r",
        "-R",
        "-d",
        "-v",
        "--recursive",
        "--dir",
        "--verbose",
        "--force",
        "--interactive",
        "--interactive=never",
        "--interactive=no",
        "--interactive=none",
        "--interactive=once",
        "--interactive=always",
        "--interactive=yes",
        "--one-file-system",
        "--preserve-root",
        "--preserve-root=all",
        "--no-preserve-root",
        "--rec",
        "--verb",
        "--no-preserve-root",
        "-rf",
        "-fv",
        "-Rdv",
        "--help",
        "--version",
    ] {
        cases.push((sc(vec![fc("f", "x"), d("d")], &[opt, "f", "d"]), bx(ok_any)));
        cases.push((
            sc(vec![fc("f", "x"), d("d")], &["f", opt, "--", "d"]),
            bx(ok_any),
        ));
    }
    // Prompting options on a terminal, answered.
    for opt in [
        "-i",
        "-I",
        "--interactive",
        "--interactive=once",
        "--interactive=always",
    ] {
        cases.push((
            sc(
                vec![f("f"), f("g"), f("h"), f("k"), d("d"), f("d/x")],
                &[opt, "-r", "f", "g", "h", "k", "d"],
            )
            .stdin(Stdin::Pty(vec![
                b"y".to_vec(),
                b"n".to_vec(),
                b"y".to_vec(),
            ])),
            bx(ok_any),
        ));
    }
    check_all(&mut w, cases);
}

#[test]
fn gnu_usage_errors_and_the_dash_hint() {
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let t = || vec![f("-foo"), f("a")];
    check_all(&mut w,
        vec![
            (
                sc(t(), &["-foo"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: invalid option -- 'o'\n\
                     Try 'rm ./-foo' to remove the file '-foo'.\n\
                     Try 'rm --help' for more information.\n",
                )),
            ),
            (sc(t(), &["--", "-foo"]), bx(gnu_leaves(0, &["w", "w/a"]))),
            (sc(t(), &["./-foo", "-v"]), bx(gnu_does(0, "removed './-foo'\n", ""))),
            (
                sc(t(), &["-x", "a"]),
                bx(gnu_does(1, "", "rm: invalid option -- 'x'\nTry 'rm --help' for more information.\n")),
            ),
            (
                sc(t(), &["--bogus", "a", "-foo"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: unrecognized option '--bogus'\n\
                     Try 'rm ./-foo' to remove the file '-foo'.\n\
                     Try 'rm --help' for more information.\n",
                )),
            ),
            (
                sc(t(), &[]),
                bx(gnu_does(1, "", "rm: missing operand\nTry 'rm --help' for more information.\n")),
            ),
            (sc(t(), &["-f"]), bx(gnu_does(0, "", ""))),
            (
                sc(t(), &["--no-preserve", "a"]),
                bx(gnu_does(1, "", "rm: you may not abbreviate the --no-preserve-root option\n")),
            ),
            (
                sc(t(), &["--interactive=bogus", "a"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: invalid argument 'bogus' for '--interactive'\n\
                     Valid arguments are:\n  - 'never', 'no', 'none'\n  - 'once'\n  - 'always', 'yes'\n\
                     Try 'rm --help' for more information.\n",
                )),
            ),
            (
                sc(t(), &["--preserve-root=al", "a"]),
                bx(gnu_does(1, "", "rm: unrecognized --preserve-root argument: 'al'\n")),
            ),
            (
                sc(t(), &["--verbose=1", "a"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: option '--verbose' doesn't allow an argument\nTry 'rm --help' for more information.\n",
                )),
            ),
            (sc(t(), &["-", "a"]), bx(gnu_does(1, "", "rm: cannot remove '-': No such file or directory\n"))),
        ],
    );
}

#[test]
fn gnu_refuses_root_with_its_messages() {
    util::or_skip!(need_gnu_rm());
    util::require_root!();
    let mut w = World::new(scratch!());
    let danger = "rm: it is dangerous to operate recursively on '/'\n\
                  rm: use --no-preserve-root to override this failsafe\n";
    check_all(
        &mut w,
        vec![
            (sc(vec![f("a")], &["-r", "/"]), bx(gnu_does(1, "", danger))),
            (
                sc(vec![f("a")], &["-rf", "/", "a"]),
                bx(gnu_leaves(1, &["w"])),
            ),
            (
                sc(vec![f("a")], &["-r", "--preserve-root=all", "//"]),
                bx(ok_any),
            ),
            (
                sc(vec![f("a")], &["-R", "--preserve-root", "///"]),
                bx(ok_any),
            ),
            (sc(vec![l("l", "/")], &["-r", "l/"]), bx(ok_any)),
            (sc(vec![l("l", "/")], &["-rf", "l/."]), bx(ok_any)),
            (
                sc(vec![f("a")], &["/"]),
                bx(gnu_does(1, "", "rm: cannot remove '/': Is a directory\n")),
            ),
            (sc(vec![f("a")], &["-d", "/"]), bx(ok_any)),
        ],
    );
}

#[test]
fn gnu_refuses_dot_and_dotdot() {
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let t = || vec![d("a"), f("a/x")];
    let msg = |p: &str| format!("rm: refusing to remove '.' or '..' directory: skipping '{p}'\n");
    check_all(
        &mut w,
        vec![
            (
                sc(t(), &["-r", ".", "..", "a/.", "a/.."]),
                bx(gnu_does(
                    1,
                    "",
                    &(msg(".") + &msg("..") + &msg("a/.") + &msg("a/..")),
                )),
            ),
            (
                sc(t(), &["-rf", "./", "a/./", "a//.", "a/x/.."]),
                bx(ok_any),
            ),
            (sc(t(), &["-d", ".", "a/.."]), bx(ok_any)),
            (sc(t(), &["-rv", "a/..", "a"]), bx(ok_any)),
            (sc(t(), &[".", "a/x"]), bx(ok_any)),
        ],
    );
}

#[test]
fn gnu_one_file_system_and_mount_points() {
    util::or_skip!(need_gnu_rm());
    util::require_root!();
    let mut w = World::new(scratch!());
    let t = || {
        vec![
            d("t"),
            f("t/a"),
            Node::mount(b"t/m", 0o755),
            f("t/m/inner"),
            d("t/m/sub"),
            f("t/z"),
        ]
    };
    check_all(
        &mut w,
        vec![
            (
                sc(t(), &["-r", "--one-file-system", "t"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: skipping 't/m', since it's on a different device\n",
                )),
            ),
            (
                sc(t(), &["-rv", "t"]),
                bx(gnu_leaves(1, &["w", "w/t", "w/t/m"])),
            ),
            (
                sc(t(), &["-r", "--preserve-root=all", "t/m"]),
                bx(gnu_does(
                    1,
                    "",
                    "rm: skipping 't/m', since it's on a different device\n\
                     rm: and --preserve-root=all is in effect\n",
                )),
            ),
            (
                sc(
                    t(),
                    &["-rf", "--one-file-system", "--preserve-root=all", "t"],
                ),
                bx(ok_any),
            ),
        ],
    );
}

#[test]
fn gnu_prompts_on_a_terminal() {
    let test = util::test_name!();
    util::or_skip!(need_gnu_rm());
    let y = || b"y".to_vec();
    let n = || b"n".to_vec();
    let mut w = World::new(scratch!());
    let t = || {
        vec![
            d("d"),
            f("d/x"),
            fc("d/y", "data"),
            f("a"),
            f("b"),
            f("c"),
            f("e"),
        ]
    };
    let mut cases: Vec<(Scenario, Expect)> = vec![
        (
            sc(t(), &["-i", "a", "b"]).stdin(Stdin::Pty(vec![y(), n()])),
            bx(gnu_does(
                0,
                "",
                "rm: remove regular empty file 'a'? y\nrm: remove regular empty file 'b'? n\n",
            )),
        ),
        (
            sc(t(), &["-I", "a", "b", "c", "e"]).stdin(Stdin::Pty(vec![n()])),
            bx(gnu_does(0, "", "rm: remove 4 arguments? n\n")),
        ),
        (
            sc(t(), &["-I", "a", "b", "c"]).stdin(Stdin::Pty(vec![n()])),
            bx(gnu_does(0, "", "")),
        ),
        (
            sc(t(), &["-rI", "d"]).stdin(Stdin::Pty(vec![b"yes".to_vec()])),
            bx(gnu_does(0, "", "rm: remove 1 argument recursively? yes\n")),
        ),
        (
            sc(t(), &["-ri", "d"]).stdin(Stdin::Pty(vec![y(), y(), n(), y()])),
            bx(ok_any),
        ),
        (
            sc(t(), &["-riv", "d", "a"]).stdin(Stdin::Pty(vec![y(), n(), y(), y()])),
            bx(ok_any),
        ),
        (
            sc(t(), &["--interactive=once", "-r", "d", "a"]).stdin(Stdin::Pty(vec![y()])),
            bx(ok_any),
        ),
        (sc(t(), &["-i", "a"]).stdin(Stdin::Pty(vec![])), bx(ok_any)),
        (
            sc(t(), &["-if", "a"]).stdin(Stdin::Pty(vec![n()])),
            bx(gnu_leaves(
                0,
                &["w", "w/b", "w/c", "w/d", "w/d/x", "w/d/y", "w/e"],
            )),
        ),
        (
            sc(t(), &["-fi", "a"]).stdin(Stdin::Pty(vec![n()])),
            bx(ok_any),
        ),
        (
            sc(t(), &["-i", "a", "b"]).stdin(Stdin::Terminal(vec![y(), n()])),
            bx(ok_any),
        ),
        (
            sc(t(), &["-i", "a", "b"]),
            bx(gnu_does(
                0,
                "",
                "rm: remove regular empty file 'a'? rm: remove regular empty file 'b'? ",
            )),
        ),
    ];
    if util::is_root() {
        // Write-protected files prompt only when stdin is a terminal (and not as root).
        let wp = || {
            vec![
                Node::file(b"p", b"", 0o444),
                Node::file(b"q", b"x", 0o444),
                d("d"),
                Node::file(b"d/r", b"", 0o444),
            ]
        };
        cases.push((
            sc(wp(), &["p", "q"])
                .by_other()
                .stdin(Stdin::Pty(vec![y(), n()])),
            bx(gnu_does(
                0,
                "",
                "rm: remove write-protected regular empty file 'p'? y\n\
                 rm: remove write-protected regular file 'q'? n\n",
            )),
        ));
        cases.push((
            sc(wp(), &["p", "q"]).by_other(),
            bx(gnu_leaves(0, &["w", "w/d", "w/d/r"])),
        ));
        cases.push((
            sc(wp(), &["-r", "d"])
                .by_other()
                .stdin(Stdin::Pty(vec![n()])),
            bx(ok_any),
        ));
        cases.push((
            sc(wp(), &["-f", "p", "q"])
                .by_other()
                .stdin(Stdin::Pty(vec![n()])),
            bx(gnu_does(0, "", "")),
        ));
        cases.push((
            sc(wp(), &["p"]).stdin(Stdin::Pty(vec![n()])),
            bx(gnu_does(0, "", "")),
        ));
    } else {
        util::skipped(
            test,
            "in part: write-protected files of another uid need root",
        );
    }
    check_all(&mut w, cases);
}

#[test]
fn gnu_immutable_and_append_only_files() {
    util::or_skip!(need_gnu_rm());
    util::require_root!();
    let mut w = World::new(scratch!());
    if !w.caps.ext4 {
        util::skip!("no mkfs.ext4");
    }
    let t = || {
        vec![
            d("d"),
            Node::file(b"d/i", b"i", 0o644).with_attr(Attr::Immutable),
            Node::file(b"d/a", b"a", 0o644).with_attr(Attr::AppendOnly),
            f("d/ok"),
            Node::file(b"i", b"", 0o644).with_attr(Attr::Immutable),
            Node::dir(b"idir", 0o755),
            f("idir/x"),
            Node::dir(b"frozen", 0o755).with_attr(Attr::Immutable),
        ]
    };
    check_all(
        &mut w,
        vec![
            (
                sc(t(), &["-rf", "d", "i", "frozen"]).on(Fs::Ext4),
                bx(ok_any),
            ),
            (sc(t(), &["-rv", "d"]).on(Fs::Ext4), bx(ok_any)),
            (
                sc(t(), &["i"])
                    .on(Fs::Ext4)
                    .stdin(Stdin::Pty(vec![b"y".to_vec()])),
                bx(ok_any),
            ),
            (sc(t(), &["-rf", "d"]).on(Fs::Ext4).by_other(), bx(ok_any)),
        ],
    );
}

#[test]
fn gnu_argv0_is_the_program_name_in_messages() {
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let mut s = sc(vec![], &["missing"]);
    s.argv0_path = true;
    check(
        &mut w,
        &s,
        gnu_does(
            1,
            "",
            "<S>/bin/rm: cannot remove 'missing': No such file or directory\n",
        ),
    );
}

#[test]
fn gnu_odd_names() {
    util::or_skip!(need_gnu_rm());
    let mut w = World::new(scratch!());
    let t = || {
        vec![
            d("with space"),
            f("with space/it's"),
            Node::file(b"new\nline", b"", 0o644),
            Node::file(b"\xff\xferaw", b"", 0o644),
            d("q\"uote"),
        ]
    };
    let mut all = sc(t(), &["-rv", "with space", "q\"uote"]);
    all.args.push(b"new\nline".to_vec());
    all.args.push(b"\xff\xferaw".to_vec());
    let mut missing = sc(t(), &["with space/nope"]);
    missing.args.push(b"new\nline/x".to_vec());
    missing.args.push(b"\xff\xfe/x".to_vec());
    check_all(
        &mut w,
        vec![(all, bx(gnu_leaves(0, &["w"]))), (missing, bx(ok_any))],
    );
}

// ---------------------------------------------------------------------------------------------
// The harness refuses, before running anything, what would leave its scratch directory.

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_an_operand_outside_its_side() {
    let mut w = World::new(scratch!());
    check(&mut w, &sc(vec![], &["-r", "../.."]), ok_any);
}

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_a_symlink_leading_outside() {
    let mut w = World::new(scratch!());
    check(&mut w, &sc(vec![l("l", "/usr")], &["-r", "l/"]), ok_any);
}

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_dotdot_through_a_symlink() {
    let mut w = World::new(scratch!());
    check(
        &mut w,
        &sc(vec![l("l", "/usr")], &["-r", "l/../tmp"]),
        ok_any,
    );
}

#[test]
#[should_panic(expected = "refusing")]
fn harness_refuses_root_without_the_failsafe() {
    let mut w = World::new(scratch!());
    check(
        &mut w,
        &sc(vec![], &["-rf", "--no-preserve-root", "/"]),
        ok_any,
    );
}

// ---------------------------------------------------------------------------------------------
// `reclaim rm` (the subcommand) against GNU rm, where its documented differences allow.

/// Whether `reclaim rm` is documented to differ from GNU rm in this scenario
/// (docs/as-rm.md): it asks only when told to (`-i`/`-I`, not about write-protected files on a
/// terminal), does not enter mount points unless `--cross-mounts`, refuses a symlink named
/// with a trailing slash (GNU empties what it points to), and usage errors exit 2.
fn reclaim_rm_documented_difference(sc: &Scenario, gnu: &Outcome) -> Option<&'static str> {
    let has = |needle: &[u8]| {
        gnu.stderr.windows(needle.len()).any(|w| w == needle)
            || gnu.terminal.windows(needle.len()).any(|w| w == needle)
    };
    if !matches!(sc.stdin, Stdin::Null) && has(b"? ") {
        return Some("prompts");
    }
    if has(b"Try '") || gnu.stdout.starts_with(b"Usage: ") || gnu.stdout.starts_with(b"rm (") {
        return Some("usage, --help, --version");
    }
    if sc.nodes.iter().any(|n| matches!(n.kind, Kind::Mount)) {
        return Some("mount points");
    }
    if sc.args.iter().any(|a| a.ends_with(b"/"))
        && sc.nodes.iter().any(|n| matches!(n.kind, Kind::Link(_)))
    {
        return Some("trailing slashes with symlinks");
    }
    None
}

#[test]
fn reclaim_rm_outcomes_match_gnu_rm() {
    let test = util::test_name!();
    util::or_skip!(need_gnu_rm());
    let mut world = World::new(scratch!());
    // `bin/rm` runs `reclaim rm "$@"`: a script any uid can run.
    let dir = tempfile::Builder::new()
        .prefix("reclaim-rm-")
        .tempdir()
        .unwrap();
    let script = dir.path().join("reclaim-rm");
    let bin = std::fs::canonicalize(crate::util::reclaim_bin()).unwrap();
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec '{}' rm \"$@\"\n", bin.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    world.program = Some(script);
    let caps = world.caps;
    let n = env_u32("GNU_RM_SUBCOMMAND_CASES", 300);
    let (mut compared, mut excused) = (0, BTreeMap::<&str, usize>::new());
    let mut differ = Vec::new();
    for sc in sample(caps, n) {
        let Ok(c) = world.run(&sc) else { continue };
        if let Some(why) = reclaim_rm_documented_difference(&sc, &c.gnu) {
            *excused.entry(why).or_default() += 1;
            continue;
        }
        // A usage error on both sides: reclaim's exit status for those is 2, GNU's 1.
        let gnu_said = first_line(&c.gnu);
        let usage = [
            "unrecognized",
            "invalid",
            "ambiguous",
            "abbreviate",
            "doesn't allow",
            "missing operand",
        ];
        if c.reclaim.code == 2
            && c.gnu.code == 1
            && c.gnu_tree == c.reclaim_tree
            && usage.iter().any(|u| gnu_said.contains(u))
        {
            *excused.entry("usage error: exit 2").or_default() += 1;
            continue;
        }
        compared += 1;
        if c.gnu.code != c.reclaim.code || c.gnu_tree != c.reclaim_tree {
            differ.push(format!(
                "{}\n  GNU: {} | reclaim rm: {}",
                command_line(&sc),
                first_line(&c.gnu),
                first_line(&c.reclaim)
            ));
        }
    }
    eprintln!(
        "{test}: {compared} scenarios compared (exit status and tree), {} differ; not compared \
         (documented differences): {excused:?}",
        differ.len()
    );
    assert!(
        differ.is_empty(),
        "{test}: {} of {compared} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}
