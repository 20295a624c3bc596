//! What the request side of a native session tells its turn loop: whether a person is being asked
//! (so the idle watchdog waits), whether any approval was granted (so the attempt may have had
//! effects), and how many requests arrived (requests are progress). Shared by every backend's
//! request handler and the turn driver.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::hooks::{ApprovalDecision, ApprovalRequest, Approver};

/// Facts the turn driver needs from the request side; one per native session, shared by its
/// request handler (which writes) and its turns (which read).
#[derive(Debug, Default)]
pub struct TurnActivity {
    /// People being asked right now (approvals, questions): the idle watchdog is suspended while
    /// this is non-zero, because a person deciding is not a stuck turn (docs/peers/codex.md).
    people_pending: AtomicUsize,
    /// The host granted at least one approval since the last turn ended: the attempt may have had
    /// effects, so it is not safe to replay.
    approval_accepted: AtomicBool,
    /// Bumped on every request from the native side, so the watchdog counts requests as progress.
    requests_seen: AtomicUsize,
}

impl TurnActivity {
    /// Counts one request from the native side.
    pub fn request_seen(&self) {
        self.requests_seen.fetch_add(1, Ordering::Relaxed);
    }

    /// How many requests were seen so far.
    pub fn requests_seen(&self) -> usize {
        self.requests_seen.load(Ordering::Relaxed)
    }

    /// Marks a person as being asked until the returned guard is dropped (also when its task is
    /// aborted).
    pub fn person_asked(self: &Arc<Self>) -> PersonPending {
        self.people_pending.fetch_add(1, Ordering::Relaxed);
        PersonPending(self.clone())
    }

    /// How many people are being asked right now.
    pub fn people_pending(&self) -> usize {
        self.people_pending.load(Ordering::Relaxed)
    }

    /// Notes that the host granted an approval.
    pub fn approval_granted(&self) {
        self.approval_accepted.store(true, Ordering::Relaxed);
    }

    /// Whether an approval was granted since the last call (reading resets it).
    pub fn take_approval_accepted(&self) -> bool {
        self.approval_accepted.swap(false, Ordering::Relaxed)
    }

    /// Whether an approval was granted since the last [`take_approval_accepted`](Self::take_approval_accepted).
    pub fn approval_accepted(&self) -> bool {
        self.approval_accepted.load(Ordering::Relaxed)
    }
}

/// A person being asked, for as long as this lives.
#[derive(Debug)]
pub struct PersonPending(Arc<TurnActivity>);

impl Drop for PersonPending {
    fn drop(&mut self) {
        self.0.people_pending.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Asks `approver` about `request` within `limit`, counted as a pending person meanwhile. A failed
/// or late decision is a denial that says why (never a hang, never a silent allow); a granted one
/// is noted in `activity`.
pub async fn decide_approval(
    approver: &dyn Approver,
    request: ApprovalRequest,
    limit: Duration,
    activity: &Arc<TurnActivity>,
) -> ApprovalDecision {
    let decision = {
        let _pending = activity.person_asked();
        match tokio::time::timeout(limit, approver.decide(request)).await {
            Ok(Ok(decision)) => decision,
            Ok(Err(error)) => {
                tracing::warn!(%error, "the approval could not be decided; denying");
                ApprovalDecision::Deny { message: Some(format!("approval failed: {error}")) }
            }
            Err(_) => ApprovalDecision::Deny { message: Some(format!("no decision within {limit:?}")) },
        }
    };
    if decision.allows() {
        activity.approval_granted();
    }
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempt::hooks::{ApprovalKind, FixedApprover};
    use futures::future::BoxFuture;
    use serde_json::json;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            kind: ApprovalKind::Command,
            call_id: "c1".into(),
            tool_name: "bash".into(),
            arguments: json!({"command": "ls"}),
            reason: None,
        }
    }

    struct Never;
    impl Approver for Never {
        fn decide(&self, _request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
            Box::pin(std::future::pending())
        }
    }

    #[tokio::test]
    async fn a_granted_approval_is_noted_once_and_a_late_one_is_a_denial() {
        let activity = Arc::new(TurnActivity::default());
        let allow = FixedApprover(ApprovalDecision::Allow);
        assert!(decide_approval(&allow, request(), Duration::from_secs(5), &activity).await.allows());
        assert!(activity.take_approval_accepted());
        assert!(!activity.take_approval_accepted(), "reading resets it");

        let late = decide_approval(&Never, request(), Duration::from_millis(20), &activity).await;
        assert!(matches!(late, ApprovalDecision::Deny { message: Some(m) } if m.contains("no decision")));
        assert!(!activity.approval_accepted());
        assert_eq!(activity.people_pending(), 0, "the person is no longer pending");
    }

    #[test]
    fn a_pending_person_counts_until_the_guard_drops() {
        let activity = Arc::new(TurnActivity::default());
        let first = activity.person_asked();
        let second = activity.person_asked();
        assert_eq!(activity.people_pending(), 2);
        drop(first);
        drop(second);
        assert_eq!(activity.people_pending(), 0);
    }
}
