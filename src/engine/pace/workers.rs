//! The one owner of changes to a walk's worker gate (`walk::Gate`). Three control loops steer
//! it: the concurrency controller (`concurrency.rs`) sets the limit, what measurement found
//! pays; the latency governor (`tree.rs`) holds a ceiling over it while others are hurt (one
//! worker to start with on a rotational disk); the space-pressure yield (`tree.rs`) lifts that
//! ceiling while the file system is short of space. Each changes the gate through its own
//! method here, so what each may change is said in one place: the controller only the limit,
//! the governor and the yield only the ceiling; the lower of the two holds. Counts only; never
//! touches a file.

use crate::engine::walk::Gate;

/// The hands on one gate.
#[derive(Clone, Copy, Debug)]
pub struct Steer<'a>(&'a Gate);

impl<'a> Steer<'a> {
    pub fn of(gate: &'a Gate) -> Self {
        Steer(gate)
    }

    /// The concurrency controller: `n` workers pay, as measured.
    pub fn measured(self, n: usize) {
        self.0.set(n);
    }

    /// The governor: at most `n` workers while others are hurt (a miss, or a rotational disk's
    /// start); a ceiling at or above the measured limit binds nothing and is lifted.
    pub fn hold(self, n: usize) {
        self.0
            .set_cap(if n >= self.0.limit() { usize::MAX } else { n });
    }

    /// The governor's first hold on a rotational disk: one worker, which earns more after good
    /// windows (whatever the limit measured so far).
    pub fn start_with_one(self) {
        self.0.set_cap(1);
    }

    /// The space-pressure yield: no ceiling while the file system is short of space (the
    /// measured limit still holds, as it would for `rm -r`).
    pub fn yield_to_space(self) {
        self.0.set_cap(usize::MAX);
    }
}
