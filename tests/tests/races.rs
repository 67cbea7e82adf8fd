//! Races: while `reclaim rm -r` runs, another thread swaps directories for symlinks to an
//! outside directory (atomically, with renameat2(RENAME_EXCHANGE)), or removes entries under
//! it. Nothing outside may ever be removed, and vanished entries are not errors.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rustix::fs::{renameat_with, RenameFlags, CWD};

use crate::util::{self, assert_same, parse_report, scratch, Scratch};

/// Trials per race test, and the time after which a test stops early (after at least
/// `MIN_TRIALS`).
const TRIALS: usize = 200;
const MIN_TRIALS: usize = 20;
const TIME_BUDGET: Duration = Duration::from_secs(12);

/// Swaps `a` and `b` (any types) again and again until `stop`; when one of them was removed
/// (by reclaim) it is recreated: `a` as an empty directory, `b` as a symlink to `link_target`.
fn spawn_swapper(
    a: PathBuf,
    b: PathBuf,
    link_target: PathBuf,
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE) {
                Ok(()) => {
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    let parent_gone = a.parent().is_some_and(|p| fs::symlink_metadata(p).is_err());
                    if parent_gone {
                        thread::yield_now();
                        continue;
                    }
                    if fs::symlink_metadata(&a).is_err() {
                        let _ = fs::create_dir(&a);
                    }
                    if fs::symlink_metadata(&b).is_err() {
                        let _ = std::os::unix::fs::symlink(&link_target, &b);
                    }
                }
            }
        }
    })
}

/// Removes `p` whatever it is, without following symlinks. Only inside the scratch dir.
fn clean(s: &Scratch, rel: &str) {
    let p = s.path(rel);
    match fs::symlink_metadata(&p) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(&p).unwrap(),
        Ok(_) => fs::remove_file(&p).unwrap(),
        Err(_) => {}
    }
}

fn fill(s: &Scratch, rel: &str, files: usize) {
    for i in 0..files {
        s.file(format!("{rel}/f{i}"), format!("{rel} {i}"));
    }
}

/// Runs trials of: build the target with `build`, start swapping `swap_a` and `swap_b`
/// (relative to the scratch root), run `reclaim rm -r --threads 2 target`, stop swapping,
/// check the outside dir. Returns (trials, total swaps).
fn run_trials(
    s: Scratch,
    build: impl Fn(&Scratch, usize) -> PathBuf,
    swap_a: &str,
    swap_b: &str,
) -> (usize, u64) {
    let name = s.test();
    s.make_outside("outside");
    fill(&s, "outside/many", 30);
    let outside = s.snapshot("outside");
    let start = Instant::now();
    let mut trials = 0;
    let swaps = Arc::new(AtomicU64::new(0));
    while trials < TRIALS && (trials < MIN_TRIALS || start.elapsed() < TIME_BUDGET) {
        let link_target = build(&s, trials);
        let stop = Arc::new(AtomicBool::new(false));
        let before = swaps.load(Ordering::Relaxed);
        let swapper = spawn_swapper(
            s.path(swap_a),
            s.path(swap_b),
            link_target,
            stop.clone(),
            swaps.clone(),
        );
        while swaps.load(Ordering::Relaxed) == before {
            thread::yield_now();
        }
        let out = s
            .rm(&["-r", "--threads", "2", "target"])
            .output()
            .expect("run reclaim");
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{name} trial {trials}: reclaim crashed: {:?}\n{}",
            out.status,
            util::stderr_of(&out)
        );
        assert_same(
            &format!("{name} trial {trials}: outside"),
            &outside,
            &s.snapshot("outside"),
        );
        s.assert_marker();
        clean(&s, "target");
        clean(&s, "tlink");
        trials += 1;
    }
    let total = swaps.load(Ordering::Relaxed);
    eprintln!(
        "{name}: {trials} trials, {total} swaps in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    (trials, total)
}

/// `target/a/b` (a directory with files) is swapped again and again with `target/a/link`, a
/// symlink to the outside directory (absolute in even trials, relative in odd ones).
#[test]
fn never_follows_swapped_symlink() {
    let build = |s: &Scratch, trial: usize| -> PathBuf {
        fill(s, "target", 20);
        fill(s, "target/a", 20);
        fill(s, "target/a/b", 30);
        fill(s, "target/a/b/c", 10);
        fill(s, "target/z", 20);
        let link_target = if trial.is_multiple_of(2) {
            s.path("outside")
        } else {
            PathBuf::from("../../outside")
        };
        s.symlink("target/a/link", &link_target);
        link_target
    };
    let (trials, swaps) = run_trials(scratch!(), build, "target/a/b", "target/a/link");
    assert!(trials >= MIN_TRIALS && swaps > 0);
}

/// The top-level argument `target` itself is swapped with `tlink`, a symlink to outside.
#[test]
fn never_follows_swapped_top_level_argument() {
    let build = |s: &Scratch, trial: usize| -> PathBuf {
        fill(s, "target", 20);
        fill(s, "target/a", 20);
        fill(s, "target/a/b", 10);
        let link_target = if trial.is_multiple_of(2) {
            s.path("outside")
        } else {
            PathBuf::from("outside")
        };
        s.symlink("tlink", &link_target);
        link_target
    };
    let (trials, swaps) = run_trials(scratch!(), build, "target", "tlink");
    assert!(trials >= MIN_TRIALS && swaps > 0);
}

/// A subdirectory deep in the tree is swapped with a symlink to a directory *inside* outside
/// that holds further subdirectories, while reclaim runs with a tiny fd budget (so it has to
/// reopen directories it had closed).
#[test]
fn never_follows_swapped_symlink_with_tiny_fd_budget() {
    let s = scratch!();
    s.make_outside("outside");
    fill(&s, "outside/sub/more", 20);
    let outside = s.snapshot("outside");
    let start = Instant::now();
    let mut trials = 0;
    while trials < TRIALS / 2 && (trials < MIN_TRIALS || start.elapsed() < TIME_BUDGET) {
        let mut rel = String::from("target");
        for level in 0..6 {
            rel.push_str(&format!("/d{level}"));
            fill(&s, &rel, 5);
        }
        s.symlink("target/d0/d1/d2/link", s.path("outside/sub"));
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let swapper = spawn_swapper(
            s.path("target/d0/d1/d2/d3"),
            s.path("target/d0/d1/d2/link"),
            s.path("outside/sub"),
            stop.clone(),
            swaps.clone(),
        );
        while swaps.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        let out = s
            .rm(&["-r", "--threads", "2", "--fd-budget", "2", "target"])
            .output()
            .unwrap();
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
        assert_same(
            &format!("trial {trials}: outside"),
            &outside,
            &s.snapshot("outside"),
        );
        clean(&s, "target");
        trials += 1;
    }
}

/// Another process removes files and emptied directories of the tree while reclaim removes
/// it: entries that vanish are not errors.
#[test]
fn vanishing_entries_are_not_errors() {
    let s = scratch!();
    let start = Instant::now();
    let mut trials = 0;
    while trials < 40 && (trials < 10 || start.elapsed() < TIME_BUDGET) {
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for d in 0..10 {
            for e in 0..3 {
                let dir = format!("target/d{d}/e{e}");
                fill(&s, &dir, 20);
                files.extend((0..20).map(|i| s.path(format!("{dir}/f{i}"))));
                dirs.push(s.path(&dir));
            }
            dirs.push(s.path(format!("target/d{d}")));
        }
        // Interleave the order so both sides meet in the middle.
        if trials % 2 == 1 {
            files.reverse();
        }
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let deleter = {
            let stop = stop.clone();
            let started = started.clone();
            thread::spawn(move || {
                started.store(true, Ordering::Relaxed);
                for f in &files {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let _ = fs::remove_file(f);
                }
                for d in &dirs {
                    let _ = fs::remove_dir(d);
                }
            })
        };
        while !started.load(Ordering::Relaxed) {
            thread::yield_now();
        }
        let out = s
            .rm(&["-r", "--threads", "2", "--json", "target"])
            .output()
            .unwrap();
        stop.store(true, Ordering::Relaxed);
        deleter.join().unwrap();
        let stderr = util::stderr_of(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "trial {trials}: stderr:\n{stderr}"
        );
        assert!(stderr.is_empty(), "trial {trials}: stderr:\n{stderr}");
        let r = parse_report(&out.stdout);
        assert!(r.errors.is_empty(), "trial {trials}: {r:?}");
        assert!(!s.exists("target"), "trial {trials}: target left");
        trials += 1;
    }
    assert!(Path::new(s.root()).exists());
}
