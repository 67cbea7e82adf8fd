//! Concurrency pieces of the engine, free of any file-system knowledge: a LIFO work queue that
//! knows when all work is done. Must never block a worker forever:
//! every wait has a matching wake-up under the same lock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// A LIFO work queue; workers exit when nothing is queued or running.
pub struct Queue<T> {
    tasks: Mutex<Vec<T>>,
    ready: Condvar,
    outstanding: AtomicUsize,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            tasks: Mutex::new(Vec::new()),
            ready: Condvar::new(),
            outstanding: AtomicUsize::new(0),
        }
    }
}

impl<T> Queue<T> {
    /// Queues a task; it counts as outstanding until `done` is called for it.
    pub fn push(&self, task: T) {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        self.tasks.lock().expect("queue lock").push(task);
        self.ready.notify_one();
    }

    /// Keeps the workers waiting for tasks until `done` is called once more (work may come
    /// from outside: another process of a shared walk).
    pub fn hold(&self) {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
    }

    /// Tasks queued (not running).
    pub fn len(&self) -> usize {
        self.tasks.lock().expect("queue lock").len()
    }

    /// Takes queued tasks out, oldest first: of those `pick` accepts, as many as `how_many`
    /// says for their number. Each must be marked `done` by the caller.
    pub fn take_oldest(
        &self,
        pick: impl Fn(&T) -> bool,
        how_many: impl FnOnce(usize) -> usize,
    ) -> Vec<T> {
        let mut tasks = self.tasks.lock().expect("queue lock");
        let mut want = how_many(tasks.iter().filter(|t| pick(t)).count());
        let mut taken = Vec::new();
        let mut kept = Vec::with_capacity(tasks.len());
        for t in tasks.drain(..) {
            if want > 0 && pick(&t) {
                taken.push(t);
                want -= 1;
            } else {
                kept.push(t);
            }
        }
        *tasks = kept;
        taken
    }

    /// The newest task `pick` accepts, waiting while none is and others run (`passed_over`
    /// is called before a wait with tasks queued that `pick` refused); `None` once nothing is
    /// queued or running. Whatever makes `pick` accept more must call `wake`.
    pub fn pop_if(&self, pick: impl Fn(&T) -> bool, passed_over: impl Fn()) -> Option<T> {
        let mut tasks = self.tasks.lock().expect("queue lock");
        loop {
            if let Some(i) = tasks.iter().rposition(&pick) {
                return Some(tasks.remove(i));
            }
            if self.outstanding.load(Ordering::SeqCst) == 0 {
                return None;
            }
            if !tasks.is_empty() {
                passed_over();
            }
            tasks = self.ready.wait(tasks).expect("queue lock");
        }
    }

    /// Wakes every waiting worker to look again.
    pub fn wake(&self) {
        drop(self.tasks.lock().expect("queue lock"));
        self.ready.notify_all();
    }

    /// Marks one popped task finished.
    pub fn done(&self) {
        if self.outstanding.fetch_sub(1, Ordering::SeqCst) == 1 {
            // Take the lock so a worker between its check and its wait cannot miss this.
            drop(self.tasks.lock().expect("queue lock"));
            self.ready.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn workers_stop_when_spawned_work_is_done() {
        // Each task n > 0 spawns task n - 1: the queue must not end while any is running.
        let q = Queue::default();
        q.push(200u32);
        let ran = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while let Some(n) = q.pop_if(|_| true, || {}) {
                        if n > 0 {
                            q.push(n - 1);
                        }
                        ran.fetch_add(1, Ordering::Relaxed);
                        q.done();
                    }
                });
            }
        });
        assert_eq!(ran.load(Ordering::Relaxed), 201);
    }
}
