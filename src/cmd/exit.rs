//! The exit statuses reclaim ends with, one meaning each: 0 done, 1 something failed (the rest
//! was done), 2 a usage error (nothing was done), 128 + N stopped by signal N. GNU `rm` mode
//! says every error with 1, as GNU `rm` does.

use std::process::ExitCode;

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked was done.
    Done,
    /// Something failed; what could be done was done.
    Failed,
    /// The command line, the configuration or an argument was wrong: nothing was done.
    Usage,
    /// Stopped by this signal at a consistent point.
    Signal(i32),
}

impl Exit {
    /// `Failed` if `failed`, else `Done`.
    pub fn failed_if(failed: bool) -> Exit {
        if failed {
            Exit::Failed
        } else {
            Exit::Done
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        match e {
            Exit::Done => ExitCode::SUCCESS,
            Exit::Failed => ExitCode::from(1),
            Exit::Usage => ExitCode::from(2),
            Exit::Signal(sig) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_has_its_status() {
        let code = |e: Exit| format!("{:?}", ExitCode::from(e));
        assert_eq!(code(Exit::Done), format!("{:?}", ExitCode::SUCCESS));
        assert_eq!(code(Exit::Failed), format!("{:?}", ExitCode::from(1)));
        assert_eq!(code(Exit::Usage), format!("{:?}", ExitCode::from(2)));
        assert_eq!(code(Exit::Signal(2)), format!("{:?}", ExitCode::from(130)));
        assert_eq!(Exit::failed_if(true), Exit::Failed);
        assert_eq!(Exit::failed_if(false), Exit::Done);
    }
}
