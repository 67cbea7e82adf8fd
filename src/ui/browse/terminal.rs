//! The terminal `reclaim browse` takes over: raw mode, the alternate screen, no cursor; and
//! given back as it was on every way out: the guard's drop (quit, an error, a signal the loop
//! heeds) and a panic hook that restores it before the panic is reported (release builds
//! abort on a panic, and an abort runs no destructor). Owns nothing else.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::crossterm::{cursor, execute, terminal};

/// Whether the terminal is taken (so that restoring twice does nothing).
static TAKEN: AtomicBool = AtomicBool::new(false);

/// The terminal while it is taken; dropping it gives it back.
pub struct Guard {
    _private: (),
}

/// Takes the terminal (stdout): raw mode, the alternate screen, the cursor hidden; installs
/// the panic hook that gives it back first.
pub fn take() -> std::io::Result<Guard> {
    install_panic_hook();
    terminal::enable_raw_mode()?;
    TAKEN.store(true, Ordering::SeqCst);
    let mut out = std::io::stdout();
    if let Err(e) = execute!(out, terminal::EnterAlternateScreen, cursor::Hide) {
        restore();
        return Err(e);
    }
    Ok(Guard { _private: () })
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Gives the terminal back as it was taken (once; later calls do nothing).
pub fn restore() {
    if !TAKEN.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    let _ = execute!(out, cursor::Show, terminal::LeaveAlternateScreen);
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

/// A panic restores the terminal before the panic message is written (on the normal screen,
/// where it can be read), then goes on as it would have.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            before(info);
        }));
    });
}
