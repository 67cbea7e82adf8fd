//! `reclaim scan` (being written).

/// `reclaim scan`; returns the exit code.
pub fn command(_a: &crate::cli::ScanArgs) -> u8 {
    eprintln!("reclaim scan: not built yet");
    2
}
