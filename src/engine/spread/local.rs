//! A job's ranks as threads of one process, joined by channels: the transport of the tests
//! of the protocol and of the shared walk (the same code as under MPI, without MPI).

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

use super::Transport;

pub struct Local {
    rank: usize,
    peers: Vec<Sender<(usize, Vec<u8>)>>,
    inbox: Mutex<Receiver<(usize, Vec<u8>)>>,
}

/// `n` connected ranks, 0 first.
pub fn mesh(n: usize) -> Vec<Local> {
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| channel()).unzip();
    receivers
        .into_iter()
        .enumerate()
        .map(|(rank, inbox)| Local {
            rank,
            peers: senders.clone(),
            inbox: Mutex::new(inbox),
        })
        .collect()
}

impl Transport for Local {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.peers.len()
    }
    fn send(&self, to: usize, bytes: Vec<u8>) {
        // A rank that already left drops what comes late (as MPI would never deliver it).
        let _ = self.peers[to].send((self.rank, bytes));
    }
    fn try_recv(&self) -> Option<(usize, Vec<u8>)> {
        self.inbox.lock().expect("inbox lock").try_recv().ok()
    }
    fn flush(&self) {}
    fn host(&self) -> String {
        format!("thread {}", self.rank)
    }
}
