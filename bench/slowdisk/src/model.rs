//! The disk model: owns the presets, the per-request service-time formula and
//! the virtual clock of the head (`head_free_at`).
//!
//! Time is measured in seconds (f64) since the model was created; the caller
//! passes the real arrival time of each request and gets back when the request
//! starts and completes on the emulated disk. Nothing here sleeps or does I/O,
//! so it is fully unit-testable.

/// What a request does to the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    /// Cache flush (FUSE fsync): costs a constant after everything queued.
    Flush,
    /// Discard / punch hole: a metadata-only operation on a real disk.
    Discard,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "R",
            Op::Write => "W",
            Op::Flush => "F",
            Op::Discard => "D",
        }
    }
}

/// Parameters of the model. Times in milliseconds, bandwidth in MB/s (10^6 B/s).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Name of the preset the parameters started from (for the ready line).
    pub name: String,
    /// Seek time for a short (adjacent-track) move.
    pub seek_min_ms: f64,
    /// Full-stroke seek time.
    pub seek_max_ms: f64,
    /// Moves shorter than this many bytes cost `track_seek_ms` instead of the curve.
    pub track_bytes: u64,
    /// Track-to-track seek time.
    pub track_seek_ms: f64,
    /// Spindle speed; 0 = no rotational latency.
    pub rpm: f64,
    /// Media transfer rate.
    pub seq_mbps: f64,
    /// Constant cost added to every request (controller / command overhead).
    pub fixed_latency_ms: f64,
    /// A sequential read/write arriving at most this long after the head went
    /// idle starts when the head went idle, as if the disk had streamed on
    /// (track buffer / prefetch). It forgives the host's turnaround between
    /// queue-depth-1 requests, which would otherwise cap a stream well below
    /// `seq_mbps` (measured ~0.5 ms per request through loop + FUSE).
    pub stream_gap_ms: f64,
    /// Whether non-sequential requests pay seek + rotation (false for SSDs).
    pub mechanical: bool,
    /// Whether the model delays anything at all (false for `none`).
    pub enabled: bool,
}

impl Params {
    /// A named preset: `hdd-7200`, `ssd-sata` or `none`.
    pub fn preset(name: &str) -> Option<Params> {
        let p = match name {
            // A typical 7200 rpm 3.5" SATA disk: 1 ms adjacent-track seek,
            // ~8 ms full stroke (so ~4.7 ms average for uniform random offsets,
            // see `seek_ms`), 150 MB/s media rate.
            "hdd-7200" => Params {
                name: name.into(),
                seek_min_ms: 1.0,
                seek_max_ms: 8.0,
                track_bytes: 1 << 20,
                track_seek_ms: 0.5,
                rpm: 7200.0,
                seq_mbps: 150.0,
                fixed_latency_ms: 0.0,
                stream_gap_ms: 1.0,
                mechanical: true,
                enabled: true,
            },
            // A SATA SSD: 0.1 ms per command, 500 MB/s, no positional cost.
            "ssd-sata" => Params {
                name: name.into(),
                seek_min_ms: 0.0,
                seek_max_ms: 0.0,
                track_bytes: 0,
                track_seek_ms: 0.0,
                rpm: 0.0,
                seq_mbps: 500.0,
                fixed_latency_ms: 0.1,
                stream_gap_ms: 1.0,
                mechanical: false,
                enabled: true,
            },
            "none" => Params {
                name: name.into(),
                seek_min_ms: 0.0,
                seek_max_ms: 0.0,
                track_bytes: 0,
                track_seek_ms: 0.0,
                rpm: 0.0,
                seq_mbps: 0.0,
                fixed_latency_ms: 0.0,
                stream_gap_ms: 0.0,
                mechanical: false,
                enabled: false,
            },
            _ => return None,
        };
        Some(p)
    }

    /// Duration of one full revolution, in ms (0 if no spindle).
    pub fn revolution_ms(&self) -> f64 {
        if self.rpm > 0.0 {
            60_000.0 / self.rpm
        } else {
            0.0
        }
    }

    /// Seek time for a head move of `distance` bytes on a disk of `capacity` bytes:
    /// `seek_min + (seek_max - seek_min) * sqrt(distance / capacity)` (the square
    /// root models the accelerate/coast/decelerate arm); below one track it is
    /// the track-to-track time.
    pub fn seek_ms(&self, distance: u64, capacity: u64) -> f64 {
        if distance < self.track_bytes {
            return self.track_seek_ms;
        }
        let frac = (distance as f64 / capacity.max(1) as f64).min(1.0);
        self.seek_min_ms + (self.seek_max_ms - self.seek_min_ms) * frac.sqrt()
    }

    /// Media transfer time of `len` bytes, in ms.
    pub fn transfer_ms(&self, len: u64) -> f64 {
        if self.seq_mbps > 0.0 {
            len as f64 / (self.seq_mbps * 1e6) * 1e3
        } else {
            0.0
        }
    }

    /// One line for the "ready" message.
    pub fn describe(&self) -> String {
        format!(
            "model={} seek={}..{}ms rpm={} seq={}MB/s fixed={}ms",
            self.name,
            self.seek_min_ms,
            self.seek_max_ms,
            self.rpm,
            self.seq_mbps,
            self.fixed_latency_ms
        )
    }
}

/// When a request runs on the emulated disk (seconds since model start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slot {
    /// When the head started on it: max(arrival, head_free_at).
    pub start: f64,
    /// When it completes; the reply must not be sent before this.
    pub done: f64,
    /// Pure service time (done - start), in seconds.
    pub service: f64,
}

/// The disk: parameters plus head state.
pub struct Disk {
    pub params: Params,
    capacity: u64,
    /// Virtual clock: when the head finishes the last accepted request.
    head_free_at: f64,
    /// Byte just after the previous request (where the head now is).
    head_pos: u64,
    /// State of the deterministic pseudo-random rotational position.
    rng: u64,
}

impl Disk {
    pub fn new(params: Params, capacity: u64) -> Disk {
        Disk {
            params,
            capacity,
            head_free_at: 0.0,
            head_pos: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    pub fn set_capacity(&mut self, capacity: u64) {
        self.capacity = capacity;
    }

    /// xorshift64*, mapped to [0, 1). Deterministic so runs are repeatable.
    fn next_unit(&mut self) -> f64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Service time in ms of `op` at `off`/`len`, given the current head
    /// position; moves the head.
    ///
    /// Rotational latency is drawn uniformly from [0, one revolution) with a
    /// seeded PRNG rather than using the constant average (half a revolution):
    /// the mean is the same, but latency percentiles (fio clat, fsync tails, a
    /// database's stall distribution) get the spread a real disk has, and runs
    /// stay reproducible.
    pub fn service_ms(&mut self, op: Op, off: u64, len: u64) -> f64 {
        let p = &self.params;
        if !p.enabled {
            return 0.0;
        }
        let fixed = p.fixed_latency_ms;
        match op {
            // Write-through disk: nothing is cached, so a flush only costs the
            // controller a round trip, modelled as the average rotational latency.
            Op::Flush => fixed + p.revolution_ms() / 2.0,
            // A discard touches no media: command overhead only.
            Op::Discard => fixed,
            Op::Read | Op::Write => {
                let transfer = p.transfer_ms(len);
                let positioning = if p.mechanical && off != self.head_pos {
                    let distance = off.abs_diff(self.head_pos);
                    let seek = p.seek_ms(distance, self.capacity);
                    let rev = p.revolution_ms();
                    seek + rev * self.next_unit()
                } else {
                    0.0
                };
                self.head_pos = off + len;
                fixed + positioning + transfer
            }
        }
    }

    /// Accept a request arriving at `now` (seconds): it starts when the head is
    /// free (or, for a stream, when it went idle: see `stream_gap_ms`), and the
    /// head is then busy until it completes.
    pub fn submit(&mut self, now: f64, op: Op, off: u64, len: u64) -> Slot {
        let streaming = matches!(op, Op::Read | Op::Write)
            && off == self.head_pos
            && now - self.head_free_at <= self.params.stream_gap_ms / 1e3;
        let service = self.service_ms(op, off, len) / 1e3;
        let start = if streaming {
            self.head_free_at
        } else {
            now.max(self.head_free_at)
        };
        let done = start + service;
        self.head_free_at = done;
        Slot {
            start,
            done,
            service,
        }
    }

    #[cfg(test)]
    pub fn head_free_at(&self) -> f64 {
        self.head_free_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn hdd() -> Disk {
        Disk::new(Params::preset("hdd-7200").unwrap(), 20 * GIB)
    }

    #[test]
    fn presets_exist_and_unknown_is_rejected() {
        let h = Params::preset("hdd-7200").unwrap();
        assert_eq!(h.rpm, 7200.0);
        assert!((h.revolution_ms() - 8.333).abs() < 0.001);
        assert!(Params::preset("ssd-sata").unwrap().enabled);
        assert!(!Params::preset("none").unwrap().enabled);
        assert!(Params::preset("floppy").is_none());
    }

    #[test]
    fn sequential_costs_only_transfer() {
        let mut d = hdd();
        d.service_ms(Op::Read, 0, 4096); // head now at 4096
        let t = d.service_ms(Op::Read, 4096, 1 << 20);
        // 1 MiB at 150 MB/s = 6.99 ms
        assert!((t - 6.990).abs() < 0.01, "{t}");
        // 150 MB/s end to end for a stream of 1 MiB requests.
        let total: f64 = (1..=100)
            .map(|i| d.service_ms(Op::Write, 4096 + i * (1 << 20), 1 << 20))
            .sum();
        let mbps = 100.0 * (1 << 20) as f64 / 1e6 / (total / 1e3);
        assert!((mbps - 150.0).abs() < 0.5, "{mbps}");
    }

    #[test]
    fn random_costs_seek_and_rotation() {
        let mut d = hdd();
        // Full-stroke move: seek_max + rotation in [0, 8.33) + transfer.
        let t = d.service_ms(Op::Read, 20 * GIB - 4096, 4096);
        assert!((8.0..8.0 + 8.34 + 0.03).contains(&t), "{t}");
        // Short move (< 1 MiB): track-to-track only.
        let t = d.service_ms(Op::Read, 20 * GIB - 600_000, 4096);
        assert!((0.5..0.5 + 8.34 + 0.03).contains(&t), "{t}");
    }

    #[test]
    fn random_4k_iops_in_target_range() {
        let mut d = hdd();
        let mut x: u64 = 12345;
        let n = 20_000;
        let mut total = 0.0;
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let off = (x >> 33) % (20 * GIB / 4096) * 4096;
            total += d.service_ms(Op::Read, off, 4096);
        }
        let iops = n as f64 / (total / 1e3);
        assert!((100.0..150.0).contains(&iops), "iops {iops}");
    }

    #[test]
    fn head_free_at_queues_requests() {
        let mut d = hdd();
        // Two sequential 1.5 MB writes arriving together: the second waits.
        let a = d.submit(1.0, Op::Write, 0, 1_500_000);
        let b = d.submit(1.0, Op::Write, 1_500_000, 1_500_000);
        assert_eq!(a.start, 1.0);
        assert!((a.done - 1.010).abs() < 1e-9);
        assert_eq!(b.start, a.done);
        assert!((b.done - 1.020).abs() < 1e-9);
        assert_eq!(d.head_free_at(), b.done);
        // A flush right after waits for both, then costs half a revolution.
        let f = d.submit(1.0, Op::Flush, 0, 0);
        assert_eq!(f.start, b.done);
        assert!((f.service - 0.004_166_7).abs() < 1e-6);
        // A request arriving after the head went idle starts on arrival.
        let c = d.submit(5.0, Op::Write, 3_000_000, 1_500_000);
        assert_eq!(c.start, 5.0);
    }

    #[test]
    fn stream_forgives_short_host_gaps_only() {
        let mut d = hdd();
        let a = d.submit(1.0, Op::Read, 0, 1_500_000); // done at 1.010
                                                       // Sequential, 0.5 ms after the head went idle: starts at 1.010.
        let b = d.submit(1.0105, Op::Read, 1_500_000, 1_500_000);
        assert_eq!(b.start, a.done);
        // Sequential but 5 ms late: no credit.
        let c = d.submit(b.done + 0.005, Op::Read, 3_000_000, 1_500_000);
        assert_eq!(c.start, b.done + 0.005);
        // Not sequential: no credit even if on time (and it pays a seek).
        let e = d.submit(c.done + 0.0005, Op::Read, 10 * GIB, 4096);
        assert_eq!(e.start, c.done + 0.0005);
        assert!(e.service > 0.001);
    }

    #[test]
    fn ssd_and_none() {
        let mut s = Disk::new(Params::preset("ssd-sata").unwrap(), 20 * GIB);
        let t = s.service_ms(Op::Read, 7 * GIB, 4096);
        assert!((t - (0.1 + 4096.0 / 500e3)).abs() < 1e-9, "{t}");
        let t2 = s.service_ms(Op::Read, GIB, 4096);
        assert_eq!(t, t2, "no positional cost on an SSD");
        let mut n = Disk::new(Params::preset("none").unwrap(), 20 * GIB);
        assert_eq!(n.service_ms(Op::Read, 7 * GIB, 1 << 20), 0.0);
        assert_eq!(n.submit(2.0, Op::Flush, 0, 0).done, 2.0);
    }

    #[test]
    fn rotation_is_deterministic() {
        let seq = |mut d: Disk| -> Vec<f64> {
            (0..5)
                .map(|i| d.service_ms(Op::Read, (i * 7919 % 13) * GIB, 4096))
                .collect()
        };
        assert_eq!(seq(hdd()), seq(hdd()));
    }
}
