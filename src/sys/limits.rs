//! Process limits: raise the soft open-file limit to the hard one, as fast removers do, so a
//! wide parallel walk never meets EMFILE. The engine's own fd budget stays far below it.

use rustix::process::{getrlimit, setrlimit, Resource};

/// Raises the soft limit to the hard one; returns the soft limit now in force.
pub fn raise_nofile() -> u64 {
    let mut lim = getrlimit(Resource::Nofile);
    if let (Some(cur), Some(max)) = (lim.current, lim.maximum) {
        if cur < max {
            lim.current = Some(max);
            if setrlimit(Resource::Nofile, lim).is_ok() {
                return max;
            }
        }
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// The directory-fd budget that fits under `nofile`: half of what is left after stdio, a
/// margin, and a few fds per worker in flight.
pub fn fd_budget(requested: usize, nofile: u64, threads: usize) -> usize {
    let spare = nofile.saturating_sub(16 + 4 * threads as u64) / 2;
    requested.min(spare.try_into().unwrap_or(usize::MAX)).max(2)
}

#[cfg(test)]
mod tests {
    #[test]
    fn budget_fits_under_low_limits() {
        assert_eq!(super::fd_budget(256, 1 << 20, 2), 256);
        assert_eq!(super::fd_budget(256, 128, 2), 52);
        assert_eq!(super::fd_budget(256, 10, 2), 2);
    }
}
