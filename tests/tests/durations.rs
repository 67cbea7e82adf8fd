//! One grammar for durations in every option and config key (`s`, `min`, `h`, `d`, `w`, `mo`,
//! `y`): `6m` is refused everywhere, before anything is removed, with both spellings that may
//! have been meant.

use crate::util::{self, scratch, Scratch};

/// A directory `d` with a backup over a year old and one made now.
fn aged(s: &Scratch) -> util::Snapshot {
    s.file("d/db-1.tar", "o");
    s.file("d/db-2.tar", "n");
    let year_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(400 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(s.path("d/db-1.tar"))
        .unwrap()
        .set_modified(year_ago)
        .unwrap();
    s.snapshot("d")
}

#[test]
fn a_bare_m_is_refused_in_every_option_before_anything_is_removed() {
    let s = scratch!();
    let before = aged(&s);
    let hint = "6m: minutes or months? say 6min or 6mo";
    for args in [
        &["rm", "-r", "--older-than", "6m", "d"][..],
        &["rm", "-r", "--newer-than", "6m", "d"],
        &["rm", "-r", "--background", "--grace", "6m", "d"],
        &["rm", "-r", "--max-latency", "6m", "d"],
        &["prune", "--older-than", "6m", "d"],
        &["prune", "--keep-within", "6m", "d"],
        &["prune", "--keep-last", "1", "--max-latency", "6m", "d"],
        &["scan", "--pack-age", "6m", "d"],
        &["reap", "--max-latency", "6m"],
    ] {
        let o = s.cmd(args).env("RECLAIM_NO_SPAWN", "1").output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = util::stderr_of(&o);
        assert!(err.contains(hint), "{args:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.contains("error")).count(),
            1,
            "{err}"
        );
        util::assert_same(&format!("{args:?}"), &before, &s.snapshot("d"));
    }
}

#[test]
fn a_bare_m_in_the_config_file_is_refused_before_anything_is_removed() {
    let s = scratch!();
    let before = aged(&s);
    for (toml, args, key) in [
        (
            "[rm]\ngrace = \"6m\"\n",
            &["rm", "-r", "--background", "d"][..],
            "[rm] grace",
        ),
        (
            "[rm]\nmax_latency = \"6m\"\n",
            &["rm", "-r", "d"],
            "[rm] max_latency",
        ),
        (
            "[prune.p]\ndirs = [\"d\"]\nolder_than = \"6m\"\n",
            &["prune", "--policy", "p"],
            "[prune.p] older_than",
        ),
        (
            "[prune.p]\ndirs = [\"d\"]\nkeep_within = \"6m\"\n",
            &["prune", "--policy", "p"],
            "[prune.p] keep_within",
        ),
    ] {
        let conf = s.path("reclaim.toml");
        std::fs::write(&conf, toml).unwrap();
        let o = s
            .cmd(args)
            .env("RECLAIM_CONFIG", &conf)
            .env("RECLAIM_NO_SPAWN", "1")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{toml}");
        let err = util::stderr_of(&o);
        assert!(
            err.contains(key) && err.contains("6m: minutes or months? say 6min or 6mo"),
            "{toml}: {err}"
        );
        util::assert_same(toml, &before, &s.snapshot("d"));
    }
}

/// The units the issue's sysadmin reached for: `--older-than 1y` in rm, `--keep-within 2w`
/// and `--older-than 6mo` in prune, long forms too.
#[test]
fn years_months_and_weeks_work_in_rm_and_prune() {
    let s = scratch!();
    aged(&s);
    for args in [
        &["prune", "-n", "--keep-within", "2w", "d"][..],
        &["prune", "-n", "--older-than", "6mo", "d"],
        &["prune", "-n", "--older-than", "6 months", "d"],
    ] {
        let o = s.cmd(args).env("RECLAIM_NO_SPAWN", "1").output().unwrap();
        util::assert_success(&o);
        let out = util::stdout_of(&o);
        assert!(
            out.contains("plan: remove 1 of 2 entries"),
            "{args:?}: {out}"
        );
    }
    s.rm(&["-r", "--older-than", "1y", "d"]).assert().success();
    assert!(!s.exists("d/db-1.tar") && s.exists("d/db-2.tar"));
}
