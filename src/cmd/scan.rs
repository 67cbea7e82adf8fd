//! `reclaim scan`: joins an MPI job if there is one, scans (`engine::scan`) with a progress
//! line on the terminal (`ui::scan`), prints the report (text or one JSON object) and picks the
//! exit code: 0 all read, 1 some paths could not be read (each named on stderr).

use crate::cmd::exit::Exit;
use std::io::Write;
use std::process::ExitCode;

/// What `reclaim scan` was asked.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    pub scan: crate::engine::scan::ScanOptions,
    pub json: bool,
    pub mpi: bool,
}

/// `reclaim scan`.
pub fn run(o: &ScanOptions) -> ExitCode {
    let _job = match crate::engine::spread::start(o.mpi) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("reclaim scan: {e}");
            return Exit::Usage.into();
        }
    };
    let progress = crate::ui::scan::Progress::start();
    let scanned = crate::engine::scan::run(&o.scan, &progress);
    let code = ExitCode::from(Exit::failed_if(scanned.failed));
    if let Some(Err(e)) = &scanned.export {
        eprintln!("reclaim scan: {e}");
        if scanned.report.is_none() {
            return Exit::Usage.into();
        }
    }
    // Under MPI, rank 0 prints the report for all ranks.
    let Some(report) = scanned.report else {
        return code;
    };
    progress.clear();
    let text = if o.json {
        serde_json::to_string(&report).expect("scan report serializes") + "\n"
    } else {
        crate::ui::scan::human(&report)
    };
    // A closed stdout (`| head`) is not an error worth a panic.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    code
}
