//! Where reapers log (`reap --log`): one record per freed entry (what, how many files, how
//! much, how long, how fast) and per failure (a path that cannot be freed, a damaged entry, an
//! entry left until its back-off ends), to the journal with fields and priorities, to syslog,
//! to stderr with the journal's `<N>` prefixes when stderr is the journal's stream, or to the
//! trash's `reaper.log`.
//!
//! Hermetic: the journal and syslog are datagram sockets each test binds in its own scratch
//! directory (`RECLAIM_JOURNAL_SOCKET`, `RECLAIM_SYSLOG_SOCKET`); the machine's `/dev/log` and
//! journal are never written. Root only (a tmpfs per test, as in reap.rs; `chattr +i` makes a
//! file no reaper can free).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use crate::reap::{hidden, rm_ok, run_ns, trash, tree};
use crate::util::{self, or_skip, scratch, trash_entries, ReaperSettle, Scratch, Volume, NO_SPAWN};

/// A test's tmpfs `vol` in a scratch directory of its own, and this user's trash there.
struct World {
    // Dropped first: the volume goes (once no reaper holds its trash) before the scratch.
    _vol: (ReaperSettle, Volume),
    s: Scratch,
    t: PathBuf,
}

impl World {
    /// Err when the test cannot mount (not root): it is skipped, and says so.
    fn new(s: Scratch) -> Result<World, String> {
        let v = util::trash_vol(&s)?;
        let t = trash(&s);
        Ok(World { _vol: v, s, t })
    }
}

/// One journal record: its fields, in order.
struct Fields(Vec<(String, Vec<u8>)>);

impl Fields {
    fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    }

    fn is(&self, name: &str, value: &str) -> bool {
        self.get(name).as_deref() == Some(value)
    }
}

impl std::fmt::Debug for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m: Vec<String> = self
            .0
            .iter()
            .map(|(n, v)| format!("{n}={}", String::from_utf8_lossy(v)))
            .collect();
        write!(f, "{m:?}")
    }
}

/// A record as the journal reads it: `NAME=value\n`, or `NAME\n` + 64-bit little-endian
/// length + value + `\n`.
fn parse_record(mut b: &[u8]) -> Fields {
    let mut out = Vec::new();
    while !b.is_empty() {
        let end = b
            .iter()
            .position(|c| *c == b'\n' || *c == b'=')
            .unwrap_or_else(|| panic!("no field end in {b:?}"));
        let name = String::from_utf8(b[..end].to_vec()).expect("a field name is text");
        if b[end] == b'=' {
            let rest = &b[end + 1..];
            let nl = rest.iter().position(|c| *c == b'\n').expect("a newline");
            out.push((name, rest[..nl].to_vec()));
            b = &rest[nl + 1..];
        } else {
            let len = u64::from_le_bytes(b[end + 1..end + 9].try_into().unwrap()) as usize;
            out.push((name, b[end + 9..end + 9 + len].to_vec()));
            assert_eq!(b[end + 9 + len], b'\n', "binary field ends with a newline");
            b = &b[end + 10 + len..];
        }
    }
    Fields(out)
}

/// A datagram socket standing in for the journal or for `/dev/log`.
struct FakeLog {
    sock: UnixDatagram,
    path: PathBuf,
}

impl FakeLog {
    fn bind(s: &Scratch, name: &str) -> FakeLog {
        let path = s.path(name);
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_nonblocking(true).unwrap();
        FakeLog { sock, path }
    }

    /// Every datagram received so far.
    fn take(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 1 << 20];
        while let Ok(n) = self.sock.recv(&mut buf) {
            out.push(buf[..n].to_vec());
        }
        out
    }

    fn records(&self) -> Vec<Fields> {
        self.take().iter().map(|d| parse_record(d)).collect()
    }

    fn lines(&self) -> Vec<String> {
        self.take()
            .iter()
            .map(|d| String::from_utf8_lossy(d).into_owned())
            .collect()
    }
}

/// `reclaim ARGS` in the scratch root with `envs`, no reaper spawned, stderr into `stderr`
/// (a file) or captured.
fn run_env(s: &Scratch, args: &[&str], envs: &[(&str, &str)], stderr: Option<&Path>) -> Output {
    let mut c = StdCommand::new(util::reclaim_bin());
    c.env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .env(NO_SPAWN, "1")
        .env("XDG_STATE_HOME", util::state_home(s))
        .env_remove("JOURNAL_STREAM")
        .current_dir(s.root())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    for (k, v) in envs {
        c.env(k, v);
    }
    match stderr {
        Some(p) => c.stderr(fs::File::create(p).unwrap()),
        None => c.stderr(Stdio::piped()),
    };
    c.output().unwrap()
}

/// `JOURNAL_STREAM`'s value for the file at `p`: `DEV:INO`.
fn stream_of(p: &Path) -> String {
    let m = fs::metadata(p).unwrap();
    format!("{}:{}", m.dev(), m.ino())
}

/// What a test leaves in the trash `t`: a tree and a file to free, an entry with an
/// immutable file inside (cannot be freed; None where `chattr +i` fails), and a damaged entry
/// (a file where an entry directory should be). Returns the entry ids by original path.
fn fill(s: &Scratch, t: &Path, stuck: bool) -> (Vec<(String, String)>, Option<PathBuf>) {
    tree(s, "vol/tree");
    s.file("vol/f", "f\n");
    let mut paths = vec!["vol/tree", "vol/f"];
    let mut imm = None;
    if stuck {
        let p = s.file("vol/stuck/imm", "stuck\n");
        let frozen = StdCommand::new("chattr")
            .arg("+i")
            .arg(&p)
            .output()
            .is_ok_and(|o| o.status.success());
        if frozen {
            paths.push("vol/stuck");
            imm = Some(p);
        } else {
            eprintln!("no chattr +i on tmpfs: the cannot-free case is not checked");
        }
    }
    let mut args = vec!["-r", "--background", "--json"];
    args.extend(&paths);
    let out = rm_ok(s, &args);
    let ids = hidden(&util::json_object(&out.stdout))
        .into_iter()
        .map(|(p, id, _)| (p, id))
        .collect();
    fs::write(t.join("20200101T000000.000000Z-1-0"), "not an entry\n").unwrap();
    (ids, imm)
}

/// Clears the immutable flag of the stuck file wherever the reaper left it in `t`.
fn unfreeze(t: &Path) {
    for e in trash_entries(t) {
        for inner in ["data/imm", "reaping/imm"] {
            let p = t.join(&e).join(inner);
            if p.exists() {
                let _ = StdCommand::new("chattr").arg("-i").arg(&p).output();
            }
        }
    }
}

fn id_of<'a>(ids: &'a [(String, String)], s: &Scratch, rel: &str) -> &'a str {
    let want = s.path(rel);
    &ids.iter()
        .find(|(p, _)| Path::new(p) == want)
        .unwrap_or_else(|| panic!("no entry for {rel}: {ids:?}"))
        .1
}

/// The first of `records` with every `name=value` of `want`.
fn find<'a>(records: &'a [Fields], want: &[(&str, &str)]) -> &'a Fields {
    records
        .iter()
        .find(|r| want.iter().all(|(n, v)| r.is(n, v)))
        .unwrap_or_else(|| panic!("no record with {want:?}: {records:#?}"))
}

/// Asserts that `field` of `r` holds `part`.
#[track_caller]
fn assert_holds(r: &Fields, field: &str, part: &str) {
    assert!(
        r.get(field).is_some_and(|v| v.contains(part)),
        "{field} lacks {part:?}: {r:?}"
    );
}

#[test]
fn journal_gets_the_fields_of_each_freed_entry_and_each_failure() {
    let w = or_skip!(World::new(scratch!()));
    let (s, t) = (&w.s, &w.t);
    let (ids, imm) = fill(s, t, true);
    let journal = FakeLog::bind(s, "journal.sock");
    let tp = t.to_str().unwrap();
    let path = |rel: &str| s.path(rel).to_str().unwrap().to_owned();
    // One pass with the log to the journal: its exit status and the records sent.
    let pass = || {
        let out = run_env(
            s,
            &[
                "reap", "--once", "--trash", tp, "--log", "journal", "--json",
            ],
            &[("RECLAIM_JOURNAL_SOCKET", journal.path.to_str().unwrap())],
            None,
        );
        unfreeze(t);
        // Sent to the journal, not also printed.
        assert!(!util::stderr_of(&out).contains("freed '"), "{out:?}");
        (out.status.code(), journal.records())
    };
    let (code, records) = pass();
    assert_eq!(code, Some(1));
    for r in &records {
        assert!(
            r.is("SYSLOG_IDENTIFIER", "reclaim") && r.is("RECLAIM_TRASH", tp),
            "{r:?}"
        );
    }
    let tree = find(
        &records,
        &[
            ("RECLAIM_EVENT", "freed"),
            ("RECLAIM_PATH", &path("vol/tree")),
            ("PRIORITY", "6"),
            ("RECLAIM_ENTRY", id_of(&ids, s, "vol/tree")),
            // Files as the summary counts them: 12 (and 4 directories).
            ("RECLAIM_FILES", "12"),
        ],
    );
    assert!(
        tree.get("RECLAIM_BYTES").unwrap().parse::<u64>().unwrap() > 0,
        "{tree:?}"
    );
    assert!(
        tree.get("RECLAIM_SECONDS").unwrap().parse::<f64>().is_ok(),
        "{tree:?}"
    );
    assert_holds(tree, "MESSAGE", "freed '");
    find(
        &records,
        &[
            ("RECLAIM_EVENT", "freed"),
            ("RECLAIM_PATH", &path("vol/f")),
            ("RECLAIM_ENTRY", id_of(&ids, s, "vol/f")),
        ],
    );
    let damaged = find(
        &records,
        &[
            ("RECLAIM_EVENT", "damaged"),
            ("PRIORITY", "3"),
            ("RECLAIM_ENTRY", "20200101T000000.000000Z-1-0"),
        ],
    );
    assert_holds(damaged, "MESSAGE", "damaged: ");

    let Some(imm) = &imm else {
        return;
    };
    let stuck = id_of(&ids, s, "vol/stuck");
    let failed = find(
        &records,
        &[
            ("RECLAIM_EVENT", "failed"),
            ("PRIORITY", "3"),
            ("RECLAIM_PATH", imm.to_str().unwrap()),
            ("RECLAIM_ENTRY", stuck),
            ("RECLAIM_ATTEMPTS", "1"),
        ],
    );
    assert_holds(failed, "RECLAIM_ERROR", "Operation not permitted");
    assert_holds(failed, "MESSAGE", "cannot free '");
    // And one for the entry: how many paths, when the next attempt is.
    let entry = find(
        &records,
        &[
            ("RECLAIM_EVENT", "failed"),
            ("PRIORITY", "4"),
            ("RECLAIM_PATH", &path("vol/stuck")),
        ],
    );
    assert_holds(entry, "MESSAGE", "next attempt at");

    // The next pass leaves it until its back-off ends, and says so.
    let (_, again) = pass();
    let backoff = find(
        &again,
        &[
            ("RECLAIM_EVENT", "backoff"),
            ("PRIORITY", "5"),
            ("RECLAIM_ENTRY", stuck),
        ],
    );
    assert!(
        backoff.get("RECLAIM_NEXT_ATTEMPT_UNIX").is_some(),
        "{backoff:?}"
    );
    assert!(
        !again.iter().any(|r| r.is("RECLAIM_EVENT", "failed")),
        "{again:#?}"
    );
}

#[test]
fn under_systemd_auto_uses_the_journal_and_its_stream_prefixes() {
    let w = or_skip!(World::new(scratch!()));
    let (s, t) = (&w.s, &w.t);
    let tp = t.to_str().unwrap().to_owned();
    let journal = FakeLog::bind(s, "journal.sock");
    let sock = journal.path.to_str().unwrap().to_owned();
    let err = s.path("stderr");
    fs::write(&err, "").unwrap();
    let stream = stream_of(&err);

    // stderr is the journal's stream: auto sends records to the journal's socket.
    fill(s, t, false);
    run_env(
        s,
        &["reap", "--once", "--trash", &tp],
        &[
            ("JOURNAL_STREAM", &stream),
            ("RECLAIM_JOURNAL_SOCKET", &sock),
        ],
        Some(&err),
    );
    let records = journal.records();
    assert!(
        records
            .iter()
            .filter(|r| r.is("RECLAIM_EVENT", "freed"))
            .count()
            == 2
            && records.iter().any(|r| r.is("RECLAIM_EVENT", "damaged")),
        "{records:#?}"
    );
    let text = fs::read_to_string(&err).unwrap();
    assert!(!text.contains("freed '"), "also on stderr:\n{text}");

    // The socket cannot be reached: the same lines on stderr, with priorities the journal
    // reads from its stream.
    fs::remove_file(t.join("20200101T000000.000000Z-1-0")).unwrap();
    fill(s, t, false);
    run_env(
        s,
        &["reap", "--once", "--trash", &tp],
        &[
            ("JOURNAL_STREAM", &stream_of(&err)),
            (
                "RECLAIM_JOURNAL_SOCKET",
                s.path("none.sock").to_str().unwrap(),
            ),
        ],
        Some(&err),
    );
    let text = fs::read_to_string(&err).unwrap();
    let freed: Vec<&str> = text.lines().filter(|l| l.contains(": freed '")).collect();
    assert!(
        freed.len() == 2
            && freed
                .iter()
                .all(|l| l.starts_with(&format!("<6>'{tp}': freed '"))),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("<3>") && l.contains("damaged: ")),
        "{text}"
    );

    // A JOURNAL_STREAM that is not this stderr (a service's child writing elsewhere): not
    // the journal; a plain `reap --once` logs nothing then (its summary says it).
    fs::remove_file(t.join("20200101T000000.000000Z-1-0")).unwrap();
    fill(s, t, false);
    let other = s.path("other");
    fs::write(&other, "").unwrap();
    run_env(
        s,
        &["reap", "--once", "--trash", &tp],
        &[
            ("JOURNAL_STREAM", &stream_of(&other)),
            ("RECLAIM_JOURNAL_SOCKET", &sock),
        ],
        Some(&err),
    );
    assert!(journal.records().is_empty());
    let text = fs::read_to_string(&err).unwrap();
    assert!(!text.contains("<6>") && !text.contains("freed '"), "{text}");
}

#[test]
fn the_service_under_systemd_logs_each_entry_to_the_journal() {
    let w = or_skip!(World::new(scratch!()));
    let (s, t) = (&w.s, &w.t);
    let journal = FakeLog::bind(s, "journal.sock");
    let err = s.path("stderr");
    let file = fs::File::create(&err).unwrap();
    s.file("vol/a", "a\n");
    let ids = hidden(&util::json_object(
        &rm_ok(s, &["--background", "--json", "vol/a"]).stdout,
    ));
    let mut watcher = StdCommand::new(util::reclaim_bin())
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .env("JOURNAL_STREAM", stream_of(&err))
        .env("RECLAIM_JOURNAL_SOCKET", &journal.path)
        .current_dir(s.root())
        .args(["reap", "--watch", "--trash", t.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .unwrap();
    // Until the child's record and the supervisor's line about the pass are in.
    let said = |records: &[Fields], what: &str| {
        records
            .iter()
            .any(|r| r.get("MESSAGE").is_some_and(|m| m.contains(what)))
    };
    let t0 = Instant::now();
    let mut records = Vec::new();
    while !records
        .iter()
        .any(|r: &Fields| r.is("RECLAIM_EVENT", "freed"))
        || !said(&records, ": freed 1 entry (1 file")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(30) && watcher.try_wait().unwrap().is_none(),
            "no freed record from the service: {records:#?}\n{}",
            fs::read_to_string(&err).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
        records.extend(journal.records());
    }
    // SAFETY: kill takes integers; the pid is our child's, not yet waited for.
    unsafe { libc::kill(watcher.id() as i32, libc::SIGTERM) };
    let st = watcher.wait().unwrap();
    assert!(st.success(), "{st:?}");
    records.extend(journal.records());
    let freed = records
        .iter()
        .find(|r| r.is("RECLAIM_EVENT", "freed"))
        .unwrap();
    assert!(freed.is("RECLAIM_ENTRY", &ids[0].1), "{freed:?}");
    assert!(
        freed.is("RECLAIM_PATH", s.path("vol/a").to_str().unwrap()),
        "{freed:?}"
    );
    assert!(freed.is("PRIORITY", "6"), "{freed:?}");
    // The supervisor's own lines too, and nothing on its stderr.
    for what in ["watching the trashes", "stopped"] {
        assert!(said(&records, what), "no '{what}': {records:#?}");
    }
    let text = fs::read_to_string(&err).unwrap();
    assert!(text.is_empty(), "{text}");
    assert!(trash_entries(t).is_empty());
}

#[test]
fn syslog_gets_one_line_per_freed_entry_and_failure() {
    let w = or_skip!(World::new(scratch!()));
    let (s, t) = (&w.s, &w.t);
    fill(s, t, false);
    let syslog = FakeLog::bind(s, "log.sock");
    let out = run_env(
        s,
        &[
            "reap",
            "--once",
            "--trash",
            t.to_str().unwrap(),
            "--log",
            "syslog",
        ],
        &[("RECLAIM_SYSLOG_SOCKET", syslog.path.to_str().unwrap())],
        None,
    );
    let lines = syslog.lines();
    let tag = format!(
        " reclaim[{}]: ",
        lines
            .first()
            .and_then(|l| l.split("reclaim[").nth(1))
            .and_then(|r| r.split(']').next())
            .unwrap_or_else(|| panic!("no syslog line: {lines:?}\n{}", util::stderr_of(&out)))
    );
    // daemon (3) * 8 + info (6) / err (3).
    let freed: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("<30>") && l.contains(&format!("{tag}freed '")))
        .collect();
    assert_eq!(freed.len(), 2, "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("<27>") && l.contains(&tag) && l.contains("damaged: ")),
        "{lines:#?}"
    );
    assert!(!util::stderr_of(&out).contains("freed '"));
}

#[test]
fn a_foreground_reap_can_keep_the_trash_log_that_status_shows() {
    let w = or_skip!(World::new(scratch!()));
    let (s, t) = (&w.s, &w.t);
    fill(s, t, false);
    let out = run_ns(
        s,
        &[
            "reap",
            "--once",
            "--trash",
            t.to_str().unwrap(),
            "--log",
            "file",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    let log = fs::read_to_string(t.join("reaper.log")).unwrap();
    assert_eq!(
        log.lines().filter(|l| l.contains(" freed '")).count(),
        2,
        "{log}"
    );
    assert!(log.lines().any(|l| l.contains("damaged: ")), "{log}");
    let st = util::stdout_of(&run_ns(s, &["status"]));
    assert!(st.contains("log: ") && st.contains("damaged: "), "{st}");
    // Without --log a plain reap keeps no log: its summary says what it did.
    let before = log.len();
    s.file("vol/g", "g\n");
    rm_ok(s, &["--background", "vol/g"]);
    let out = run_ns(s, &["reap", "--once", "--trash", t.to_str().unwrap()]);
    assert!(
        util::stderr_of(&out).contains("freed 1 entry"),
        "{}",
        util::stderr_of(&out)
    );
    assert_eq!(
        fs::read_to_string(t.join("reaper.log")).unwrap().len(),
        before
    );
}
