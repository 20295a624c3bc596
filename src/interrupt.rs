//! Ctrl-C during `clawbridge run`: the first interrupts the turn the native way (the turn's cancel
//! → the backend's own interrupt, which the agent may take a while to honour), the second stops
//! the agent now (its process group is killed, so the turn ends at once), and the run exits 130.
//! A third, or any once the turn is over (SIGINT stays caught until the process ends), exits 130
//! at once, as an uncaught SIGINT would have.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use clawbridge_bridge::supervisor::PidRegistry;
use tokio_util::sync::CancellationToken;

use crate::view::Screen;

/// The run was interrupted by the person (exit status 130, as a shell reports SIGINT).
#[derive(Clone, Copy, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Interrupted {
    /// One Ctrl-C: the agent was asked to interrupt the turn and it ended.
    #[error("interrupted")]
    Turn,
    /// Two: the agent was stopped without waiting for it.
    #[error("interrupted; the agent was stopped")]
    Stopped,
}

/// The exit status of a run ended by Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Watches for Ctrl-C while a turn runs.
#[derive(Debug)]
pub struct CtrlC {
    presses: Arc<AtomicU8>,
    /// The turn is over: a Ctrl-C now ends the process.
    over: Arc<AtomicBool>,
}

impl CtrlC {
    /// From now on the first Ctrl-C cancels `cancel` and the second kills what `registry` holds of
    /// this bridge; `process` names the agent in the lines it prints on `screen`. The handler is
    /// installed here, before the turn starts, and one listener takes every press (a listener made
    /// per press would miss one that came between two).
    pub fn watch(
        cancel: &CancellationToken,
        registry: PidRegistry,
        screen: Arc<Screen>,
        process: &'static str,
    ) -> std::io::Result<CtrlC> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut presses_in = signal(SignalKind::interrupt())?;
        let (cancel, presses, over) = (cancel.clone(), Arc::new(AtomicU8::new(0)), Arc::new(AtomicBool::new(false)));
        let (counted, ended) = (presses.clone(), over.clone());
        tokio::spawn(async move {
            while presses_in.recv().await.is_some() {
                if ended.load(Ordering::SeqCst) {
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
                match counted.fetch_add(1, Ordering::SeqCst) {
                    0 => {
                        screen.urgent("clawbridge: interrupting… (Ctrl-C again to stop now)");
                        cancel.cancel();
                    }
                    1 => {
                        screen.urgent(&format!("clawbridge: stopping {process} now"));
                        let registry = registry.clone();
                        // Not awaited: a third press must still be heard while the kill runs.
                        tokio::task::spawn_blocking(move || registry.kill_own_groups_now());
                    }
                    _ => std::process::exit(i32::from(EXIT_INTERRUPTED)),
                }
            }
        });
        Ok(CtrlC { presses, over })
    }

    /// The turn is over; `Some` when the person pressed Ctrl-C (what the run then ends with).
    /// From now on a Ctrl-C exits 130 at once.
    pub fn finish(self) -> Option<Interrupted> {
        self.over.store(true, Ordering::SeqCst);
        match self.presses.load(Ordering::SeqCst) {
            0 => None,
            1 => Some(Interrupted::Turn),
            _ => Some(Interrupted::Stopped),
        }
    }
}
