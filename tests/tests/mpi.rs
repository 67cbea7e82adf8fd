//! Scale-out under `mpirun` (docs/ARCHITECTURE.md): the ranks of one job remove a tree together and
//! keep every single-machine promise: the whole tree goes and nothing outside it, the counts
//! are exact, mount points are skipped, no symlink is followed, every rank's failures reach
//! rank 0's report, ranks that see different trees remove nothing, and a job with a killed
//! rank ends and can be run again. The ranks run on this machine (`--oversubscribe`), also as
//! two "hosts" (network namespaces joined by a veth pair), sharing its file systems as the
//! clients of a shared file system would; the exchange itself is tested with ranks as threads
//! in src/engine/spread/tests.rs.
//!
//! Built with `--features mpi` only (the binary must be built with it). A test skips itself
//! (`SKIPPED <test>: no mpirun`) when Open MPI's `mpirun` is not on the PATH; most need root
//! (tmpfs and ext4 volumes, `chattr +i`, namespaces) and skip themselves otherwise. The jobs run one at
//! a time (a lock): several jobs oversubscribing two cores would be slow. A job in which a
//! rank exits non-zero costs about 2 s (mpirun's abort sequence).

#![cfg(feature = "mpi")]

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

use crate::util::{self, or_skip, require_root, scratch, Rng, Scratch, Volume};

/// One job at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Options of every job: root allowed, more ranks than cores, shared memory between the ranks
/// of one host without cross-memory attach (containers forbid it), TCP between hosts.
const OPTIONS: &[&str] = &[
    "--allow-run-as-root",
    "--oversubscribe",
    "--bind-to",
    "none",
    "--mca",
    "pml",
    "ob1",
    "--mca",
    "btl",
    "self,vader,tcp",
    "--mca",
    "btl_vader_single_copy_mechanism",
    "none",
    "-x",
    "RECLAIM_CONFIG",
    "-x",
    "RECLAIM_UNDER",
];

/// `mpirun`, and this test's turn to use it.
struct Mpirun {
    bin: PathBuf,
    _turn: MutexGuard<'static, ()>,
}

/// `mpirun` from the PATH, when this test's turn comes; Err (for a skip) without one.
fn mpirun() -> Result<Mpirun, String> {
    let bin = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("mpirun"))
            .find(|p| p.is_file())
    });
    let bin = bin.ok_or("no mpirun")?;
    Ok(Mpirun {
        bin,
        _turn: SERIAL.lock().unwrap_or_else(|e| e.into_inner()),
    })
}

impl Mpirun {
    /// `mpirun OPTIONS -np N`: the program of a job and its arguments follow.
    fn argv(&self, np: usize) -> Vec<OsString> {
        let mut argv = vec![self.bin.clone().into_os_string()];
        argv.extend(OPTIONS.iter().map(OsString::from));
        argv.extend(["-np".into(), np.to_string().into()]);
        argv
    }

    /// `mpirun -np N PROGRAM...` in the scratch root (`program` with its arguments, not
    /// checked), hermetic as `Scratch::cmd`.
    fn job_std<S: AsRef<OsStr>>(&self, s: &Scratch, np: usize, program: &[S]) -> StdCommand {
        let argv = self.argv(np);
        let mut c = StdCommand::new(&argv[0]);
        c.args(&argv[1..]).args(program).current_dir(s.root());
        job_env(&mut c, s);
        c
    }

    /// `job_std` with a time limit.
    fn job<S: AsRef<OsStr>>(&self, s: &Scratch, np: usize, program: &[S]) -> Command {
        let mut c = Command::from_std(self.job_std(s, np, program));
        c.timeout(Duration::from_secs(120));
        c
    }

    /// Every rank runs `reclaim rm ARGS` in the scratch root (paths checked).
    fn rm(&self, s: &Scratch, np: usize, args: &[&str]) -> Command {
        self.job(s, np, &rm_argv(s, args))
    }

    /// Every rank runs the shell `script` with `"$@"` set to `reclaim rm ARGS` (paths of
    /// `args` checked; paths the script adds must stay in the scratch root): for a path that
    /// depends on the rank, or a pid file.
    fn rm_via(&self, s: &Scratch, np: usize, script: &str, args: &[&str]) -> Command {
        self.job(s, np, &via_argv(s, script, args))
    }
}

/// The environment of a job: root allowed (also where the options are not read), and
/// `reclaim` as hermetic as in `Scratch::cmd` (`-x` passes it to every rank).
fn job_env(c: &mut StdCommand, s: &Scratch) {
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root());
}

/// `reclaim rm ARGS`, after checking that every path lies in the scratch root.
fn rm_argv(s: &Scratch, args: &[&str]) -> Vec<OsString> {
    let mut all: Vec<OsString> = vec!["rm".into()];
    all.extend(args.iter().map(OsString::from));
    s.check_args(s.root(), &all);
    let mut argv = vec![util::reclaim_bin()];
    argv.extend(all);
    argv
}

/// `sh -c SCRIPT sh reclaim rm ARGS` (paths of `args` checked).
fn via_argv(s: &Scratch, script: &str, args: &[&str]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec!["sh".into(), "-c".into(), script.into(), "sh".into()];
    argv.extend(rm_argv(s, args));
    argv
}

fn json(out: &Output) -> Value {
    util::json_object(&out.stdout)
}

/// What the report says each rank did: (files, dirs, errors) by rank, after checking the
/// array's shape and that the ranks add up to the totals.
fn ranks(v: &Value, np: usize) -> Vec<(u64, u64, u64)> {
    let a = v["ranks"]
        .as_array()
        .unwrap_or_else(|| panic!("no ranks array: {v}"));
    assert_eq!(a.len(), np, "{v}");
    let per: Vec<(u64, u64, u64)> = a
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r["rank"], i, "{v}");
            assert!(r["host"].as_str().is_some_and(|h| !h.is_empty()), "{v}");
            let n = |k: &str| {
                r[k].as_u64()
                    .unwrap_or_else(|| panic!("rank {i}: {k}: {v}"))
            };
            (n("files"), n("dirs"), n("errors"))
        })
        .collect();
    assert_eq!(per.iter().map(|r| r.0).sum::<u64>(), v["files"], "{v}");
    assert_eq!(per.iter().map(|r| r.1).sum::<u64>(), v["dirs"], "{v}");
    per
}

/// Runs `reclaim rm args` as `np` ranks, which must succeed having removed `files` files and
/// `dirs` directories (`what` names the case); its report.
fn removed_by(
    m: &Mpirun,
    s: &Scratch,
    np: usize,
    args: &[&str],
    (files, dirs): (u64, u64),
    what: &str,
) -> Value {
    let out = m.rm(s, np, args).output().unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(
        (v["files"].as_u64(), v["dirs"].as_u64()),
        (Some(files), Some(dirs)),
        "{what}: {v}"
    );
    v
}

/// Error paths of the report.
fn error_paths(v: &Value) -> BTreeSet<String> {
    v["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors array: {v}"))
        .iter()
        .map(|e| e["path"].as_str().expect("path").to_string())
        .collect()
}

/// (non-directories, directories) under `dir` as `find` counts them (names may hold newlines).
fn find_counts(dir: &Path) -> (u64, u64) {
    let count = |args: &[&str]| {
        let out = StdCommand::new("find")
            .arg(dir)
            .args(args)
            .arg("-print0")
            .output()
            .expect("run find");
        assert!(out.status.success(), "find: {}", util::stderr_of(&out));
        out.stdout.iter().filter(|&&b| b == 0).count() as u64
    };
    let dirs = count(&["-type", "d"]);
    (count(&[]) - dirs, dirs)
}

/// `dirs` directories (two levels: `d<i % 20>/e<i>`) of `files` files each, under `rel`.
fn grid(s: &Scratch, rel: &str, dirs: usize, files: usize) {
    for i in 0..dirs {
        let d = s.mkdir(format!("{rel}/d{}/e{i}", i % 20));
        for f in 0..files {
            fs::write(d.join(format!("f{f}")), b"x").unwrap();
        }
    }
}

/// Where a test builds its trees: a tmpfs mounted on `vol` in the scratch directory when root
/// and not `local` (files are made 15x faster there than on an ext4 disk, and the tests
/// should not depend on what CI's /tmp is), else the scratch directory itself.
struct Place {
    _mount: Option<Volume>,
    base: &'static str,
}

impl Place {
    fn new(s: &Scratch, local: bool) -> Place {
        if !local && util::is_root() {
            if let Ok(g) = Volume::tmpfs_with(s, "vol", "size=512m") {
                return Place {
                    _mount: Some(g),
                    base: "vol/",
                };
            }
        }
        Place {
            _mount: None,
            base: "",
        }
    }

    /// `rel` in this place (relative to the scratch root).
    fn at(&self, rel: &str) -> String {
        format!("{}{rel}", self.base)
    }
}

// ---------------------------------------------------------------------------------------------
// Random trees.

/// Names are bytes on the wire, not text.
const ODD_NAMES: &[&[u8]] = &[
    b"sp ace",
    b"new\nline",
    b"\xff\xfe-not-utf8",
    b"-dash",
    b".hidden",
    b"back\\slash",
    b"\xe2\x98\x83",
];

/// `outside` in `p`: what the trees link to (files, a directory of files, a file hard-linked
/// from inside a tree).
fn make_outside(s: &Scratch, p: &Place) {
    s.make_outside(&p.at("outside"));
    for i in 0..5 {
        s.file(
            p.at(&format!("outside/dir/f{i}")),
            format!("in a linked directory {i}\n"),
        );
    }
    s.file(
        p.at("outside/linked"),
        b"hard-linked from inside the tree\n",
    );
}

/// A random tree at `t` in `p`: nested directories (some empty) with files, odd names,
/// symlinks to files and directories outside it (absolute and relative), dangling symlinks,
/// fifos, a chain about 200 directories deep, a hard link to a file outside, and a directory
/// of about 3,000 files (several batches, some for other ranks) with subdirectories among
/// them.
fn random_tree(s: &Scratch, p: &Place, seed: u64) {
    let mut rng = Rng(seed);
    let outside_dir = s.path(p.at("outside/dir"));
    fill(s, &mut rng, &PathBuf::from(p.at("t")), 0, &outside_dir);
    let depth = 180 + rng.below(40);
    let mut chain = PathBuf::from(p.at("t/deep"));
    for i in 0..depth {
        chain.push("c");
        if i % 40 == 0 {
            s.file(chain.join("on-the-way"), format!("{i}\n"));
        }
    }
    s.file(chain.join("bottom"), b"bottom\n");
    s.symlink(chain.join("up"), &outside_dir);
    s.hardlink(p.at("t/hard"), p.at("outside/linked"));
    let flat = s.mkdir(p.at("t/flat"));
    for i in 0..2500 + rng.below(1000) {
        fs::write(flat.join(format!("{i:05}")), b"").unwrap();
    }
    for k in 0..3 {
        s.file(p.at(&format!("t/flat/sub{k}/f")), b"x");
    }
}

/// Directory `rel` (`depth` below `t`) and, at random, what is in it.
fn fill(s: &Scratch, rng: &mut Rng, rel: &Path, depth: usize, outside_dir: &Path) {
    s.mkdir(rel);
    for i in 0..rng.below(7) {
        let mut name = if rng.chance(20) {
            ODD_NAMES[rng.below(ODD_NAMES.len() as u64) as usize].to_vec()
        } else {
            b"f".to_vec()
        };
        name.extend_from_slice(i.to_string().as_bytes());
        let len = rng.below(3000) as usize;
        let contents: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        s.file(rel.join(OsStr::from_bytes(&name)), contents);
    }
    // Relative links climb out of `t` (depth + 1 levels up from `rel`).
    let up = "../".repeat(depth + 1);
    if rng.chance(30) {
        s.symlink(rel.join("to-dir"), outside_dir);
    }
    if rng.chance(30) {
        s.symlink(rel.join("to-file"), format!("{up}outside/file1"));
    }
    if rng.chance(20) {
        s.symlink(rel.join("rel-dir"), format!("{up}outside"));
    }
    if rng.chance(20) {
        s.symlink(rel.join("dangling"), "nowhere/at/all");
    }
    if rng.chance(10) {
        s.fifo(rel.join("fifo"));
    }
    if depth < 5 {
        for k in 0..rng.below(if depth == 0 { 9 } else { 4 }) {
            fill(s, rng, &rel.join(format!("d{k}")), depth + 1, outside_dir);
        }
    }
}

/// Seeds per rank count (fixed, so CI always runs the same trees); the first tree of each
/// count is made in the scratch directory's own file system, the others on a tmpfs (root).
const CASES: &[(usize, &[u64])] = &[(1, &[101, 102]), (2, &[201, 202]), (4, &[401, 402])];

#[test]
fn ranks_remove_random_trees_completely() {
    let m = or_skip!(mpirun());
    for &(np, seeds) in CASES {
        for (i, &seed) in seeds.iter().enumerate() {
            let s = scratch!();
            let p = Place::new(&s, i == 0);
            let case = format!("{np} ranks, seed {seed}, in {:?}", p.base);
            let t = p.at("t");
            make_outside(&s, &p);
            random_tree(&s, &p, seed);
            let outside = s.snapshot(p.at("outside"));
            let tree = s.snapshot(&t);
            let (files, dirs) = find_counts(&s.path(&t));

            let out = m
                .rm(&s, np, &["-r", "--dry-run", "--json", &t])
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{case}: {}",
                util::stderr_of(&out)
            );
            let v = json(&out);
            assert_eq!(
                (v["files"].as_u64(), v["dirs"].as_u64()),
                (Some(files), Some(dirs)),
                "{case}: the dry run against find: {v}"
            );
            if np > 1 {
                ranks(&v, np);
            }
            util::assert_same(
                &format!("{case}: {t} after the dry run"),
                &tree,
                &s.snapshot(&t),
            );

            let out = m.rm(&s, np, &["-r", "--json", &t]).output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{case}: {}",
                util::stderr_of(&out)
            );
            let v = json(&out);
            assert_eq!(
                (v["files"].as_u64(), v["dirs"].as_u64()),
                (Some(files), Some(dirs)),
                "{case}: {v}"
            );
            assert_eq!(v["errors"], serde_json::json!([]), "{case}");
            if np > 1 {
                ranks(&v, np);
            }
            assert!(!s.exists(&t), "{case}: {t} is still there");
            let after = s.snapshot(p.at("outside"));
            util::assert_same(&format!("{case}: outside"), &outside, &after);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sharing.

#[test]
fn work_is_shared_between_ranks() {
    let m = or_skip!(mpirun());
    // One worker per rank and 400 directories of 20 files: rank 0 alone would take a while,
    // and idle ranks ask for work from the start. Sharing is timing, so a few tries.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let s = scratch!();
        let p = Place::new(&s, false);
        let t = p.at("t");
        grid(&s, &t, 400, 20);
        let v = removed_by(
            &m,
            &s,
            3,
            &["-r", "--json", "--threads", "1", &t],
            (8000, 421),
            "a grid",
        );
        assert!(!s.exists(&t));
        let per = ranks(&v, 3);
        if per.iter().all(|r| r.0 + r.1 > 0) {
            return;
        }
        seen.push(per);
    }
    panic!("a rank did no work in every try: {seen:?}");
}

#[test]
fn ranks_share_one_large_directory_on_a_network_file_system() {
    let m = or_skip!(mpirun());
    require_root!();
    // One directory on the network emulator: rank 0 lists it and hands out batches of its
    // names; the other ranks unlink names they never listed, each batch looked up a chunk
    // ahead of its unlinks by several threads (`remove/ahead.rs`). Every name goes, once,
    // and nothing beside the directory; also on a server whose cookies are positions
    // ("index": a listing read while names go shifts). Sharing is timing, so a few tries.
    for listing in ["stable", "index"] {
        let mut seen = Vec::new();
        let mut shared = false;
        for _ in 0..3 {
            let s = scratch!();
            let _back = or_skip!(Volume::tmpfs_with(&s, "back", "size=64m"));
            // Long names: the listing takes several pieces whatever their measured size.
            let long = "x".repeat(100);
            for i in 0..3000 {
                s.file(format!("back/t/big/f{i:05}{long}"), "");
            }
            s.file("back/t/beside", "stays\n");
            s.make_outside("back/outside");
            let outside = s.snapshot("back/outside");
            let net = or_skip!(crate::netfs::Net::start_with(
                &s,
                "0.3ms",
                &["--subtype", "nfs", "--listing", listing]
            ));
            let v = removed_by(
                &m,
                &s,
                3,
                &["-r", "--json", "vol/t/big"],
                (3000, 1),
                listing,
            );
            assert_eq!(v["errors"], serde_json::json!([]), "{listing}: {v}");
            drop(net);
            assert!(
                !s.exists("back/t/big"),
                "{listing}: the directory is still there"
            );
            assert_eq!(
                fs::read_to_string(s.path("back/t/beside")).unwrap(),
                "stays\n"
            );
            util::assert_same("outside", &outside, &s.snapshot("back/outside"));
            let per = ranks(&v, 3);
            seen.push(per.clone());
            if per.iter().all(|r| r.0 > 0) {
                shared = true;
                break;
            }
        }
        assert!(
            shared,
            "{listing}: a rank removed none of the directory's names in every try: {seen:?}"
        );
    }
}

#[test]
fn ranks_share_a_selection_and_its_totals() {
    let m = or_skip!(mpirun());
    let s = scratch!();
    let p = Place::new(&s, false);
    let (t, u) = (p.at("t"), p.at("u"));
    grid(&s, &t, 120, 20);
    grid(&s, &u, 120, 20);
    // One process's plan, then three ranks': the same totals, per owner and directory too.
    let one = s
        .rm(&["-r", "--name", "f1*", "--dry-run", "--json", &u])
        .output()
        .unwrap();
    util::assert_success(&one);
    let one = json(&one);
    let out = m
        .rm(
            &s,
            3,
            &["-r", "--name", "f1*", "--json", "--threads", "1", &t],
        )
        .output()
        .unwrap();
    util::assert_success(&out);
    let v = json(&out);
    // f1 and f10..f19 in each of 120 directories.
    assert_eq!(
        (v["files"].as_u64(), v["dirs"].as_u64()),
        (Some(1320), Some(0)),
        "{v}"
    );
    assert_eq!(one["files"], v["files"]);
    ranks(&v, 3);
    let files = |j: &Value, key: &str| -> u64 {
        j["selection"][key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}: {j}"))
            .iter()
            .map(|e| e["files"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(files(&v, "by_owner"), 1320, "{v}");
    assert_eq!(files(&v, "by_top"), 1320, "{v}");
    assert_eq!(
        v["selection"]["by_top"].as_array().unwrap().len(),
        20,
        "{v}"
    );
    assert_eq!(find_counts(&s.path(&t)), (120 * 9, 141));
}

/// `--time btime` on a file system that records no creation times: the named directory is
/// said once, by rank 0, and no rank searches it or removes anything there; the other named
/// directory (with creation times) goes as asked.
#[test]
fn ranks_say_once_that_a_file_system_records_no_creation_times() {
    let m = or_skip!(mpirun());
    require_root!();
    let s = scratch!();
    let _with = or_skip!(Volume::ext4(&s, "with", 64 << 20, 4096));
    let _without = or_skip!(Volume::ext4_without_btime(&s, "without", 64 << 20, 4096));
    grid(&s, "with/t", 60, 5);
    grid(&s, "without/t", 60, 5);
    let before = s.snapshot("without/t");
    let out = m
        .rm(
            &s,
            3,
            &[
                "-r",
                "--json",
                "--threads",
                "1",
                "--time",
                "btime",
                "--newer-than",
                "1d",
                "--type",
                "f",
                "without/t",
                "with/t",
            ],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let v = json(&out);
    let errors = v["errors"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(errors.len(), 1, "{v}");
    assert_eq!(errors[0]["path"], "without/t", "{v}");
    assert!(
        errors[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("does not record creation times")),
        "{v}"
    );
    util::assert_same("the unrecorded tree", &before, &s.snapshot("without/t"));
    assert_eq!(v["files"].as_u64(), Some(300), "{v}");
    assert_eq!(find_counts(&s.path("with/t")), (0, 81));
}

// ---------------------------------------------------------------------------------------------
// Safety.

#[test]
fn no_rank_follows_a_directory_swapped_for_a_symlink() {
    let m = or_skip!(mpirun());
    for round in 0..3 {
        let s = scratch!();
        let p = Place::new(&s, false);
        let t = p.at("t");
        s.make_outside(&p.at("outside"));
        for i in 0..100 {
            s.file(p.at(&format!("outside/many/f{i}")), format!("{i}\n"));
        }
        let before = s.snapshot(p.at("outside"));
        grid(&s, &t, 150, 10);
        // Directories at both levels, swapped for symlinks to `outside` while the ranks work
        // (a directory with entries cannot be renamed over: moved away, then the link made).
        let target = s.path(p.at("outside"));
        let swapped: Vec<PathBuf> = (0..150)
            .flat_map(|i| {
                let e = s.path(format!("{t}/d{}/e{i}", i % 20));
                let d = s.path(format!("{t}/d{}", i % 20));
                [e, d]
            })
            .collect();
        let stop = AtomicBool::new(false);
        let (out, swaps) = std::thread::scope(|sc| {
            let swapper = sc.spawn(|| {
                let mut swaps = 0u64;
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for dir in &swapped {
                        n += 1;
                        let mut moved = dir.clone().into_os_string();
                        moved.push(format!(".moved{n}"));
                        if fs::rename(dir, &moved).is_ok()
                            && std::os::unix::fs::symlink(&target, dir).is_ok()
                        {
                            swaps += 1;
                        }
                    }
                }
                swaps
            });
            let out = m
                .rm(&s, 3, &["-r", "--json", "--threads", "1", &t])
                .output()
                .unwrap();
            stop.store(true, Ordering::Relaxed);
            (out, swapper.join().unwrap())
        });
        let v = json(&out);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "round {round}: {}",
            util::stderr_of(&out)
        );
        ranks(&v, 3);
        eprintln!(
            "round {round}: {swaps} swaps, {} errors, exit {:?}",
            v["errors"].as_array().map_or(0, Vec::len),
            out.status.code()
        );
        util::assert_same(
            &format!("round {round}: outside"),
            &before,
            &s.snapshot(p.at("outside")),
        );
    }
}

/// Runs `job` (which builds its scratch directory, runs a job of 3 ranks and checks it) until
/// a rank other than 0 met a failure, at most 3 times: the failures of the other ranks must
/// reach rank 0's report, and where failures land is timing.
fn until_another_rank_fails(mut job: impl FnMut() -> Vec<(u64, u64, u64)>) {
    let mut seen = Vec::new();
    for _ in 0..3 {
        let per = job();
        if per.iter().skip(1).any(|r| r.2 > 0) {
            return;
        }
        seen.push(per);
    }
    panic!("rank 0 met every failure in every try: {seen:?}");
}

#[test]
fn every_rank_skips_mount_points() {
    let m = or_skip!(mpirun());
    require_root!();
    until_another_rank_fails(|| {
        let s = scratch!();
        let p = Place::new(&s, false);
        let t = p.at("t");
        grid(&s, &t, 200, 10);
        s.make_outside(&p.at("outside"));
        let outside = s.snapshot(p.at("outside"));
        // Mount points in 12 directories, each holding a file.
        let mut mounts = BTreeSet::new();
        let mut guards = Vec::new();
        for i in (0..200).step_by(17) {
            let mp = format!("{t}/d{}/e{i}/mnt", i % 20);
            guards.push(Volume::tmpfs(&s, &mp).expect("mount a tmpfs"));
            s.file(format!("{mp}/keep"), b"on another file system\n");
            mounts.insert(mp);
        }
        let out = m
            .rm(&s, 3, &["-r", "--json", "--threads", "1", &t])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
        let v = json(&out);
        let skipped: BTreeSet<String> = v["skipped_mounts"]
            .as_array()
            .unwrap_or_else(|| panic!("{v}"))
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        assert_eq!(skipped, mounts, "{v}");
        assert_eq!(error_paths(&v), mounts, "{v}");
        // What is left: each mount point with its file, and the directories that hold it.
        let mut expected = BTreeSet::from([PathBuf::new()]);
        for mp in &mounts {
            let rel = Path::new(mp).strip_prefix(&t).unwrap();
            expected.extend(rel.ancestors().map(Path::to_path_buf));
            expected.insert(rel.join("keep"));
        }
        let left: BTreeSet<PathBuf> = s.snapshot(&t).into_keys().collect();
        assert_eq!(left, expected);
        util::assert_same("outside", &outside, &s.snapshot(p.at("outside")));
        let per = ranks(&v, 3);
        assert_eq!(
            per.iter().map(|r| r.2).sum::<u64>(),
            mounts.len() as u64,
            "{v}"
        );
        drop(guards);
        per
    });
}

#[test]
fn failures_of_every_rank_reach_rank_0() {
    let m = or_skip!(mpirun());
    require_root!();
    until_another_rank_fails(|| {
        let s = scratch!();
        // Immutable files (`chattr +i`) need a file system that has the flag: ext4.
        let _vol = Volume::ext4(&s, "ext4", 1 << 30, 65536).expect("an ext4 image");
        let t = "ext4/t";
        grid(&s, t, 200, 10);
        let mut locked = BTreeSet::new();
        let mut guards = Vec::new();
        for i in (0..200).step_by(13) {
            let f = format!("{t}/d{}/e{i}/locked", i % 20);
            s.file(&f, b"immutable\n");
            guards.push(util::ImmutableGuard::new(&s, &f).expect("chattr +i"));
            locked.insert(f);
        }
        let out = m
            .rm(&s, 3, &["-r", "--json", "--threads", "1", t])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
        let v = json(&out);
        assert_eq!(error_paths(&v), locked, "{v}");
        for f in &locked {
            assert!(s.exists(f), "{f} is gone");
        }
        let per = ranks(&v, 3);
        assert_eq!(
            per.iter().map(|r| r.2).sum::<u64>(),
            locked.len() as u64,
            "{v}"
        );
        drop(guards);
        per
    });
}

// ---------------------------------------------------------------------------------------------
// Refusals.

/// Lines of stderr that `reclaim` wrote (not mpirun's own messages).
fn reclaim_lines(out: &Output) -> Vec<String> {
    util::stderr_of(out)
        .lines()
        .filter(|l| l.starts_with("reclaim"))
        .map(str::to_string)
        .collect()
}

#[test]
fn root_is_refused_under_mpi() {
    let m = or_skip!(mpirun());
    let s = scratch!();
    // In a world where everything but the scratch directory (mpirun's session files) is
    // read-only: a broken refusal could not remove anything.
    for flags in [&["-rf"][..], &["-r", "--no-preserve-root"]] {
        let mut c = or_skip!(util::readonly_world(&s, ".", true));
        let root = s.root().to_string_lossy().into_owned();
        c.args(m.argv(3))
            .args(["--mca", "btl_vader_backing_directory", &root])
            .arg(util::reclaim_bin())
            .arg("rm")
            .args(flags)
            .args(["--json", "/"])
            .env("TMPDIR", s.root());
        job_env(&mut c, &s);
        let out = Command::from_std(c)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let out = or_skip!(util::readonly_world_set_up(out));
        assert_eq!(
            out.status.code(),
            Some(1),
            "{flags:?}: {}",
            util::stderr_of(&out)
        );
        let v = json(&out);
        assert_eq!(error_paths(&v), BTreeSet::from(["/".to_string()]), "{v}");
        assert_eq!(
            (v["files"].as_u64(), v["dirs"].as_u64()),
            (Some(0), Some(0)),
            "{v}"
        );
        // Said once, by rank 0.
        let lines = reclaim_lines(&out);
        assert_eq!(lines.len(), 1, "{flags:?}: {lines:?}");
        assert!(
            lines[0].contains("refusing to remove the root directory"),
            "{lines:?}"
        );
    }
}

#[test]
fn ranks_that_see_different_trees_remove_nothing() {
    let m = or_skip!(mpirun());
    let s = scratch!();
    for r in 0..3 {
        s.file(format!("view{r}/t/sub/f"), format!("rank {r}\n"));
    }
    s.file("only0/t/f", b"only rank 0 sees it\n");
    let before = s.snapshot(".");
    // Each rank names `view<rank>/t`: another directory everywhere.
    let out = m
        .rm_via(
            &s,
            3,
            r#"exec "$@" "view$OMPI_COMM_WORLD_RANK/t""#,
            &["-r", "--json"],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let lines = reclaim_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("rank 1 sees other directories than rank 0")
            && lines[0].ends_with("nothing was removed"),
        "{lines:?}"
    );
    let v = json(&out);
    assert_eq!(
        error_paths(&v),
        BTreeSet::from(["view0/t".to_string()]),
        "{v}"
    );
    util::assert_same("the scratch directory", &before, &s.snapshot("."));
    // Rank 2 does not see the path at all.
    let out = m
        .rm_via(
            &s,
            3,
            r#"[ "$OMPI_COMM_WORLD_RANK" = 2 ] && exec "$@" view0/none; exec "$@" only0/t"#,
            &["-r"],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let lines = reclaim_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("rank 2 ") && lines[0].ends_with("nothing was removed"),
        "{lines:?}"
    );
    util::assert_same("the scratch directory", &before, &s.snapshot("."));
}

#[test]
fn node_local_look_alikes_are_not_one_tree() {
    // Every rank mounts a tmpfs of its own at the same path and makes the same tree in it (a
    // node-local scratch area made by the job script): same path, same inode numbers, other
    // directories. Nothing may be removed anywhere; each rank checks its own copy after.
    let m = or_skip!(mpirun());
    require_root!();
    let s = scratch!();
    s.mkdir("local");
    let script = r#"exec unshare --mount --propagation private sh -c '
        mount -t tmpfs look-alike local || exit 99
        mkdir -p local/t/a/b && echo x >local/t/a/f && echo y >local/t/a/b/g
        "$@"; echo $? >"rc.$OMPI_COMM_WORLD_RANK"
        [ -e local/t/a/f ] && [ -e local/t/a/b/g ] && : >"intact.$OMPI_COMM_WORLD_RANK"
        exit 0' sh "$@""#;
    let out = m
        .rm_via(&s, 2, script, &["-r", "--json", "local/t"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Each rank's exit status and its verdict on its copy are files in the (shared) scratch
    // directory, and the wrapper exits 0: the first rank to exit non-zero makes mpirun kill
    // the others, sometimes before they looked at their copies (3 runs in 42 under load).
    for rank in 0..2 {
        let rc = std::fs::read_to_string(s.path(format!("rc.{rank}"))).unwrap_or_default();
        assert_eq!(
            rc.trim(),
            "1",
            "rank {rank}'s exit status\n{stdout}\n{}",
            util::stderr_of(&out)
        );
        assert!(
            s.path(format!("intact.{rank}")).exists(),
            "rank {rank}'s copy of the tree was touched\n{stdout}"
        );
    }
    let lines = reclaim_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    // Told apart by birth time when the two were made in different clock ticks, else by the
    // file rank 0 makes at the top of the tree that rank 1 does not see.
    assert!(
        (lines[0].contains("rank 1 sees a directory with rank 0's inode number")
            || lines[0].contains("rank 1 does not see what rank 0 sees in 'local/t'"))
            && lines[0].ends_with("nothing was removed"),
        "{lines:?}"
    );
}

#[test]
fn foreground_only_options_are_refused_under_mpi() {
    let m = or_skip!(mpirun());
    let s = scratch!();
    grid(&s, "t", 3, 3);
    let before = s.snapshot(".");
    for flag in ["--background", "--wait", "-i", "-I"] {
        let out = m.rm(&s, 2, &["-r", flag, "t"]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag}: {}",
            util::stderr_of(&out)
        );
        // Said once, by rank 0.
        let lines = reclaim_lines(&out);
        assert_eq!(
            lines,
            vec!["reclaim rm: under MPI the ranks remove in the foreground: -i, -I, --background and --wait do not apply"],
            "{flag}"
        );
        util::assert_same(flag, &before, &s.snapshot("."));
    }
}

// ---------------------------------------------------------------------------------------------
// A rank killed.

/// Entries of a tree (the root included) while it is being removed: what vanishes during the
/// count is not counted.
fn entries_while_removed(p: &Path) -> u64 {
    let Ok(rd) = fs::read_dir(p) else {
        return 0;
    };
    1 + rd
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => entries_while_removed(&e.path()),
            _ => 1,
        })
        .sum::<u64>()
}

/// A job started in the background: killed (mpirun, which ends its ranks) if the test ends
/// before it did.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Whether process `pid` still runs (not a zombie).
fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| st.rsplit(") ").next().map(|rest| !rest.starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn a_job_with_a_killed_rank_ends_and_runs_again_to_the_end() {
    let m = or_skip!(mpirun());
    require_root!();
    let s = scratch!();
    // The tree on the network file system emulator (a round trip of 2 ms per operation, one
    // worker per rank): a removal of some seconds. Made in its backing directory, a tmpfs.
    let _back = or_skip!(Volume::tmpfs_with(&s, "back", "size=256m"));
    grid(&s, "back/t", 150, 20);
    s.make_outside("back/outside");
    let _net = or_skip!(crate::netfs::Net::start(&s, "2ms"));
    let outside = s.snapshot("back/outside");
    let pids = s.mkdir("pids");
    let log = s.path("job.log");
    let mut cmd = m.job_std(
        &s,
        3,
        &via_argv(
            &s,
            r#"echo $$ > "pids/$OMPI_COMM_WORLD_RANK"; exec "$@""#,
            &["-r", "--threads", "1", "vol/t"],
        ),
    );
    let mut job = Running(
        cmd.stdin(Stdio::null())
            .stdout(fs::File::create(&log).unwrap())
            .stderr(fs::File::create(s.path("job.err")).unwrap())
            .spawn()
            .unwrap(),
    );
    let total = 150 * 21 + 20 + 1;
    let left = || entries_while_removed(&s.path("back/t"));
    // Rank 1 killed once the removal is well under way (a tenth of the tree gone).
    let t0 = Instant::now();
    let pid_of = |r: usize| -> Option<i32> {
        fs::read_to_string(pids.join(r.to_string()))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let victim = loop {
        if let (Some(pid), true) = (pid_of(1), left() < total - total / 10) {
            break pid;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the job did not start"
        );
        assert!(
            job.0.try_wait().unwrap().is_none(),
            "the job ended before a rank was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let others = [pid_of(0).unwrap(), pid_of(2).unwrap()];
    let before_kill = left();
    let t_kill = t0.elapsed();
    // SAFETY: a signal to a process this test started (rank 1, exec'd from the shell that
    // wrote its pid).
    assert_eq!(unsafe { libc::kill(victim, libc::SIGKILL) }, 0);
    let status = loop {
        if let Some(st) = job.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "mpirun did not end the job after rank 1 was killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let job_err = fs::read_to_string(s.path("job.err")).unwrap();
    assert!(!status.success(), "mpirun: {status:?}: {job_err}");
    let t_end = t0.elapsed();
    assert!(before_kill > total / 3, "the removal was nearly done before the kill ({before_kill} of {total} left): too fast for this test");
    let t1 = Instant::now();
    while others.iter().any(|&p| alive(p)) {
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "ranks 0 and 2 outlived the job"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let after_kill = left();
    assert!(after_kill > 0, "nothing was left to finish");
    // The same command again: it finishes (default workers: 64 per rank on a network file
    // system).
    let out = m.rm(&s, 3, &["-r", "--json", "vol/t"]).output().unwrap();
    util::assert_success(&out);
    let v = json(&out);
    assert_eq!(v["errors"], serde_json::json!([]), "{v}");
    assert!(!s.exists("back/t"), "the tree is still there");
    util::assert_same("outside", &outside, &s.snapshot("back/outside"));
    eprintln!(
        "{before_kill} of {total} entries left at the kill ({t_kill:?}), {after_kill} when \
         the job ended ({t_end:?}), none after the second run"
    );
}

// ---------------------------------------------------------------------------------------------
// Several hosts.

/// Two "hosts" on this machine: network namespaces joined by a veth pair (10.213.7.1 and .2),
/// each with its own host name (a UTS namespace per process started there). They share this
/// machine's file systems, as clients of a shared file system would. Removed on drop.
struct Hosts {
    ns: [String; 2],
}

const HOST_IPS: [&str; 2] = ["10.213.7.1", "10.213.7.2"];
const HOST_NAMES: [&str; 2] = ["reclaim-host-a", "reclaim-host-b"];

impl Hosts {
    /// Err: why they cannot be made here (for a skip).
    fn new() -> Result<Hosts, String> {
        let id = std::process::id();
        let hosts = Hosts {
            ns: [format!("rcl{id}a"), format!("rcl{id}b")],
        };
        let [a, b] = &hosts.ns;
        let (va, vb) = (format!("rcl{id}va"), format!("rcl{id}vb"));
        let steps: Vec<Vec<&str>> = vec![
            vec!["netns", "add", a],
            vec!["netns", "add", b],
            vec!["link", "add", &va, "type", "veth", "peer", "name", &vb],
            vec!["link", "set", &va, "netns", a],
            vec!["link", "set", &vb, "netns", b],
            vec!["-n", a, "addr", "add", "10.213.7.1/24", "dev", &va],
            vec!["-n", b, "addr", "add", "10.213.7.2/24", "dev", &vb],
            vec!["-n", a, "link", "set", "lo", "up"],
            vec!["-n", b, "link", "set", "lo", "up"],
            vec!["-n", a, "link", "set", &va, "up"],
            vec!["-n", b, "link", "set", &vb, "up"],
        ];
        for step in steps {
            let out = StdCommand::new("ip").args(&step).output();
            if !out.as_ref().is_ok_and(|o| o.status.success()) {
                return Err(format!(
                    "ip {}: {}",
                    step.join(" "),
                    out.map_or_else(|e| e.to_string(), |o| util::stderr_of(&o))
                ));
            }
        }
        Ok(hosts)
    }

    /// Open MPI's rsh agent (`plm_rsh_agent`): runs the command it is given on "host" `$1`
    /// (an address of `HOST_IPS`) in that host's namespaces.
    fn agent(&self, s: &Scratch) -> PathBuf {
        let mut script = String::from("#!/bin/sh\nhost=$1; shift\ncase \"$host\" in\n");
        for i in 0..2 {
            script.push_str(&format!(
                "  {}) ns={} name={} ;;\n",
                HOST_IPS[i], self.ns[i], HOST_NAMES[i]
            ));
        }
        script.push_str(
            "  *) echo \"agent: no host $host\" >&2; exit 1 ;;\nesac\n\
             exec ip netns exec \"$ns\" unshare --uts sh -c \"hostname $name; $*\"\n",
        );
        let p = s.file("agent.sh", script);
        fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // The veth pair goes with the namespaces.
        for ns in &self.ns {
            let _ = StdCommand::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

#[test]
fn ranks_on_two_hosts_share_one_removal() {
    let m = or_skip!(mpirun());
    require_root!();
    let hosts = or_skip!(Hosts::new());
    let mut seen = Vec::new();
    for _ in 0..3 {
        let s = scratch!();
        let p = Place::new(&s, false);
        let t = p.at("t");
        grid(&s, &t, 200, 10);
        s.make_outside(&p.at("outside"));
        let outside = s.snapshot(p.at("outside"));
        let agent = hosts.agent(&s);
        fs::write(
            s.path("hostfile"),
            format!("{} slots=2\n{} slots=2\n", HOST_IPS[0], HOST_IPS[1]),
        )
        .unwrap();
        // mpirun on host a; the ranks of host b start through the agent, and everything
        // between the hosts goes over the veth pair.
        let mut c = StdCommand::new("ip");
        c.args([
            "netns",
            "exec",
            &hosts.ns[0],
            "unshare",
            "--uts",
            "sh",
            "-c",
        ])
        .arg(format!(r#"hostname {}; exec "$@""#, HOST_NAMES[0]))
        .arg("sh")
        .args(m.argv(4))
        .args(["--hostfile", "hostfile", "--mca", "plm_rsh_agent"])
        .arg(&agent)
        .args([
            "--mca",
            "plm_rsh_no_tree_spawn",
            "1",
            "--mca",
            "btl_tcp_if_include",
            "10.213.7.0/24",
            "--mca",
            "oob_tcp_if_include",
            "10.213.7.0/24",
        ])
        .args(rm_argv(&s, &["-r", "--json", "--threads", "1", &t]))
        .current_dir(s.root());
        job_env(&mut c, &s);
        let out = Command::from_std(c)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        util::assert_success(&out);
        let v = json(&out);
        assert_eq!(
            (v["files"].as_u64(), v["dirs"].as_u64()),
            (Some(2000), Some(221)),
            "{v}"
        );
        assert!(!s.exists(&t));
        util::assert_same("outside", &outside, &s.snapshot(p.at("outside")));
        let per = ranks(&v, 4);
        let on: Vec<&str> = v["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["host"].as_str().unwrap())
            .collect();
        assert_eq!(
            on,
            [HOST_NAMES[0], HOST_NAMES[0], HOST_NAMES[1], HOST_NAMES[1]],
            "{v}"
        );
        // Work done on both hosts (timing: a few tries).
        if per[..2].iter().any(|r| r.0 + r.1 > 0) && per[2..].iter().any(|r| r.0 + r.1 > 0) {
            return;
        }
        seen.push(per);
    }
    panic!("one host did all the work in every try: {seen:?}");
}

#[test]
fn a_rank_stopped_by_sigterm_is_in_rank_0s_report() {
    // Rank 1 stops at a consistent point on SIGTERM and hands its work back undone: rank 0
    // must not report a clean run (exit 1, a failure saying which rank stopped), and the tree
    // stays for the same command to finish.
    let m = or_skip!(mpirun());
    require_root!();
    let s = scratch!();
    let _back = or_skip!(Volume::tmpfs_with(&s, "back", "size=256m"));
    grid(&s, "back/t", 150, 20);
    let _net = or_skip!(crate::netfs::Net::start(&s, "2ms"));
    let pids = s.mkdir("pids");
    let mut cmd = m.job_std(
        &s,
        3,
        &via_argv(
            &s,
            r#"echo $$ > "pids/$OMPI_COMM_WORLD_RANK"; exec "$@""#,
            &["-r", "--json", "--threads", "1", "vol/t"],
        ),
    );
    let job = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let total = 150 * 21 + 1;
    let t0 = Instant::now();
    let victim: i32 = loop {
        let pid = fs::read_to_string(pids.join("1"))
            .ok()
            .and_then(|p| p.trim().parse().ok());
        if let (Some(pid), true) = (pid, entries_while_removed(&s.path("back/t")) < total - 100) {
            break pid;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the job did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: a signal to a process this test started (rank 1).
    assert_eq!(unsafe { libc::kill(victim, libc::SIGTERM) }, 0);
    let out = job.wait_with_output().unwrap();
    let v = json(&out);
    let errors = v["errors"].as_array().cloned().unwrap_or_default();
    assert!(
        errors.iter().any(|e| e["error"]
            .as_str()
            .is_some_and(|m| m.starts_with("rank 1 on ") && m.contains("stopped by a signal"))),
        "rank 0 does not say rank 1 stopped: {v}\n{}",
        util::stderr_of(&out)
    );
    assert!(
        s.exists("back/t"),
        "the tree is gone: rank 1 stopped too late for this test"
    );
    // The same command finishes.
    let out = m.rm(&s, 3, &["-r", "--json", "vol/t"]).output().unwrap();
    util::assert_success(&out);
    assert!(!s.exists("back/t"), "the tree is still there");
}

// ---------------------------------------------------------------------------------------------
// scan.

#[test]
fn a_scan_by_ranks_counts_what_one_process_counts() {
    // On the network file system emulator (2 ms per round trip), so that every rank has work:
    // a tree with hard links across its directories (one inode met by several ranks) and a
    // large directory. Totals, histogram and roots from 3 ranks equal one process's, and the
    // ranks' counts add up to them.
    let m = or_skip!(mpirun());
    require_root!();
    let s = scratch!();
    let _back = or_skip!(Volume::tmpfs_with(&s, "back", "size=256m"));
    grid(&s, "back/t", 120, 8);
    s.file("back/t/shared", b"one inode, many names\n");
    for i in 0..40 {
        s.hardlink(
            format!("back/t/d{}/e{}/hl{i}", i % 20, i % 20),
            "back/t/shared",
        );
    }
    s.symlink("back/t/d3/up", "../..");
    for i in 0..1500 {
        s.file(format!("back/t/flat/{i:05}"), vec![b'x'; i % 700]);
    }
    let _net = or_skip!(crate::netfs::Net::start(&s, "2ms"));
    let one = s
        .cmd(&["scan", "--json", "--no-estimate", "vol/t"])
        .output()
        .unwrap();
    util::assert_success(&one);
    let one = json(&one);
    let mut argv: Vec<OsString> = vec![util::reclaim_bin()];
    argv.extend(["scan", "--json", "--threads", "4", "vol/t"].map(OsString::from));
    let mut tries = Vec::new();
    for _ in 0..3 {
        let out = m.job(&s, 3, &argv).output().unwrap();
        util::assert_success(&out);
        let v = json(&out);
        for key in [
            "files",
            "dirs",
            "symlinks",
            "other",
            "hard_links",
            "small_files",
            "allocated_bytes",
            "apparent_bytes",
            "histogram",
            "roots",
            "errors",
            "skipped_mounts",
        ] {
            assert_eq!(v[key], one[key], "{key}: {v}");
        }
        assert_eq!(
            v["top_by_allocated_bytes"][0]["tree_files"],
            one["top_by_allocated_bytes"][0]["tree_files"]
        );
        // Per rank: names (files of every kind) and directories, adding up to the totals.
        let per: Vec<(u64, u64)> = v["ranks"]
            .as_array()
            .unwrap_or_else(|| panic!("no ranks array: {v}"))
            .iter()
            .map(|r| (r["files"].as_u64().unwrap(), r["dirs"].as_u64().unwrap()))
            .collect();
        assert_eq!(per.len(), 3, "{v}");
        let names: u64 = ["files", "symlinks", "other"]
            .iter()
            .map(|k| v[*k].as_u64().unwrap())
            .sum();
        assert_eq!(per.iter().map(|r| r.0).sum::<u64>(), names, "{v}");
        assert_eq!(
            per.iter().map(|r| r.1).sum::<u64>(),
            v["dirs"].as_u64().unwrap(),
            "{v}"
        );
        if per.iter().all(|r| r.0 + r.1 > 0) {
            return;
        }
        tries.push(per);
    }
    panic!("a rank did no work in every try: {tries:?}");
}

/// `btrfs subvolume create` at `rel`.
fn btrfs_subvolume(s: &Scratch, rel: &str) {
    let out = StdCommand::new("btrfs")
        .args(["subvolume", "create"])
        .arg(s.path(rel))
        .output()
        .unwrap();
    assert!(out.status.success(), "btrfs subvolume create: {out:?}");
}

#[test]
fn ranks_remove_a_tree_with_btrfs_subvolumes() {
    let m = or_skip!(mpirun());
    require_root!();
    let s = scratch!();
    let _v = or_skip!(Volume::btrfs(&s, "vol", 256 << 20, ""));
    grid(&s, "vol/t", 60, 5);
    // Deleted whole by whichever rank meets them (one nested in another)...
    btrfs_subvolume(&s, "vol/t/d3/sv");
    grid(&s, "vol/t/d3/sv", 20, 5);
    btrfs_subvolume(&s, "vol/t/d3/sv/d1/inner");
    // More, spread over the tree, so that ranks other than 0 meet some: rank 0's --json must
    // list them all.
    let spread = ["d7/sv7", "d11/sv11", "d15/sv15", "d19/sv19"];
    for sv in spread {
        btrfs_subvolume(&s, &format!("vol/t/{sv}"));
        grid(&s, &format!("vol/t/{sv}"), 10, 2);
    }
    // ...and one walked (a mount inside it): its directories are on a device of their own,
    // so they stay with the rank that walks it; the mount is skipped.
    btrfs_subvolume(&s, "vol/t/d5/walked");
    grid(&s, "vol/t/d5/walked", 40, 5);
    let _tmp = or_skip!(Volume::tmpfs(&s, "vol/t/d5/walked/d2/mnt"));
    s.file("vol/t/d5/walked/d2/mnt/keep", "kept\n");
    s.file("vol/outside", "stays\n");
    let out = m
        .rm(&s, 3, &["-r", "--json", "--threads", "1", "vol/t"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let v = json(&out);
    assert_eq!(
        v["skipped_mounts"],
        serde_json::json!(["vol/t/d5/walked/d2/mnt"]),
        "{v}"
    );
    // Every subvolume, whichever rank met it, and how it went.
    let listed: Vec<(String, String, usize)> = v["subvolumes"]
        .as_array()
        .unwrap_or_else(|| panic!("no subvolumes: {v}"))
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or_default().to_owned(),
                e["how"].as_str().unwrap_or_default().to_owned(),
                e["nested"].as_array().map_or(0, Vec::len),
            )
        })
        .collect();
    let mut want: Vec<(String, String, usize)> = spread
        .iter()
        .map(|sv| (format!("vol/t/{sv}"), "snap_destroy_v2".to_owned(), 0))
        .chain([
            ("vol/t/d3/sv".to_owned(), "snap_destroy_v2".to_owned(), 1),
            ("vol/t/d5/walked".to_owned(), "walk".to_owned(), 0),
        ])
        .collect();
    want.sort();
    assert_eq!(listed, want, "{v}");
    // Left: the mount point with its file and the directories holding it; nothing else.
    let left: BTreeSet<PathBuf> = s.snapshot("vol/t").into_keys().collect();
    let expected: BTreeSet<PathBuf> = ["", "d5", "d5/walked", "d5/walked/d2", "d5/walked/d2/mnt"]
        .iter()
        .map(PathBuf::from)
        .chain([PathBuf::from("d5/walked/d2/mnt/keep")])
        .collect();
    assert_eq!(left, expected);
    assert_eq!(
        fs::read_to_string(s.path("vol/outside")).unwrap(),
        "stays\n"
    );
}
