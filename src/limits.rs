//! Process limits: raise the soft open-file limit to the hard one, as fast removers do, so a
//! wide parallel walk never meets EMFILE. The engine's own fd budget stays far below it.

use rustix::process::{getrlimit, setrlimit, Resource};

pub fn raise_nofile() {
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        lim.current = lim.maximum;
        let _ = setrlimit(Resource::Nofile, lim);
    }
}
