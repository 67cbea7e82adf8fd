//! GNU `rm` mode's voice on the terminal: the engine's GNU walk says and asks through `Talk`;
//! this words each message and question as coreutils does (prefixed with the program name),
//! prints `-v`'s lines on stdout, and reads the answers (`prompt.rs`).

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

use rustix::io::Errno;

use super::prompt::{file_type_name, yes_or_no};
use crate::engine::gnu::{Question, Said, Talk};
use crate::sys::error::errno_text;

/// Messages and questions on stderr, `-v`'s lines on `out`.
pub struct Terminal<'p, W: Write> {
    program: &'p str,
    out: W,
}

impl<'p, W: Write> Terminal<'p, W> {
    pub fn new(program: &'p str, out: W) -> Self {
        Terminal { program, out }
    }

    pub fn into_output(self) -> W {
        self.out
    }

    /// One diagnostic line on stderr, with the program name.
    fn line(&self, line: &str) {
        eprintln!("{}: {line}", self.program);
    }
}

fn q(path: &[u8]) -> String {
    crate::sys::quote::quote(OsStr::from_bytes(path))
}

impl<W: Write> Talk for Terminal<'_, W> {
    fn removed(&mut self, path: &[u8], dir: bool) {
        let what = if dir { "removed directory" } else { "removed" };
        let _ = writeln!(self.out, "{what} {}", q(path));
    }

    fn say(&mut self, said: Said<'_>) {
        match said {
            Said::CannotRemove(path, reason) => {
                self.line(&format!("cannot remove {}: {reason}", q(path)))
            }
            Said::TraversalFailed(path) => self.line(&format!(
                "traversal failed: {}: {}",
                q(path),
                errno_text(Errno::NOENT)
            )),
            Said::DotOrDotDot(path) => self.line(&format!(
                "refusing to remove '.' or '..' directory: skipping {}",
                q(path)
            )),
            Said::Root {
                path,
                preserve_root,
            } => {
                if path == b"/" {
                    self.line("it is dangerous to operate recursively on '/'");
                } else {
                    self.line(&format!(
                        "it is dangerous to operate recursively on {} (same as '/')",
                        q(path)
                    ));
                }
                if preserve_root {
                    self.line("use --no-preserve-root to override this failsafe");
                } else {
                    self.line("reclaim never removes '/', not even with --no-preserve-root");
                }
            }
            Said::ParentUnstated { parent, path } => self.line(&format!(
                "failed to stat {}: skipping {}",
                q(parent),
                q(path)
            )),
            Said::OtherDevice {
                path,
                preserve_all_root,
            } => {
                self.line(&format!(
                    "skipping {}, since it's on a different device",
                    q(path)
                ));
                if preserve_all_root {
                    self.line("and --preserve-root=all is in effect");
                }
            }
            Said::Circular(path) => self.line(&format!(
                "WARNING: Circular directory structure.\nThis almost certainly means that you have a corrupted file system.\nNOTIFY YOUR SYSTEM MANAGER.\nThe following directory is part of the cycle:\n  {}\n",
                q(path)
            )),
        }
    }

    fn ask(&mut self, question: Question<'_>) -> bool {
        let _ = self.out.flush();
        let program = self.program;
        let protected = |p: bool| if p { "write-protected " } else { "" };
        let text = match question {
            Question::Inaccessible(path) => format!(
                "{program}: attempt removal of inaccessible directory {}? ",
                q(path)
            ),
            Question::Descend { path, protected: p } => format!(
                "{program}: descend into {}directory {}? ",
                protected(p),
                q(path)
            ),
            Question::Remove {
                path,
                protected: p,
                facts,
            } => format!(
                "{program}: remove {}{} {}? ",
                protected(p),
                file_type_name(facts),
                q(path)
            ),
        };
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
        drop(err);
        yes_or_no()
    }
}
