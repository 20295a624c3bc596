//! Warm native processes kept for later attempts, whatever the backend: a [`WarmPool`] holds items
//! by key under a cap (past it the least recently used is retired), retires items nobody used for
//! the idle timeout (a background reaper), items worn out by too many uses, and items that report
//! themselves unhealthy, and stops them all on shutdown.
//!
//! Two ways to use it: park and take (an item serves one user at a time and leaves the pool while
//! it does: Claude's warm CLIs), or lend (an item serves many at once and stays in the pool while
//! it does: Codex's shared app-servers). Retiring an item only says it is no longer handed out;
//! how it stops (at once, or when its last user is done) is the item's own business.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

/// Something a [`WarmPool`] keeps.
pub trait PoolItem: Send + 'static {
    /// Whether anybody uses it right now; an item in use is never retired for being idle.
    fn in_use(&self) -> bool {
        false
    }

    /// Whether it can still serve (its process alive, its peer not gone, no error on it).
    fn healthy(&self) -> bool {
        true
    }

    /// How often it was used so far (turns run on it), against [`PoolLimits::max_uses`].
    fn uses(&self) -> u64 {
        0
    }

    /// Stops it, or has it stop once its current users are done; the pool no longer hands it out.
    fn retire(self) -> BoxFuture<'static, ()>;
}

/// Limits of a [`WarmPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolLimits {
    /// Most items at once; one more retires the least recently used (idle ones first).
    pub max_items: usize,
    /// An item unused (and not in use) for this long is retired.
    pub idle_timeout: Duration,
    /// An item used this often is retired instead of handed out again; `None`: no limit.
    pub max_uses: Option<u64>,
}

/// One kept item and when it was last handed out or put back.
struct Entry<T> {
    /// The item.
    item: T,
    /// When it was last handed out or parked: the order of least recent use.
    last_used: Instant,
}

/// Warm items by key (see the module docs).
pub struct WarmPool<K, T> {
    /// The limits.
    limits: PoolLimits,
    /// The items by key. Never held across an await.
    entries: Mutex<HashMap<K, Entry<T>>>,
    /// The retirements still running, so shutdown can wait for them.
    retiring: TaskTracker,
}

impl<K, T> Debug for WarmPool<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPool").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl<K, T> WarmPool<K, T>
where
    K: Eq + Hash + Clone + Debug + Send + Sync + 'static,
    T: PoolItem,
{
    /// An empty pool with a background reaper that retires idle items (it ends with the pool).
    /// Call it inside a tokio runtime.
    pub fn new(limits: PoolLimits) -> Arc<Self> {
        let pool = Arc::new(WarmPool { limits, entries: Mutex::default(), retiring: TaskTracker::new() });
        let weak: Weak<Self> = Arc::downgrade(&pool);
        let every = (limits.idle_timeout / 4).max(Duration::from_millis(50));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match weak.upgrade() {
                    Some(pool) => {
                        pool.evict_idle();
                    }
                    None => return,
                }
            }
        });
        pool
    }

    /// The limits it was made with.
    pub fn limits(&self) -> PoolLimits {
        self.limits
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<K, Entry<T>>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `item` may be handed out again.
    fn serviceable(&self, item: &T) -> bool {
        item.healthy() && self.limits.max_uses.is_none_or(|max| item.uses() < max)
    }

    /// Takes `key`'s item out of the pool (park-and-take use). An unhealthy or worn-out one is
    /// retired instead.
    pub fn take(&self, key: &K) -> Option<T> {
        let entry = self.entries().remove(key)?;
        if self.serviceable(&entry.item) {
            Some(entry.item)
        } else {
            tracing::debug!(?key, "retiring a warm process that can no longer serve");
            self.retire_in_background(entry.item);
            None
        }
    }

    /// Puts `item` in the pool under `key`, retiring the item it replaces and, past the cap, the
    /// least recently used ones.
    pub fn put(&self, key: K, item: T) {
        let retired = {
            let mut entries = self.entries();
            let replaced = entries.insert(key, Entry { item, last_used: Instant::now() });
            let mut retired: Vec<T> = replaced.map(|e| e.item).into_iter().collect();
            retired.extend(self.over_cap(&mut entries));
            retired
        };
        retired.into_iter().for_each(|item| self.retire_in_background(item));
    }

    /// Removes items past the cap: idle ones first, least recently used first among equals.
    fn over_cap(&self, entries: &mut HashMap<K, Entry<T>>) -> Vec<T> {
        let mut retired = Vec::new();
        while entries.len() > self.limits.max_items {
            let oldest = entries.iter().min_by_key(|(_, e)| (e.item.in_use(), e.last_used)).map(|(k, _)| k.clone());
            let Some(oldest) = oldest else { break };
            if let Some(entry) = entries.remove(&oldest) {
                tracing::debug!(key = ?oldest, "retiring the least recently used warm process");
                retired.push(entry.item);
            }
        }
        retired
    }

    /// Lends `key`'s item (shared use: it stays in the pool), if it is healthy and not worn out;
    /// one that is not is retired, and the caller makes a new one.
    pub fn lend(&self, key: &K) -> Option<T>
    where
        T: Clone,
    {
        let mut entries = self.entries();
        let usable = entries.get(key).map(|entry| self.serviceable(&entry.item))?;
        if usable {
            let entry = entries.get_mut(key)?;
            entry.last_used = Instant::now();
            return Some(entry.item.clone());
        }
        let entry = entries.remove(key)?;
        drop(entries);
        tracing::debug!(?key, "retiring a shared process that can no longer serve");
        self.retire_in_background(entry.item);
        None
    }

    /// Retires every item that was neither used nor in use for the idle timeout; how many.
    pub fn evict_idle(&self) -> usize {
        let idle = self.limits.idle_timeout;
        let stale: Vec<T> = {
            let mut entries = self.entries();
            let keys: Vec<K> = entries
                .iter()
                .filter(|(_, e)| !e.item.in_use() && e.last_used.elapsed() >= idle)
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter().filter_map(|k| entries.remove(k)).map(|e| e.item).collect()
        };
        let count = stale.len();
        stale.into_iter().for_each(|item| self.retire_in_background(item));
        count
    }

    /// Retires `key`'s item; whether there was one.
    pub fn remove(&self, key: &K) -> bool {
        let removed = self.entries().remove(key);
        let found = removed.is_some();
        if let Some(entry) = removed {
            self.retire_in_background(entry.item);
        }
        found
    }

    /// Marks the time of use of `key`'s item as now (a lent item handed back), so idle retirement
    /// counts from the end of its last use.
    pub fn touch(&self, key: &K) {
        if let Some(entry) = self.entries().get_mut(key) {
            entry.last_used = Instant::now();
        }
    }

    /// Every item the pool holds (shared use: they stay in the pool).
    pub fn items(&self) -> Vec<T>
    where
        T: Clone,
    {
        self.entries().values().map(|e| e.item.clone()).collect()
    }

    /// How many items the pool holds.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether the pool holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Retires every item and waits until every retirement (also earlier ones) has finished.
    pub async fn shutdown(&self) {
        let all: Vec<T> = self.entries().drain().map(|(_, e)| e.item).collect();
        futures::future::join_all(all.into_iter().map(PoolItem::retire)).await;
        self.retiring.close();
        self.retiring.wait().await;
        self.retiring.reopen();
    }

    fn retire_in_background(&self, item: T) {
        self.retiring.spawn(item.retire());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use super::*;

    /// A fake item whose state a test sets, and which says when it was retired.
    #[derive(Clone)]
    struct Fake {
        /// Its name, to tell which one was retired.
        name: &'static str,
        /// Shared with the test: its health, use count, users, and whether it was retired.
        state: Arc<FakeState>,
        /// Where retirements are written down, in order.
        log: Arc<Mutex<Vec<&'static str>>>,
    }

    #[derive(Default)]
    struct FakeState {
        /// Whether it reports itself healthy.
        sick: AtomicBool,
        /// How often it was used.
        uses: AtomicU64,
        /// Whether someone uses it.
        busy: AtomicBool,
    }

    impl PoolItem for Fake {
        fn in_use(&self) -> bool {
            self.state.busy.load(Ordering::SeqCst)
        }
        fn healthy(&self) -> bool {
            !self.state.sick.load(Ordering::SeqCst)
        }
        fn uses(&self) -> u64 {
            self.state.uses.load(Ordering::SeqCst)
        }
        fn retire(self) -> BoxFuture<'static, ()> {
            Box::pin(async move { self.log.lock().unwrap().push(self.name) })
        }
    }

    fn fakes(log: &Arc<Mutex<Vec<&'static str>>>, name: &'static str) -> Fake {
        Fake { name, state: Arc::default(), log: log.clone() }
    }

    fn limits(max_items: usize) -> PoolLimits {
        PoolLimits { max_items, idle_timeout: Duration::from_secs(60), max_uses: None }
    }

    async fn settle<K, T>(pool: &WarmPool<K, T>) {
        pool.retiring.close();
        pool.retiring.wait().await;
        pool.retiring.reopen();
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_cap_the_least_recently_used_idle_item_is_retired() {
        let log = Arc::default();
        let pool = WarmPool::new(limits(2));
        let (a, b, c) = (fakes(&log, "a"), fakes(&log, "b"), fakes(&log, "c"));
        pool.put("a", a.clone());
        tokio::time::advance(Duration::from_secs(1)).await;
        pool.put("b", b);
        tokio::time::advance(Duration::from_secs(1)).await;
        // `a` is the oldest, but in use: `b` goes instead.
        a.state.busy.store(true, Ordering::SeqCst);
        pool.put("c", c);
        settle(&pool).await;
        assert_eq!(*log.lock().unwrap(), vec!["b"]);
        assert_eq!(pool.len(), 2);
        assert!(pool.lend(&"a").is_some() && pool.lend(&"c").is_some());
        // Lending `a` made it the most recent: now `c` is the least recently used.
        pool.touch(&"a");
        a.state.busy.store(false, Ordering::SeqCst);
        tokio::time::advance(Duration::from_secs(1)).await;
        pool.touch(&"a");
        pool.put("d", fakes(&log, "d"));
        settle(&pool).await;
        assert_eq!(*log.lock().unwrap(), vec!["b", "c"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_item_unused_for_the_idle_timeout_is_retired_but_not_while_in_use() {
        let log = Arc::default();
        let pool = WarmPool::new(PoolLimits { idle_timeout: Duration::from_secs(10), ..limits(8) });
        let (busy, idle) = (fakes(&log, "busy"), fakes(&log, "idle"));
        busy.state.busy.store(true, Ordering::SeqCst);
        pool.put("busy", busy.clone());
        pool.put("idle", idle);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(pool.evict_idle(), 0, "nothing is idle for 10 s yet");
        // The reaper runs on its own once the timeout has passed.
        tokio::time::sleep(Duration::from_secs(5)).await;
        settle(&pool).await;
        assert_eq!(*log.lock().unwrap(), vec!["idle"]);
        assert_eq!(pool.len(), 1, "the item in use stays");
        busy.state.busy.store(false, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(5)).await;
        settle(&pool).await;
        assert_eq!(*log.lock().unwrap(), vec!["idle", "busy"]);
        assert!(pool.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_worn_out_or_failed_item_is_retired_instead_of_handed_out() {
        let log = Arc::default();
        let pool = WarmPool::new(PoolLimits { max_uses: Some(3), ..limits(8) });
        let (worn, failed, parked) = (fakes(&log, "worn"), fakes(&log, "failed"), fakes(&log, "parked"));
        pool.put("worn", worn.clone());
        pool.put("failed", failed.clone());
        pool.put("parked", parked.clone());
        worn.state.uses.store(2, Ordering::SeqCst);
        assert!(pool.lend(&"worn").is_some(), "two uses of three: still serves");
        worn.state.uses.store(3, Ordering::SeqCst);
        assert!(pool.lend(&"worn").is_none(), "three uses: retired");
        failed.state.sick.store(true, Ordering::SeqCst);
        assert!(pool.lend(&"failed").is_none());
        parked.state.sick.store(true, Ordering::SeqCst);
        assert!(pool.take(&"parked").is_none());
        settle(&pool).await;
        assert_eq!(*log.lock().unwrap(), vec!["worn", "failed", "parked"]);
        assert!(pool.is_empty());
        assert!(pool.lend(&"worn").is_none(), "a retired item is gone for good");
    }

    #[tokio::test(start_paused = true)]
    async fn take_removes_put_replaces_and_shutdown_retires_everything() {
        let log = Arc::default();
        let pool = WarmPool::new(limits(8));
        pool.put("a", fakes(&log, "a1"));
        pool.put("a", fakes(&log, "a2"));
        pool.put("b", fakes(&log, "b"));
        assert_eq!(pool.take(&"a").map(|f| f.name), Some("a2"));
        assert!(pool.take(&"a").is_none());
        assert!(!pool.remove(&"a"));
        pool.put("c", fakes(&log, "c"));
        pool.shutdown().await;
        let mut retired = log.lock().unwrap().clone();
        retired.sort_unstable();
        assert_eq!(retired, vec!["a1", "b", "c"], "the replaced item and every kept one were retired");
        assert!(pool.is_empty());
    }
}
