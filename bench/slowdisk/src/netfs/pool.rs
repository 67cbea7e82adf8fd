//! `Pool`: one mount's RPC slot table.
//!
//! The FUSE session thread never waits: each request that would be an RPC becomes a
//! job on this pool's queue. The pool has exactly `slots` worker threads, so at most
//! `slots` operations of this mount are in flight (a Linux NFS client's RPC slot
//! table); the rest queue in arrival order. A worker takes a job, then a unit of the
//! server gate (shared by every mount of one backing directory), then runs the job's
//! real backing call, sleeps until `start + rtt`, sends the reply and frees the slot.
//! The backing call's own time is inside the RTT (we sleep until an absolute deadline),
//! so N concurrent callers see about N operations per RTT, up to the caps.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::gate::Gate;
use super::stats::{Op, Stats};

/// Sends the reply (runs after the deadline). Returns whether the operation succeeded.
pub type Done = Box<dyn FnOnce() -> bool + Send>;
/// The real backing call; returns the reply to send once the RTT has passed.
pub type Work = Box<dyn FnOnce() -> Done + Send>;

struct Job {
    op: Op,
    arrived: Instant,
    work: Work,
}

struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

struct Inner {
    queue: Mutex<Queue>,
    ready: Condvar,
    rtt: Duration,
    server: Arc<Gate>,
    stats: Arc<Stats>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    submitted: AtomicUsize,
}

pub struct Pool {
    inner: Arc<Inner>,
    slots: usize,
}

impl Pool {
    /// Start `slots` (at least 1) worker threads named `name-N`.
    pub fn new(
        name: &str,
        slots: usize,
        rtt: Duration,
        server: Arc<Gate>,
        stats: Arc<Stats>,
    ) -> std::io::Result<Pool> {
        let slots = slots.max(1);
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            rtt,
            server,
            stats,
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            submitted: AtomicUsize::new(0),
        });
        for i in 0..slots {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .stack_size(256 << 10)
                .spawn(move || worker(&inner))?;
        }
        Ok(Pool { inner, slots })
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn rtt(&self) -> Duration {
        self.inner.rtt
    }

    /// Queue one RPC. Never blocks (beyond the queue's lock).
    pub fn submit(&self, op: Op, work: Work) {
        let job = Job {
            op,
            arrived: Instant::now(),
            work,
        };
        self.inner.submitted.fetch_add(1, Ordering::Relaxed);
        let mut q = self.inner.queue.lock().unwrap();
        q.jobs.push_back(job);
        drop(q);
        self.inner.ready.notify_one();
    }

    /// Operations of this mount in flight now / at most so far.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::Relaxed)
    }

    pub fn max_in_flight(&self) -> usize {
        self.inner.max_in_flight.load(Ordering::Relaxed)
    }

    /// RPCs submitted to this mount so far.
    pub fn submitted(&self) -> usize {
        self.inner.submitted.load(Ordering::Relaxed)
    }

    /// Jobs waiting for a slot now.
    pub fn queued(&self) -> usize {
        self.inner.queue.lock().unwrap().jobs.len()
    }
}

impl Drop for Pool {
    /// Workers finish the queued jobs, then exit.
    fn drop(&mut self) {
        self.inner.queue.lock().unwrap().closed = true;
        self.inner.ready.notify_all();
    }
}

fn worker(inner: &Inner) {
    // The default 50 us timer slack would add to every round trip.
    // SAFETY: prctl with integer arguments only affects this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
    loop {
        let job = {
            let mut q = inner.queue.lock().unwrap();
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if q.closed {
                    return;
                }
                q = inner.ready.wait(q).unwrap();
            }
        };
        let server = inner.server.acquire();
        let start = Instant::now();
        let n = inner.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        inner.max_in_flight.fetch_max(n, Ordering::Relaxed);
        let done = (job.work)();
        let served = start.elapsed();
        let deadline = start + inner.rtt;
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        let ok = done();
        inner.in_flight.fetch_sub(1, Ordering::Relaxed);
        drop(server);
        inner.stats.record(
            job.op,
            ok,
            start - job.arrived,
            served,
            job.arrived.elapsed(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    const RTT: Duration = Duration::from_millis(40);

    /// Submit `n` jobs at once; wait for all replies; return the elapsed time.
    fn burst(pool: &Pool, n: usize, op: Op) -> Duration {
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        for _ in 0..n {
            let tx = tx.clone();
            pool.submit(
                op,
                Box::new(move || {
                    Box::new(move || {
                        tx.send(Instant::now()).unwrap();
                        true
                    })
                }),
            );
        }
        for _ in 0..n {
            rx.recv_timeout(Duration::from_secs(10)).expect("reply");
        }
        t0.elapsed()
    }

    /// The worker records a job just after sending its reply: wait for that.
    fn settle(p: &Pool, s: &Stats, op: Op, n: u64) {
        let t0 = Instant::now();
        while (s.count(op) < n || p.in_flight() > 0) && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn pool(slots: usize, server: &Arc<Gate>, stats: &Arc<Stats>) -> Pool {
        Pool::new("t", slots, RTT, server.clone(), stats.clone()).unwrap()
    }

    #[test]
    fn one_op_costs_one_rtt() {
        let (g, s) = (Arc::new(Gate::new(None)), Arc::new(Stats::new()));
        let p = pool(4, &g, &s);
        let el = burst(&p, 1, Op::Lookup);
        assert!(el >= RTT, "{el:?}");
        assert!(el < RTT * 3, "{el:?}");
        settle(&p, &s, Op::Lookup, 1);
        assert_eq!(s.count(Op::Lookup), 1);
    }

    /// Fewer callers than slots: all overlap, one RTT in all.
    #[test]
    fn concurrent_ops_overlap_up_to_the_slots() {
        let (g, s) = (Arc::new(Gate::new(None)), Arc::new(Stats::new()));
        let p = pool(16, &g, &s);
        let el = burst(&p, 16, Op::Getattr);
        assert!(el >= RTT, "{el:?}");
        assert!(el < RTT * 3, "16 ops on 16 slots took {el:?}");
        settle(&p, &s, Op::Getattr, 16);
        assert_eq!(p.max_in_flight(), 16);
        assert_eq!(p.in_flight(), 0);
        assert_eq!(s.count(Op::Getattr), 16);
    }

    /// More callers than slots: ceil(n / slots) RTTs, never more than `slots` in flight.
    #[test]
    fn slots_cap_the_ops_in_flight() {
        let (g, s) = (Arc::new(Gate::new(None)), Arc::new(Stats::new()));
        let p = pool(4, &g, &s);
        let el = burst(&p, 16, Op::Unlink);
        assert_eq!(p.max_in_flight(), 4);
        assert!(el >= RTT * 4, "{el:?}");
        assert!(el < RTT * 7, "{el:?}");
        assert_eq!(p.queued(), 0);
        assert_eq!(p.submitted(), 16);
    }

    /// Two mounts of 8 slots sharing a server cap of 4: 16 ops take 4 RTTs and the
    /// server never has more than 4 in flight.
    #[test]
    fn server_cap_is_shared_by_mounts() {
        let (g, s) = (Arc::new(Gate::new(Some(4))), Arc::new(Stats::new()));
        let (a, b) = (pool(8, &g, &s), pool(8, &g, &s));
        let t0 = Instant::now();
        std::thread::scope(|sc| {
            sc.spawn(|| burst(&a, 8, Op::Lookup));
            sc.spawn(|| burst(&b, 8, Op::Lookup));
        });
        let el = t0.elapsed();
        assert_eq!(g.max_in_use(), 4);
        assert!(a.max_in_flight() <= 4 && b.max_in_flight() <= 4);
        assert!(el >= RTT * 4, "{el:?}");
        assert!(el < RTT * 7, "{el:?}");
        settle(&a, &s, Op::Lookup, 16);
        assert_eq!(s.count(Op::Lookup), 16);
    }

    /// The backing call's own time counts toward the RTT, and a reply's error shows.
    #[test]
    fn service_time_is_inside_the_rtt() {
        let (g, s) = (Arc::new(Gate::new(None)), Arc::new(Stats::new()));
        let p = pool(1, &g, &s);
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        p.submit(
            Op::Mkdir,
            Box::new(move || {
                std::thread::sleep(RTT / 2);
                Box::new(move || {
                    tx.send(()).unwrap();
                    false
                })
            }),
        );
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let el = t0.elapsed();
        assert!(
            el >= RTT && el < RTT * 3 / 2 + Duration::from_millis(15),
            "{el:?}"
        );
        settle(&p, &s, Op::Mkdir, 1);
        assert_eq!(s.errors(Op::Mkdir), 1);
    }
}
