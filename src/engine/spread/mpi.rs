//! The MPI transport (`--features mpi`, the `mpi` crate on the system's Open MPI or MPICH):
//! point-to-point messages of bytes on one tag of the world communicator. Sends are
//! non-blocking (`MPI_Isend` of a buffer kept until the request completes), so no rank ever
//! waits for another to receive; receives probe (`MPI_Improbe`) and take what arrived. All
//! MPI calls go through one lock (`MPI_THREAD_SERIALIZED`).

use std::sync::Mutex;

use mpi::environment::Universe;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Threading;

use super::Transport;

const TAG: i32 = 0x7ec1;

/// A send in flight: its request and the buffer it reads, freed once the request completes.
struct InFlight {
    request: Request<'static, [u8], StaticScope>,
    buffer: *mut [u8],
}

struct State {
    world: SimpleCommunicator,
    sends: Vec<InFlight>,
}

// SAFETY: MPI is initialized with MPI_THREAD_SERIALIZED and every call on these handles is
// made under the one `Mutex` of `Mpi`; the raw buffers are owned by their `InFlight`.
unsafe impl Send for State {}

pub struct Mpi {
    state: Mutex<State>,
    rank: usize,
    size: usize,
}

/// Keeps MPI initialized; dropping it (at the end of `main`) finalizes MPI.
pub struct Guard {
    _universe: Universe,
}

/// Initializes MPI and registers this process as a rank of the job (`super::job`).
pub fn join() -> Result<Guard, super::JoinError> {
    let (universe, threading) = mpi::initialize_with_threading(Threading::Serialized)
        .ok_or(super::JoinError::AlreadyInitialized)?;
    if threading < Threading::Serialized {
        return Err(super::JoinError::Threading(threading));
    }
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    super::set_job(Box::new(Mpi {
        state: Mutex::new(State {
            world,
            sends: Vec::new(),
        }),
        rank,
        size,
    }));
    Ok(Guard {
        _universe: universe,
    })
}

impl State {
    /// Frees the buffers of completed sends.
    fn reap(&mut self) {
        for s in std::mem::take(&mut self.sends) {
            match s.request.test() {
                Ok(_) => {
                    // SAFETY: the request that read the buffer completed; nothing else holds
                    // it (it came from `Box::leak` in `send`).
                    drop(unsafe { Box::from_raw(s.buffer) });
                }
                Err(request) => self.sends.push(InFlight {
                    request,
                    buffer: s.buffer,
                }),
            }
        }
    }
}

impl Transport for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn send(&self, to: usize, bytes: Vec<u8>) {
        let mut st = self.state.lock().expect("mpi lock");
        let buffer: &'static mut [u8] = Box::leak(bytes.into_boxed_slice());
        let raw: *mut [u8] = buffer;
        // SAFETY: the buffer lives until `reap` sees the request complete.
        let data: &'static [u8] = unsafe { &*raw };
        let request =
            st.world
                .process_at_rank(to as i32)
                .immediate_send_with_tag(StaticScope, data, TAG);
        st.sends.push(InFlight {
            request,
            buffer: raw,
        });
        st.reap();
    }
    fn try_recv(&self) -> Option<(usize, Vec<u8>)> {
        let mut st = self.state.lock().expect("mpi lock");
        st.reap();
        let probed = st
            .world
            .any_process()
            .immediate_matched_probe_with_tag(TAG)?;
        let (bytes, status) = probed.matched_receive_vec::<u8>();
        Some((status.source_rank() as usize, bytes))
    }
    fn flush(&self) {
        loop {
            let mut st = self.state.lock().expect("mpi lock");
            st.reap();
            if st.sends.is_empty() {
                return;
            }
            drop(st);
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
    fn host(&self) -> String {
        mpi::environment::processor_name().unwrap_or_else(|_| "?".into())
    }
}
