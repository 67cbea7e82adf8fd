//! The arguments of `--background`/`--wait` that no trash took, grouped by why: a reason that
//! holds for a whole file system (no space for a trash, read-only) comes back for every
//! argument on it, and is said once with the paths it stopped, not once per path. Prints
//! nothing: `Events` says the groups.

use std::path::PathBuf;

/// Paths by the reason they share, in the order the reasons were first met.
#[derive(Debug, Default)]
pub struct ByReason(Vec<(String, Vec<PathBuf>)>);

impl ByReason {
    pub fn add(&mut self, why: String, path: PathBuf) {
        match self.0.iter_mut().find(|(w, _)| *w == why) {
            Some((_, paths)) => paths.push(path),
            None => self.0.push((why, vec![path])),
        }
    }

    /// The groups so far, emptied.
    pub fn take(&mut self) -> Vec<(String, Vec<PathBuf>)> {
        std::mem::take(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_group_by_reason_in_the_order_met() {
        let mut g = ByReason::default();
        g.add("full".into(), "a".into());
        g.add("read-only".into(), "b".into());
        g.add("full".into(), "c".into());
        let groups = g.take();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0], ("full".into(), vec!["a".into(), "c".into()]));
        assert_eq!(groups[1].1, vec![PathBuf::from("b")]);
        assert!(g.take().is_empty());
    }
}
