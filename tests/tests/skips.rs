//! What the run says about skips at its end (issue 26): the list of the tests that skipped
//! themselves, or, when none did, one line saying so (a root run shows that it ran everything).
//! The test binary runs itself on `skip_probe` alone, once asked to skip and once not.

use std::process::Command;

use crate::util;

/// Asked to (`RECLAIM_TEST_SKIP_PROBE` set), skips itself; otherwise passes. Only for
/// `the_run_says_whether_any_test_skipped_itself`.
#[test]
fn skip_probe() {
    if std::env::var_os("RECLAIM_TEST_SKIP_PROBE").is_some() {
        util::skip!("asked to by the_run_says_whether_any_test_skipped_itself");
    }
}

#[test]
fn the_run_says_whether_any_test_skipped_itself() {
    let me = std::env::current_exe().unwrap();
    let run = |skip: bool| {
        let mut c = Command::new(&me);
        c.args(["--exact", "skips::skip_probe", "--test-threads", "1"]);
        if skip {
            c.env("RECLAIM_TEST_SKIP_PROBE", "1");
        } else {
            c.env_remove("RECLAIM_TEST_SKIP_PROBE");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let none = run(false);
    assert!(
        none.ends_with("\nreclaim tests: no test skipped itself\n"),
        "stderr: {none:?}"
    );
    let one = run(true);
    assert!(
        one.contains(
            "\nreclaim tests: 1 skipped, in full or in part (counted as passed above):\n  \
             skips::skip_probe: asked to by the_run_says_whether_any_test_skipped_itself\n"
        ),
        "stderr: {one:?}"
    );
    assert!(!one.contains("no test skipped itself"), "stderr: {one:?}");
}
