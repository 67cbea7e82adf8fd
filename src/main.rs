//! The `reclaim` binary: GNU `rm` mode when invoked as `rm`, else the command line
//! (`reclaim::parse`) → the command (`reclaim::run`) → the exit status; and the SIGPIPE
//! policy of every command. Its entry is the C `main`, without std's runtime start
//! (`reclaim::startup` says why and does what of it reclaim needs).

#![cfg_attr(not(test), no_main)]

use reclaim::Exit;
use std::process::ExitCode;

#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    reclaim::startup::begin();
    reclaim::startup::exit(run())
}

#[cfg_attr(test, allow(dead_code))]
fn run() -> ExitCode {
    // Before any thread starts: the locale's character set decides how names are quoted.
    reclaim::utf8_locale();
    // `reclaim` in ps/pgrep/top, also when started as /proc/self/exe (a reaper, a child).
    let _ = rustix::thread::set_name(c"reclaim");
    let args: Vec<_> = std::env::args_os().collect();
    // Through a link or copy named `rm`, reclaim is GNU rm (src/cmd/gnu/): `rm -v | head`
    // ends as GNU's does, killed by SIGPIPE, silently.
    if let Some(argv0) = args.first().filter(|a| reclaim::invoked_as_rm(a)) {
        reclaim::default_sigpipe();
        return reclaim::rm_main(argv0, &args[1..]);
    }
    let invocation = match reclaim::parse(args) {
        Ok(i) => i,
        Err(reclaim::Error::Clap(e)) => e.exit(),
        Err(reclaim::Error::Usage { warnings, message }) => {
            for w in warnings {
                eprintln!("reclaim: config: {w}");
            }
            eprintln!("{message}");
            return Exit::Usage.into();
        }
    };
    // A closed stdout (`reclaim status | head -1`) ends the command quietly, as for any Unix
    // filter, instead of a panic on EPIPE (`BrokenPipe`). Not for a reaper: its work must not
    // stop because whoever read its output went away (SIGPIPE stays ignored; it stops at
    // consistent points on SIGTERM).
    if !invocation.is_reaper() {
        reclaim::default_sigpipe();
    }
    reclaim::run(invocation)
}
