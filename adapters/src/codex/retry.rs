//! Retrying requests the app-server refused as overloaded (`-32001`, docs/peers/codex.md#overload-refusals): its inbound queue
//! holds 128 messages, and a full queue answers `Server overloaded; retry later.` instead of queueing.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use clawbridge_bridge::rpc::{RpcError, RpcPeer};
use serde::Serialize;
use serde_json::Value;

/// The app-server's "inbound queue full" error code.
pub const SERVER_OVERLOADED: i64 = -32001;

/// How often and how patiently an overloaded request is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverloadRetry {
    /// Tries after the first one; 0 turns retrying off.
    pub retries: u32,
    /// The wait before the first retry; each later wait doubles, up to `max_delay`.
    pub base_delay: Duration,
    /// The longest wait between tries (before jitter).
    pub max_delay: Duration,
}

impl Default for OverloadRetry {
    fn default() -> Self {
        OverloadRetry { retries: 5, base_delay: Duration::from_millis(100), max_delay: Duration::from_secs(2) }
    }
}

impl OverloadRetry {
    /// The wait before retry number `attempt` (0-based): exponential, capped, with up to 50% random
    /// jitter added so many clients refused together do not come back together.
    pub fn delay(&self, attempt: u32) -> Duration {
        let exponential = self.base_delay.saturating_mul(1u32.checked_shl(attempt).unwrap_or(u32::MAX));
        let capped = exponential.min(self.max_delay);
        let jitter_cap = (capped.as_nanos() / 2) as u64;
        let jitter = if jitter_cap == 0 { 0 } else { random_u64() % jitter_cap };
        capped + Duration::from_nanos(jitter)
    }
}

/// Whether `error` is the app-server's overload refusal.
pub fn is_overloaded(error: &RpcError) -> bool {
    matches!(error, RpcError::Remote { error, .. } if error.code == SERVER_OVERLOADED)
}

/// Sends `method`, trying again after a backoff while the server answers `-32001`; any other outcome
/// (success, another error, a timeout) is returned at once.
pub async fn request<P: Serialize>(
    peer: &RpcPeer,
    policy: OverloadRetry,
    method: &str,
    params: Option<&P>,
) -> Result<Value, RpcError> {
    let mut attempt = 0;
    loop {
        match peer.request(method, params).await {
            Err(error) if is_overloaded(&error) && attempt < policy.retries => {
                let wait = policy.delay(attempt);
                tracing::warn!(%method, attempt = attempt + 1, ?wait, "codex app-server overloaded; retrying");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            outcome => return outcome,
        }
    }
}

/// [`request`], decoding the result as `R`.
pub async fn request_typed<P: Serialize, R: serde::de::DeserializeOwned>(
    peer: &RpcPeer,
    policy: OverloadRetry,
    method: &str,
    params: Option<&P>,
) -> Result<R, RpcError> {
    let value = request(peer, policy, method, params).await?;
    serde_json::from_value(value).map_err(|e| RpcError::BadResult { method: method.to_string(), reason: e.to_string() })
}

/// A random number from the standard library's per-process random hasher keys (no RNG crate needed
/// for jitter).
fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_exponentially_with_bounded_jitter_up_to_the_cap() {
        let policy = OverloadRetry::default();
        for (attempt, base_ms) in [(0, 100), (1, 200), (2, 400), (3, 800), (4, 1600), (5, 2000), (40, 2000)] {
            let base = Duration::from_millis(base_ms);
            for _ in 0..50 {
                let delay = policy.delay(attempt);
                assert!(delay >= base && delay < base + base / 2, "attempt {attempt}: {delay:?} vs {base:?}");
            }
        }
    }
}
