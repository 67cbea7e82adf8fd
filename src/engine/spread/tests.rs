//! The protocol and the shared walk with ranks as threads (`local`): the same code as under
//! MPI. End-to-end runs under `mpirun` are in tests/tests/mpi.rs.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::*;
use crate::engine::remove::{Counters, DirTarget, Quiet, Settings};

/// A tree of `dirs` directories (a few levels) with `files` files each, a flat directory of
/// `flat` files, symlinks (one to outside the tree) and a hard link.
fn build(root: &Path, dirs: usize, files: usize, flat: usize, outside: &Path) -> (u64, u64) {
    let mut ndirs = 1u64;
    let mut nfiles = 0u64;
    fs::create_dir(root).unwrap();
    for d in 0..dirs {
        let p = root.join(format!("d{}", d % 7)).join(format!("e{d}"));
        if !p.parent().unwrap().exists() {
            ndirs += 1;
        }
        fs::create_dir_all(&p).unwrap();
        ndirs += 1;
        for f in 0..files {
            fs::write(p.join(format!("f{f}")), b"x").unwrap();
            nfiles += 1;
        }
        std::os::unix::fs::symlink(outside, p.join("out")).unwrap();
        nfiles += 1;
    }
    let flat_dir = root.join("flat");
    fs::create_dir(&flat_dir).unwrap();
    ndirs += 1;
    for f in 0..flat {
        fs::write(flat_dir.join(format!("{f:06}")), b"").unwrap();
        nfiles += 1;
    }
    fs::hard_link(outside.join("keep"), root.join("link")).unwrap();
    nfiles += 1;
    (ndirs, nfiles)
}

fn target(path: &Path) -> DirTarget {
    let base = Arc::new(
        crate::sys::dirfd::open_dir_at(
            rustix::fs::CWD,
            &CString::new(path.parent().unwrap().as_os_str().as_bytes()).unwrap(),
        )
        .unwrap(),
    );
    let name = CString::new(path.file_name().unwrap().as_bytes()).unwrap();
    let ident = crate::sys::dirfd::lstat_at(&*base, &name).unwrap().ident;
    DirTarget {
        base,
        name,
        display: path.to_path_buf(),
        ident,
    }
}

/// Runs `ranks` ranks over `paths`; returns rank 0's counters and outcome.
fn run(
    ranks: usize,
    paths: &[&Path],
    opts: &Settings,
) -> (Counters, crate::engine::remove::Outcome) {
    let mesh = local::mesh(ranks);
    std::thread::scope(|s| {
        let handles: Vec<_> = mesh
            .iter()
            .map(|t| {
                s.spawn(move || {
                    let counters = Counters::default();
                    let targets = paths.iter().map(|p| target(p)).collect();
                    let (o, _) = remove_trees(t, targets, opts, &counters, &Quiet);
                    (counters, o)
                })
            })
            .collect();
        let mut all: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        all.swap_remove(0)
    })
}

fn small() -> Settings {
    Settings {
        threads: 3,
        batch: 64,
        ..Settings::default()
    }
}

#[test]
fn ranks_remove_whole_trees_and_count_exactly() {
    for ranks in [1, 2, 4] {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("keep"), b"precious").unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        let (da, fa) = build(&a, 60, 5, 700, &outside);
        let (db, fb) = build(&b, 10, 2, 0, &outside);
        let (c, o) = run(ranks, &[&a, &b], &small());
        assert!(o.failures.is_empty(), "{ranks} ranks: {:?}", o.failures);
        assert!(!a.exists() && !b.exists(), "{ranks} ranks left the trees");
        assert_eq!(c.files.load(Relaxed), fa + fb, "{ranks} ranks: files");
        assert_eq!(c.dirs.load(Relaxed), da + db, "{ranks} ranks: directories");
        assert_eq!(fs::read(outside.join("keep")).unwrap(), b"precious");
    }
}

#[test]
fn a_dry_run_counts_what_one_process_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep"), b"k").unwrap();
    let a = tmp.path().join("a");
    let (d, f) = build(&a, 40, 3, 300, &outside);
    let opts = Settings {
        dry_run: true,
        ..small()
    };
    let (c, o) = run(3, &[&a], &opts);
    assert!(o.failures.is_empty());
    assert!(a.exists());
    assert_eq!((c.dirs.load(Relaxed), c.files.load(Relaxed)), (d, f));
}

#[test]
fn failures_anywhere_reach_rank_0_and_keep_their_ancestors() {
    // A mount point inside the tree (root only): skipped, reported, its ancestors kept.
    if !rustix::process::geteuid().is_root() {
        crate::sys::testing::skipped(
            "failures_anywhere_reach_rank_0_and_keep_their_ancestors",
            "needs root (a tmpfs mount point inside the tree)",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep"), b"k").unwrap();
    let a = tmp.path().join("a");
    build(&a, 30, 2, 0, &outside);
    let mnt = a.join("d3").join("mnt");
    fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "none"])
        .arg(&mnt)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount tmpfs");
    fs::write(mnt.join("inside"), b"i").unwrap();
    let (_, o) = run(3, &[&a], &small());
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    assert_eq!(o.skipped_mounts, vec![mnt.clone()]);
    assert_eq!(o.failures.len(), 1, "{:?}", o.failures);
    // The mount point and its ancestors stay; everything else is gone.
    assert!(mnt.exists());
    let left: Vec<_> = walk_all(&a);
    assert_eq!(left, vec![a.join("d3"), a.join("d3/mnt")], "left: {left:?}");
}

fn walk_all(p: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        out.push(e.path());
        if e.file_type().unwrap().is_dir() && e.path().read_dir().is_ok() {
            if let Ok(meta) = fs::symlink_metadata(e.path()) {
                if meta.is_dir() {
                    out.extend(walk_all(&e.path()));
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn ranks_that_see_other_trees_remove_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    fs::create_dir_all(a.join("x")).unwrap();
    fs::create_dir_all(b.join("y")).unwrap();
    let mesh = local::mesh(3);
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = mesh
            .iter()
            .map(|t| {
                let p = if t.rank() == 2 { b.clone() } else { a.clone() };
                s.spawn(move || {
                    remove_trees(t, vec![target(&p)], &small(), &Counters::default(), &Quiet).0
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(a.join("x").exists() && b.join("y").exists());
    let why = outcomes[0].failures[0].reason.to_string();
    assert!(
        why.starts_with("rank 2 sees other directories than rank 0")
            && why.ends_with("nothing was removed"),
        "{why}"
    );
}

#[test]
fn a_rank_asked_for_work_before_its_go_answers() {
    // Rank 2 had its go and asks rank 1 for work before rank 0's go reaches rank 1 (MPI orders
    // messages per pair of ranks only). Unanswered, rank 2 would wait for the answer forever,
    // never report, and the job would never end.
    let mesh = local::mesh(3);
    let none = Trees {
        roots: Vec::new(),
        dry_run: true,
    };
    mesh[2].send(0, Msg::Trees(Ok(Vec::new())).encode());
    mesh[2].send(1, Msg::Steal(8).encode());
    std::thread::scope(|s| {
        for t in &mesh[..2] {
            let none = &none;
            s.spawn(move || agree(t, none, None).unwrap());
        }
    });
    let mut answered = false;
    while let Some((from, bytes)) = mesh[2].try_recv() {
        answered |= from == 1 && matches!(Msg::decode(&bytes), Ok(Msg::Work(w)) if w.is_empty());
    }
    assert!(answered, "rank 1 did not answer rank 2's request for work");
}

/// A walk with `queued` directories waiting and `capacity` workers, recording what it was
/// asked to hand over.
struct Queue {
    queued: std::sync::Mutex<usize>,
    capacity: usize,
    asked: std::sync::Mutex<Vec<usize>>,
}

impl crate::engine::walk::Shared for Queue {
    fn export(&self, max: usize) -> Vec<crate::engine::walk::Handoff> {
        self.asked.lock().unwrap().push(max);
        let mut q = self.queued.lock().unwrap();
        let n = q.div_ceil(2).min(max);
        *q -= n;
        (0..n as u64)
            .map(|token| crate::engine::walk::Handoff {
                token,
                root: 0,
                chain: Vec::new(),
                work: crate::engine::walk::Work::Dir(CString::new(format!("d{token}")).unwrap()),
            })
            .collect()
    }
    fn import(
        &self,
        _: usize,
        _: crate::engine::walk::Handoff,
    ) -> Result<(), crate::engine::walk::NoSuchRoot> {
        Ok(())
    }
    fn returned(&self, _: u64, _: bool, _: Vec<u8>) {}
    fn queued(&self) -> usize {
        *self.queued.lock().unwrap()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

#[test]
fn a_rank_takes_only_as_much_work_as_it_has_workers() {
    // Rank 1 works with one worker (its latency governor held it there): the directories it
    // takes wait for that worker alone (work received is not handed on), so it asks for one at
    // a time. Handed rank 0's usual half (up to 32), it kept 3,200 files of a 100,000-file
    // tree to itself at 2 ms a file while seven other ranks had finished (bench/RESULTS.md).
    let mesh = local::mesh(2);
    let busy = Queue {
        queued: std::sync::Mutex::new(40),
        capacity: 8,
        asked: std::sync::Mutex::new(Vec::new()),
    };
    let idle = Queue {
        queued: std::sync::Mutex::new(0),
        capacity: 1,
        asked: std::sync::Mutex::new(Vec::new()),
    };
    let counts = || [0u64; 4];
    let add = |_: wire::Counts| {};
    let warn = |_: &dyn std::fmt::Display| {};
    let (root_done, events) = std::sync::mpsc::channel::<Event>();
    std::thread::scope(|s| {
        let job0 = Job {
            transport: &mesh[0],
            roots: 1,
            counts: &counts,
            add: &add,
            warn: &warn,
            verdicts: None,
        };
        let busy = &busy;
        let rank0 = s.spawn(move || drive(&job0, busy, &events));
        // Rank 1 asks for work as an idle rank does (its first request goes to rank 0, the
        // only other rank), until it is handed some.
        let (_no_events, events1) = std::sync::mpsc::channel::<Event>();
        let job1 = Job {
            transport: &mesh[1],
            roots: 0,
            counts: &counts,
            add: &add,
            warn: &warn,
            verdicts: None,
        };
        let idle = &idle;
        let rank1 = s.spawn(move || drive(&job1, idle, &events1));
        let deadline = Instant::now() + Duration::from_secs(10);
        while busy.asked.lock().unwrap().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Rank 0's roots finish: it tells rank 1 to stop.
        root_done.send(Event::RootDone(0)).unwrap();
        rank0.join().unwrap();
        rank1.join().unwrap();
    });
    let asked = busy.asked.lock().unwrap().clone();
    assert!(!asked.is_empty(), "rank 1 never asked rank 0 for work");
    assert!(
        asked.iter().all(|&max| max == 1),
        "a rank with one worker was offered more than one piece: {asked:?}"
    );
}

#[test]
fn every_rank_steers_its_workers_by_rank_0s_verdicts_alone() {
    // One judgement for the job: rank 0's governor judges the windows and every rank acts on
    // each verdict with its own workers. Rank 1 follows here (its own probe never runs): two
    // misses from rank 0 halve its 8 workers twice; a verdict from any other rank is ignored.
    use crate::engine::pace::controller::Verdict;
    use crate::engine::pace::tree::{self, Joint, Knobs};
    let mesh: &'static [local::Local] = Vec::leak(local::mesh(3));
    let judge = Verdicts::new(&mesh[0]);
    let follower = Verdicts::new(&mesh[1]);
    assert!(judge.judges() && !follower.judges());
    assert_eq!(follower.ranks(), 3);
    let idle = Queue {
        queued: std::sync::Mutex::new(0),
        capacity: 8,
        asked: std::sync::Mutex::new(Vec::new()),
    };
    let counts = || [0u64; 4];
    let add = |_: wire::Counts| {};
    let warn = |_: &dyn std::fmt::Display| {};
    let gate = crate::engine::walk::Gate::new(8);
    let throttle = crate::engine::pace::throttle::Throttle::new(None);
    let scratch = tempfile::tempdir().unwrap();
    let dir = fs::File::open(scratch.path()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let pacing = crate::engine::pace::Pacing {
        max_latency: Some(Duration::from_millis(20)),
        rate: None,
        trace: None,
        floor: crate::sys::space::Floor::Off,
    };
    let (_keep, events) = std::sync::mpsc::channel::<Event>();
    let wait_for = |what: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !what() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let report = std::thread::scope(|s| {
        let job1 = Job {
            transport: &mesh[1],
            roots: 0,
            counts: &counts,
            add: &add,
            warn: &warn,
            verdicts: Some(&follower),
        };
        let (idle, follower_ref) = (&idle, &follower);
        let rank1 = s.spawn(move || drive(&job1, idle, &events));
        let knobs = Knobs {
            throttle: &throttle,
            gate: Some(&gate),
            max_workers: 8,
            rate: false,
            idle: &[],
            budget: None,
            joint: Some(follower_ref),
        };
        let (dir, pacing, done) = (&dir, &pacing, &done);
        let governor = s.spawn(move || tree::run(dir, pacing, &knobs, &|| 0, done));
        // Rank 2 is not the judge: its word changes nothing.
        mesh[2].send(1, Msg::Verdict(Verdict::Miss).encode());
        judge.publish(Verdict::Miss);
        judge.publish(Verdict::Miss);
        wait_for(&|| gate.allowed() <= 2);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            gate.allowed(),
            2,
            "8 workers halved once per miss of rank 0"
        );
        // Eight good windows of rank 0 in a row earn one worker back.
        for _ in 0..8 {
            judge.publish(Verdict::Good);
        }
        wait_for(&|| gate.allowed() >= 3);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(gate.allowed(), 3);
        // Rank 0 counts what the others report removed (its probe is spaced by the job's
        // operations), then its roots finish and it stops the others.
        let (root_done, events0) = std::sync::mpsc::channel::<Event>();
        let job0 = Job {
            transport: &mesh[0],
            roots: 1,
            counts: &counts,
            add: &add,
            warn: &warn,
            verdicts: Some(&judge),
        };
        let judge_ref = &judge;
        let rank0 = s.spawn(move || drive(&job0, idle, &events0));
        mesh[2].send(0, Msg::Progress([5, 2, 9, 0]).encode());
        wait_for(&|| judge_ref.removed_by_others() >= 7);
        assert_eq!(
            judge_ref.removed_by_others(),
            7,
            "files and directories reported"
        );
        root_done.send(Event::RootDone(0)).unwrap();
        rank0.join().unwrap();
        rank1.join().unwrap();
        done.store(true, Relaxed);
        governor.join().unwrap()
    });
    assert_eq!((report.windows, report.backoffs), (10, 2));
    assert_eq!(report.workers_min, Some(2));
    // No probe of its own (the judge's probe writes an anonymous file: its samples show).
    assert_eq!(
        (report.probe_before.count, report.probe_during.count),
        (0, 0),
        "a follower probed the file system"
    );
}
