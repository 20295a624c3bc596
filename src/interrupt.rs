//! Ctrl-C during `clawbridge run`: the first interrupts the turn the native way (the turn's cancel
//! → the backend's own interrupt, which the agent may take a while to honour), the second stops
//! the agent now (its process group is killed, so the turn ends at once), and the run exits 130.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use clawbridge_bridge::supervisor::PidRegistry;
use tokio_util::sync::CancellationToken;

use crate::view::Screen;

/// The run was interrupted by the person (exit status 130, as a shell reports SIGINT).
#[derive(Debug, thiserror::Error)]
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
    task: tokio::task::JoinHandle<()>,
    presses: Arc<AtomicU8>,
}

impl CtrlC {
    /// From now on the first Ctrl-C cancels `cancel` and the second kills what `registry` holds of
    /// this bridge; `process` names the agent in the lines it prints on `screen`.
    pub fn watch(
        cancel: &CancellationToken,
        registry: PidRegistry,
        screen: Arc<Screen>,
        process: &'static str,
    ) -> CtrlC {
        let (cancel, presses) = (cancel.clone(), Arc::new(AtomicU8::new(0)));
        let counted = presses.clone();
        let task = tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                match counted.fetch_add(1, Ordering::SeqCst) {
                    0 => {
                        screen.urgent("clawbridge: interrupting… (Ctrl-C again to stop now)");
                        cancel.cancel();
                    }
                    1 => {
                        screen.urgent(&format!("clawbridge: stopping {process} now"));
                        let registry = registry.clone();
                        let _ = tokio::task::spawn_blocking(move || registry.kill_own_groups_now()).await;
                    }
                    _ => {}
                }
            }
        });
        CtrlC { task, presses }
    }

    /// Stops watching; `Some` when the person pressed Ctrl-C (what the run then ends with).
    pub fn finish(self) -> Option<Interrupted> {
        self.task.abort();
        match self.presses.load(Ordering::SeqCst) {
            0 => None,
            1 => Some(Interrupted::Turn),
            _ => Some(Interrupted::Stopped),
        }
    }
}
