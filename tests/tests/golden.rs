//! Goldens of the command line's contract: every subcommand's `--help` text, and the shape of
//! every `--json` object (its keys, nested, and the type of each value: what scripts rely on).
//! A change to either is a change of the contract: made on purpose by regenerating the files
//! (`RECLAIM_BLESS=1 cargo test --test tests golden`, which writes `tests/golden/`) and
//! reviewing the diff. The JSON scenarios run in the test's scratch directory; the ones that
//! hide into a trash (status, reap) on a tmpfs there (root only, skipped otherwise).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::reap::{reap, rm_ok, run_ns, trash, tree};
use crate::util::{self, scratch, Scratch};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `text` with the golden file `rel`, or writes it there with `RECLAIM_BLESS=1`.
pub(crate) fn golden(rel: &str, text: &str) {
    let path = golden_dir().join(rel);
    if std::env::var_os("RECLAIM_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (RECLAIM_BLESS=1 writes it)", path.display()));
    assert!(
        text == want,
        "{rel} changed; if on purpose, regenerate with RECLAIM_BLESS=1 and review the diff.\n\
         --- golden\n{want}\n--- now\n{text}"
    );
}

#[test]
fn every_help_is_golden() {
    let commands: &[&[&str]] = &[
        &[],
        &["rm"],
        &["status"],
        &["restore"],
        &["reap"],
        &["prune"],
        &["scan"],
        &["browse"],
        &["pack"],
        &["unpack"],
        &["bench"],
        &["completions"],
        &["man"],
    ];
    for c in commands {
        let mut args = c.to_vec();
        args.push("--help");
        let out = util::reclaim().args(&args).output().unwrap();
        util::assert_success(&out);
        let text = String::from_utf8(out.stdout)
            .unwrap()
            .replace(env!("CARGO_PKG_VERSION"), "VERSION");
        let name = if c.is_empty() { "reclaim" } else { c[0] };
        golden(&format!("help/{name}.txt"), &text);
    }
}

/// `-h` fits a screen (GNU rm's `--help` is about 40 lines; reclaim's `--help` and the man
/// pages hold the rest), and `rm -h` is golden too.
#[test]
fn every_short_help_fits_a_screen() {
    for c in [
        "", "rm", "status", "restore", "reap", "prune", "scan", "pack", "unpack", "bench", "man",
    ] {
        let args: Vec<&str> = [c, "-h"].into_iter().filter(|a| !a.is_empty()).collect();
        let out = util::reclaim().args(&args).output().unwrap();
        util::assert_success(&out);
        let text = String::from_utf8(out.stdout).unwrap();
        let lines = text.lines().count();
        assert!(lines <= 42, "`reclaim {c} -h` is {lines} lines:\n{text}");
        if c == "rm" {
            assert!(text.contains("reclaim rm --help, man reclaim-rm"), "{text}");
            golden("help/rm-short.txt", &text);
        }
    }
}

/// The shape of a JSON value: objects keep their keys (each with the shape of its value),
/// arrays the merged shape of their elements, and every other value is its type's name.
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(a) => {
            let merged = a.iter().map(shape).reduce(|a, b| merge(&a, &b));
            Value::Array(merged.into_iter().collect())
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
    }
}

/// Two shapes as one: objects with every key of both, arrays merged, other differences as
/// `a|b` (`null|number`: a value that may be missing).
fn merge(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut m: BTreeMap<String, Value> = BTreeMap::new();
            for (k, v) in x.iter().chain(y.iter()) {
                let v = match m.get(k) {
                    Some(old) => merge(old, v),
                    None => v.clone(),
                };
                m.insert(k.clone(), v);
            }
            Value::Object(m.into_iter().collect())
        }
        (Value::Array(x), Value::Array(y)) => Value::Array(
            x.iter()
                .chain(y.iter())
                .cloned()
                .reduce(|a, b| merge(&a, &b))
                .into_iter()
                .collect(),
        ),
        (x, y) if x == y => x.clone(),
        (Value::String(x), Value::String(y)) => {
            let mut parts: Vec<&str> = x.split('|').chain(y.split('|')).collect();
            parts.sort_unstable();
            parts.dedup();
            parts.join("|").into()
        }
        (x, y) => panic!("cannot merge the shapes {x} and {y}"),
    }
}

/// The shape of the one JSON object on `out`'s stdout, pretty (one key a line), for a golden.
fn json_shape(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "not one JSON object ({e}): {text}\n{}",
            util::stderr_of(out)
        )
    });
    serde_json::to_string_pretty(&shape(&without_disk_notes(v))).unwrap() + "\n"
}

/// `v` without a profile's `note`: a key present only where the disk's answer needs a word
/// (one that says rotational, say), so the machine the tests run on would change the shape.
fn without_disk_notes(mut v: Value) -> Value {
    match &mut v {
        Value::Object(m) => {
            if let Some(Value::Object(p)) = m.get_mut("profile") {
                p.remove("note");
            }
            for x in m.values_mut() {
                *x = without_disk_notes(x.take());
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                *x = without_disk_notes(x.take());
            }
        }
        _ => {}
    }
    v
}

#[test]
fn json_shapes_of_rm_scan_and_prune_are_golden() {
    let s = scratch!();
    // rm: a tree, a single file, and a path that is not there (an error). The profile is
    // named, so that what the machine's disk is (a note, a governor) changes no key.
    tree(&s, "rmme");
    s.file("single", "x\n");
    let out = s
        .rm(&[
            "-r",
            "--json",
            "--profile",
            "local-ssd",
            "--start-pool",
            "rmme",
            "single",
            "missing",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    golden("json/rm.txt", &json_shape(&out));

    // scan: a tree and a path that is not there.
    tree(&s, "scanme");
    let out = s
        .cmd(&[
            "scan",
            "--json",
            "--no-estimate",
            "--profile",
            "local-ssd",
            "--top",
            "3",
            "scanme",
            "missing",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr_of(&out));
    golden("json/scan.txt", &json_shape(&out));

    // prune: three entries, the newest kept, the others removed in the foreground (`--fast`:
    // whether a governor ran, and its books, depends on how the disk answers).
    for i in 0..3 {
        tree(&s, &format!("backups/b{i}"));
    }
    let out = s
        .cmd(&[
            "prune",
            "--keep-last",
            "1",
            "--now",
            "--fast",
            "--start-pool",
            "--json",
            "backups",
        ])
        .output()
        .unwrap();
    util::assert_success(&out);
    golden("json/prune.txt", &json_shape(&out));
}

#[test]
fn json_shapes_of_pack_and_unpack_are_golden() {
    crate::util::or_skip!(crate::pack::tools());
    let s = scratch!();
    // pack: a tree packed and removed (`--fast`: whether a governor ran depends on how the
    // disk answers); unpack: it back into a new directory. Needs squashfs-tools-ng.
    tree(&s, "packme");
    let out = s
        .cmd(&[
            "pack",
            "--json",
            "--fast",
            "--profile",
            "local-ssd",
            "packme",
        ])
        .output()
        .unwrap();
    util::assert_success(&out);
    golden("json/pack.txt", &json_shape(&out));
    let out = s
        .cmd(&["unpack", "--json", "packme.sqfs", "unpacked"])
        .output()
        .unwrap();
    util::assert_success(&out);
    golden("json/unpack.txt", &json_shape(&out));
}

#[test]
fn json_shapes_of_status_and_reap_are_golden() {
    let s: Scratch = scratch!();
    // The floor is part of the shape (on its own tmpfs, the machine's disk decides nothing).
    s.keep_default_floor();
    let _vol = util::or_skip!(util::trash_vol(&s));
    let t = trash(&s);
    tree(&s, "vol/kept");
    tree(&s, "vol/freed");
    rm_ok(&s, &["-r", "--background", "--grace", "1h", "vol/kept"]);
    rm_ok(&s, &["-r", "--background", "vol/freed"]);
    let out = run_ns(
        &s,
        &[
            "status",
            "--json",
            "--count",
            "--trash",
            t.to_str().unwrap(),
        ],
    );
    util::assert_success(&out);
    golden("json/status.txt", &json_shape(&out));
    let out = reap(&s, &t, &["--json"]);
    util::assert_success(&out);
    golden("json/reap.txt", &json_shape(&out));
}
