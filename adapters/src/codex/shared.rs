//! Warm `codex app-server`s shared by many sessions at once (docs/peers/codex.md#shared-app-servers):
//! one process serves many threads, as the protocol allows, so an attempt pays neither the start-up
//! nor the handshake.
//!
//! - A [`ServerPool`] keeps servers by [`ServerKey`], a keyed hash of everything two attempts must
//!   agree on to share a process (program, arguments with every `-c` override, the environment with
//!   the attempt's prepared and secret variables, the process's cwd, containment, the initialize
//!   capabilities, the launcher and far-side program, the endpoint or proxy socket and its auth). The hash is keyed per pool so the key says nothing about a secret it covers.
//! - One reader per server (a router task) sends each notification to the session whose thread it
//!   names; one without a thread goes to every session (the mapper ignores what is not its turn's).
//! - The server's request handler answers a request with the hooks of the session whose thread it
//!   names; a request naming no known thread gets the method's safe answer (decline, tool failure).
//! - A server whose peer is gone (crash, kill) fails the turns on it with its exit and stderr tail
//!   (each session receives the `Closed` event) and is never lent again: the next attempt starts a
//!   fresh one.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::pool::{PoolItem, PoolLimits, WarmPool};
use clawbridge_bridge::rpc::{
    HandlerError, HandlerFailure, PeerEvent, PeerEvents, PeerGone, RequestHandler, RoutedSender, RpcPeer, routed,
};
use clawbridge_bridge::supervisor::{StopOutcome, StopPolicy};
use clawbridge_protocol::codex::notifications::thread_id_of;
use clawbridge_protocol::codex::server_requests::ServerRequest;
use clawbridge_protocol::codex::version::Version;
use clawbridge_protocol::jsonrpc::{ErrorObject, Request};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::task::TaskTracker;

use super::config::CodexConfig;
use super::handler::CodexRequestHandler;
use super::session::CodexError;

/// How many events may wait for one session. A session that lets this many pile up makes the
/// router wait (the server's stream backs up, as a single session's does on its own server)
/// rather than lose its turn's events: a fast turn outruns its consumer for a moment, routinely.
const SESSION_QUEUE: usize = 1024;

/// How many bytes of events may wait for one session, whatever their count: the same budget a
/// server of its own gives its reader's inbox, so a lagging session on a shared server holds no
/// more than it would alone (a notification may be as long as the line cap).
const SESSION_QUEUE_BYTES: usize = clawbridge_bridge::rpc::DEFAULT_EVENT_BYTES;

/// How many idle threads one server remembers as loaded with known settings (one per session
/// that ran a turn on it, at most); past it a thread is resumed as it would be on a new server.
const MAX_LIVE_THREADS: usize = 1024;

/// Whether the native backend's attempts share warm app-servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerMode {
    /// Attempts share warm servers (many threads on one process) under these limits.
    Shared(PoolLimits),
    /// Every attempt starts its own app-server and stops it at its end (full isolation).
    PerAttempt,
}

impl ServerMode {
    /// The shared pool's default limits: a few servers (one per distinct setting in use), retired
    /// after five idle minutes or 200 turns so a long-lived server's memory stays bounded.
    pub const DEFAULT_LIMITS: PoolLimits =
        PoolLimits { max_items: 4, idle_timeout: std::time::Duration::from_secs(300), max_uses: Some(200) };
}

/// What two attempts must agree on to share an app-server, hashed (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ServerKey(
    /// The keyed hash of the launch settings.
    u64,
);

/// One session's place on a shared server: where its events go and who answers its requests.
struct Route {
    /// The session's event queue.
    events: RoutedSender,
    /// The session's request handler (its approver, host tools, user-input asker).
    handler: Arc<CodexRequestHandler>,
}

/// The sessions of one server, by slot and by thread.
#[derive(Default)]
struct RouteTable {
    /// Every session on the server, by slot number.
    routes: HashMap<u64, Route>,
    /// Which slot owns which thread.
    threads: HashMap<String, u64>,
    /// The next slot number.
    next: u64,
    /// How the server's peer went away, once it has: later sessions hear it at once.
    gone: Option<Arc<PeerGone>>,
    /// Threads loaded in the server that no session holds, whose last turn completed, by id: the
    /// keyed hash of the settings they were started or resumed with, and the model Codex named.
    /// A session that finds its thread here with the same settings skips `thread/resume`.
    live: HashMap<String, LiveThread>,
}

/// An idle thread still loaded in a shared server (see [`RouteTable::live`]).
#[derive(Clone, Debug)]
struct LiveThread {
    /// The keyed hash of the thread settings last applied to it ([`ServerSeat::settings_key`]).
    settings: u64,
    /// The model Codex answered with when it was started or resumed.
    model: Option<String>,
}

/// The routing of one shared server, used by its router task and its request handler.
#[derive(Default)]
struct Routes {
    /// The table; never held across an await.
    table: Mutex<RouteTable>,
}

impl Routes {
    fn table(&self) -> MutexGuard<'_, RouteTable> {
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The handler of the session that owns `thread_id`.
    fn handler_of(&self, thread_id: &str) -> Option<Arc<CodexRequestHandler>> {
        let table = self.table();
        let slot = table.threads.get(thread_id)?;
        table.routes.get(slot).map(|route| route.handler.clone())
    }

    /// Queues `event` for `slot`'s session, if it is still on the server.
    fn deliver(table: &mut RouteTable, slot: u64, event: PeerEvent, out: &mut Vec<(RoutedSender, PeerEvent)>) {
        if let Some(route) = table.routes.get(&slot) {
            out.push((route.events.clone(), event));
        }
    }

    /// Routes one event from the server's reader (see the module docs), waiting while a session's
    /// queue is full; the table is not held meanwhile.
    async fn route(&self, event: PeerEvent) {
        let deliveries = self.deliveries(event);
        for (queue, event) in deliveries {
            // A session that left has dropped its queue: nothing to deliver.
            let _ = queue.send(event).await;
        }
    }

    /// Where one event goes, decided under the table's lock.
    fn deliveries(&self, event: PeerEvent) -> Vec<(RoutedSender, PeerEvent)> {
        let mut out = Vec::new();
        let mut table = self.table();
        match event {
            PeerEvent::Notification(note) => {
                let thread = note.params.as_deref().and_then(thread_id_of);
                if let Some(thread) = thread.as_ref().filter(|_| unloads_thread(&note)) {
                    table.live.remove(thread.as_ref());
                }
                match thread {
                    Some(thread) => match table.threads.get(thread.as_ref()).copied() {
                        Some(slot) => Self::deliver(&mut table, slot, PeerEvent::Notification(note), &mut out),
                        None => tracing::trace!(method = %note.method, "a notification for a thread no session holds"),
                    },
                    None => {
                        let slots: Vec<u64> = table.routes.keys().copied().collect();
                        for slot in slots {
                            Self::deliver(&mut table, slot, PeerEvent::Notification(note.clone()), &mut out);
                        }
                    }
                }
            }
            PeerEvent::Closed(gone) => {
                table.gone = Some(gone.clone());
                // Every session hears how the server ended; then its queue closes.
                for (_, route) in table.routes.drain() {
                    out.push((route.events, PeerEvent::Closed(gone.clone())));
                }
                table.threads.clear();
                table.live.clear();
            }
            // The peer logged it; the stream goes on.
            _ => {}
        }
        out
    }

    /// Adds a session; its event queue.
    fn join(&self, handler: Arc<CodexRequestHandler>) -> (u64, PeerEvents) {
        let (events, receiver) = routed(SESSION_QUEUE, SESSION_QUEUE_BYTES);
        let mut table = self.table();
        let slot = table.next;
        table.next += 1;
        match &table.gone {
            Some(gone) => {
                // A fresh queue has room for it.
                let _ = events.try_send(PeerEvent::Closed(gone.clone()));
            }
            None => {
                table.routes.insert(slot, Route { events, handler });
            }
        }
        (slot, receiver)
    }

    /// Gives `thread_id` to `slot`'s session.
    fn claim(&self, slot: u64, thread_id: &str) {
        let mut table = self.table();
        if table.routes.contains_key(&slot) {
            table.threads.insert(thread_id.to_owned(), slot);
        }
    }

    /// Gives `thread_id` to `slot`'s session without a resume when the server still has it loaded,
    /// idle and held by no session, under the same settings: its model then. The entry is taken,
    /// so two sessions never both skip the resume of one thread.
    fn adopt_live(&self, slot: u64, thread_id: &str, settings: u64) -> Option<Option<String>> {
        let mut table = self.table();
        if table.gone.is_some() || !table.routes.contains_key(&slot) || table.threads.contains_key(thread_id) {
            return None;
        }
        if table.live.get(thread_id)?.settings != settings {
            // Other settings: a resume applies them, and the entry is written again after its turn.
            table.live.remove(thread_id);
            return None;
        }
        let live = table.live.remove(thread_id)?;
        table.threads.insert(thread_id.to_owned(), slot);
        Some(live.model)
    }

    /// Notes that `thread_id` is loaded and idle under `settings` (its turn completed).
    fn remember_live(&self, thread_id: &str, live: LiveThread) {
        let mut table = self.table();
        if table.gone.is_some() || (table.live.len() >= MAX_LIVE_THREADS && !table.live.contains_key(thread_id)) {
            return;
        }
        table.live.insert(thread_id.to_owned(), live);
    }

    /// Removes a session and its threads.
    fn leave(&self, slot: u64) {
        let mut table = self.table();
        table.routes.remove(&slot);
        table.threads.retain(|_, owner| *owner != slot);
    }

    fn is_gone(&self) -> bool {
        self.table().gone.is_some()
    }
}

/// Whether `note` says its thread is no longer loaded in the server (`thread/closed`, or a status
/// of `notLoaded`): a session must then resume it again.
fn unloads_thread(note: &clawbridge_protocol::jsonrpc::Notification) -> bool {
    match note.method.as_str() {
        "thread/closed" => true,
        "thread/status/changed" => {
            let params = note.params_value();
            let status = params.as_ref().and_then(|p| p.get("status"));
            let kind = status.and_then(|s| s.get("type")).or(status).and_then(Value::as_str);
            kind == Some("notLoaded")
        }
        _ => false,
    }
}

/// The request handler of a shared server: each request to the hooks of the thread it names.
struct RoutingHandler {
    /// The server's routing.
    routes: Arc<Routes>,
}

impl RequestHandler for RoutingHandler {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let params = request.params_value();
        let thread = params.as_ref().and_then(|p| p.get("threadId")).and_then(Value::as_str);
        if let Some(handler) = thread.and_then(|thread| self.routes.handler_of(thread)) {
            return handler.handle(request);
        }
        tracing::warn!(method = %request.method, ?thread, "a codex request for no session on this server; answering with the safe default");
        let answer = ServerRequest::from_request(&request.method, params).fallback_reply().map_err(HandlerError::Reply);
        Box::pin(async move { answer })
    }

    fn fallback(&self, method: &str, params: Option<&Value>, failure: &HandlerFailure) -> Result<Value, ErrorObject> {
        tracing::warn!(%method, %failure, "answering Codex with the safe default");
        ServerRequest::from_request(method, params.cloned()).fallback_reply()
    }
}

/// One warm `codex app-server` serving many sessions.
pub struct SharedServer {
    /// The process and its peer; taken when it stops.
    conn: Mutex<Option<AgentConnection>>,
    /// The peer, for requests while the connection is held above.
    peer: RpcPeer,
    /// The process's pid (its process group); `None` for a server the bridge connected to
    /// (`codex.connect`) rather than spawned.
    pid: Option<u32>,
    /// Its sessions.
    routes: Arc<Routes>,
    /// Its version, from the handshake.
    version: Version,
    /// Sessions using it now.
    leases: AtomicUsize,
    /// Turns started on it, against the pool's retirement after N turns.
    turns: AtomicU64,
    /// No longer handed out; it stops when its last session ends.
    retired: AtomicBool,
    /// The staged stop's graces.
    stop: StopPolicy,
    /// Where a stop started by a session's end runs, so the pool's shutdown waits for it.
    stopping: TaskTracker,
    /// Keys the hash of a thread's settings ([`ServerSeat::settings_key`]), so a host cannot craft
    /// two settings that collide.
    settings_hasher: RandomState,
}

impl std::fmt::Debug for SharedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedServer").field("pid", &self.pid).finish_non_exhaustive()
    }
}

impl SharedServer {
    /// Spawns the app-server `config` describes, with its router, and performs the handshake.
    async fn start(
        config: &CodexConfig,
        experimental_api: bool,
        stopping: TaskTracker,
    ) -> Result<Arc<SharedServer>, CodexError> {
        let routes = Arc::new(Routes::default());
        let handler = Arc::new(RoutingHandler { routes: routes.clone() });
        let (conn, mut events) = super::session::open_server(config, handler).await?;
        let (conn, version) = super::session::handshake(conn, config, experimental_api).await?;
        let router = routes.clone();
        // The one reader of this server's events; it ends with the stream.
        stopping.spawn(async move {
            while let Some(event) = events.recv().await {
                router.route(event).await;
            }
        });
        let server = SharedServer {
            peer: conn.peer().clone(),
            pid: conn.process().map(clawbridge_bridge::supervisor::ChildProcess::pid),
            conn: Mutex::new(Some(conn)),
            routes,
            version,
            leases: AtomicUsize::new(0),
            turns: AtomicU64::new(0),
            retired: AtomicBool::new(false),
            stop: config.stop,
            stopping,
            settings_hasher: RandomState::new(),
        };
        tracing::debug!(pid = ?server.pid, "started a shared codex app-server");
        Ok(Arc::new(server))
    }

    /// A place on this server for a session answering with `handler`, unless it was retired meanwhile.
    fn seat(self: &Arc<Self>, handler: Arc<CodexRequestHandler>) -> Option<ServerSeat> {
        self.leases.fetch_add(1, Ordering::SeqCst);
        if self.retired.load(Ordering::SeqCst) {
            self.release();
            return None;
        }
        let (slot, events) = self.routes.join(handler);
        Some(ServerSeat { server: self.clone(), slot, events: Some(events) })
    }

    fn release(self: &Arc<Self>) {
        if self.leases.fetch_sub(1, Ordering::SeqCst) == 1 && self.retired.load(Ordering::SeqCst) {
            let server = self.clone();
            self.stopping.spawn(async move {
                server.stop_now().await;
            });
        }
    }

    /// Stops the process now (once; later calls find it stopped).
    async fn stop_now(&self) -> Option<StopOutcome> {
        let conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()?;
        let outcome = conn.shutdown(self.stop).await;
        tracing::debug!(pid = ?self.pid, ?outcome, "stopped a shared codex app-server");
        Some(outcome)
    }

    /// Its pid (its process group), when the bridge spawned it.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }
}

/// A shared server as the pool keeps it (the pool lends clones of the handle).
#[derive(Clone, Debug)]
struct Pooled(
    /// The server, shared with the seats on it.
    Arc<SharedServer>,
);

impl std::ops::Deref for Pooled {
    type Target = Arc<SharedServer>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl PoolItem for Pooled {
    fn in_use(&self) -> bool {
        self.leases.load(Ordering::SeqCst) > 0
    }

    fn healthy(&self) -> bool {
        !self.routes.is_gone() && self.peer.gone().is_none()
    }

    fn uses(&self) -> u64 {
        self.turns.load(Ordering::SeqCst)
    }

    fn retire(self) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            self.retired.store(true, Ordering::SeqCst);
            if self.leases.load(Ordering::SeqCst) == 0 {
                self.stop_now().await;
            }
        })
    }
}

/// A session's place on a shared server; leaving it (drop) frees its threads and, on a retired
/// server, stops the process after its last session.
pub struct ServerSeat {
    /// The server.
    server: Arc<SharedServer>,
    /// The session's slot in the server's routing.
    slot: u64,
    /// The session's event queue, until the session takes it.
    events: Option<PeerEvents>,
}

impl std::fmt::Debug for ServerSeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSeat").field("pid", &self.server.pid).field("slot", &self.slot).finish()
    }
}

impl ServerSeat {
    /// The server's peer.
    pub fn peer(&self) -> &RpcPeer {
        &self.server.peer
    }

    /// The server's pid, when the bridge spawned it.
    pub fn pid(&self) -> Option<u32> {
        self.server.pid
    }

    /// The server's version.
    pub fn version(&self) -> &Version {
        &self.server.version
    }

    /// The session's event queue (once).
    pub(super) fn take_events(&mut self) -> Option<PeerEvents> {
        self.events.take()
    }

    /// Routes `thread_id`'s notifications and requests to this session from now on.
    pub fn claim_thread(&self, thread_id: &str) {
        self.server.routes.claim(self.slot, thread_id);
    }

    /// The keyed hash of a thread's settings as `thread/resume` would send them (`settings`, their
    /// canonical text), to compare with [`adopt_live`](Self::adopt_live).
    pub fn settings_key(&self, settings: &str) -> u64 {
        self.server.settings_hasher.hash_one(settings)
    }

    /// Takes `thread_id` for this session without a `thread/resume`, when the server still has it
    /// loaded and idle under the same `settings` (a [`settings_key`](Self::settings_key)): the
    /// model it runs on then. `None`: resume it.
    pub fn adopt_live(&self, thread_id: &str, settings: u64) -> Option<Option<String>> {
        self.server.routes.adopt_live(self.slot, thread_id, settings)
    }

    /// Notes that `thread_id`'s turn completed and the thread stays loaded under `settings`, for
    /// the next session that continues it here.
    pub fn remember_live(&self, thread_id: &str, settings: u64, model: Option<String>) {
        self.server.routes.remember_live(thread_id, LiveThread { settings, model });
    }

    /// Counts a turn started on the server.
    pub fn count_turn(&self) {
        self.server.turns.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for ServerSeat {
    fn drop(&mut self) {
        self.server.routes.leave(self.slot);
        self.server.release();
    }
}

/// Shared app-servers by [`ServerKey`], on the bridge's generic pool.
pub struct ServerPool {
    /// The servers under the cap, idle retirement and retirement after N turns.
    servers: Arc<WarmPool<ServerKey, Pooled>>,
    /// The per-pool key of the [`ServerKey`] hash.
    hasher: RandomState,
    /// One start at a time, so attempts opening together share one new server.
    starting: tokio::sync::Mutex<()>,
    /// Routers and stops started by sessions, waited for on shutdown.
    stopping: TaskTracker,
}

impl std::fmt::Debug for ServerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPool").field("servers", &self.servers.len()).finish_non_exhaustive()
    }
}

impl ServerPool {
    /// An empty pool under `limits`. Call it inside a tokio runtime.
    pub fn new(limits: PoolLimits) -> Arc<ServerPool> {
        Arc::new(ServerPool {
            servers: WarmPool::new(limits),
            hasher: RandomState::new(),
            starting: tokio::sync::Mutex::new(()),
            stopping: TaskTracker::new(),
        })
    }

    /// The key of the server `config` launches (see the module docs).
    pub fn key(&self, config: &CodexConfig, experimental_api: bool) -> ServerKey {
        let command = config.command();
        let mut hasher = self.hasher.build_hasher();
        command.program.hash(&mut hasher);
        command.args.hash(&mut hasher);
        command.cwd.hash(&mut hasher);
        command.env.inherit.hash(&mut hasher);
        command.env.set.hash(&mut hasher);
        command.env.remove.hash(&mut hasher);
        command.env.withhold.hash(&mut hasher);
        format!("{:?}", config.containment).hash(&mut hasher);
        config.client_name.hash(&mut hasher);
        experimental_api.hash(&mut hasher);
        // A listening server the sessions connect to instead: its address and how we sign in (the
        // credential's source, never its value, which is read at each connect).
        format!("{:?}", config.connect).hash(&mut hasher);
        format!("{:?}", config.ws_auth).hash(&mut hasher);
        // Where it runs: the launcher's words and the far side's program (`ssh -T a` and
        // `ssh -T b` launch the same local `ssh`), for a spawned server and a proxy alike.
        format!("{:?}", config.remote).hash(&mut hasher);
        ServerKey(hasher.finish())
    }

    /// A seat on a warm server for `config`, starting one when none can serve.
    pub async fn seat(
        &self,
        config: &CodexConfig,
        experimental_api: bool,
        handler: Arc<CodexRequestHandler>,
    ) -> Result<ServerSeat, CodexError> {
        let key = self.key(config, experimental_api);
        let _one_start = self.starting.lock().await;
        if let Some(seat) = self.servers.lend(&key).and_then(|server| server.seat(handler.clone())) {
            return Ok(seat);
        }
        let server = SharedServer::start(config, experimental_api, self.stopping.clone()).await?;
        let seat = server.seat(handler).expect("a server nobody has seen yet is not retired");
        self.servers.put(key, Pooled(server));
        Ok(seat)
    }

    /// A seat on the server that still has `thread_id` loaded, idle and held by no session, taking
    /// the thread off its idle list (so no session adopts it meanwhile). Native work outside
    /// attempts (a compaction) runs there: Codex refuses to resume the thread from any other
    /// process ("already has an active writer"), and `thread/unsubscribe` does not release it
    /// (docs/peers/codex.md#compaction). `None`: no server of the pool has it loaded.
    pub fn seat_holding(&self, thread_id: &str, handler: Arc<CodexRequestHandler>) -> Option<ServerSeat> {
        let server = self.servers.items().into_iter().find(|server| {
            let mut table = server.routes.table();
            table.gone.is_none() && !table.threads.contains_key(thread_id) && table.live.remove(thread_id).is_some()
        })?;
        server.0.seat(handler)
    }

    /// Archives `thread_id` on the server that still has it loaded, idle and held by no session
    /// (Codex refuses `thread/archive` from another process while one holds the thread: "already
    /// has an active writer"). The thread is taken off the server's idle list first, so no session
    /// adopts it. `None`: no server of the pool has it loaded.
    pub async fn archive_loaded(&self, thread_id: &str) -> Option<Result<(), clawbridge_bridge::rpc::RpcError>> {
        let server = self.servers.items().into_iter().find(|server| {
            let mut table = server.routes.table();
            table.gone.is_none() && !table.threads.contains_key(thread_id) && table.live.remove(thread_id).is_some()
        })?;
        let params = serde_json::json!({ "threadId": thread_id });
        let answer = server.peer.request(clawbridge_protocol::codex::methods::THREAD_ARCHIVE, Some(&params)).await;
        Some(answer.map(|_| ()))
    }

    /// How many servers the pool holds (live, or gone and not yet noticed).
    pub fn server_count(&self) -> usize {
        self.servers.len()
    }

    /// The pids of the servers the pool holds (those the bridge spawned).
    pub fn pids(&self) -> Vec<u32> {
        self.servers.items().iter().filter_map(|server| server.pid).collect()
    }

    /// Stops every server, waiting for the stops; a server still in use is stopped too (the
    /// bridge is going away).
    pub async fn shutdown(&self) {
        let servers = self.servers.items();
        self.servers.shutdown().await;
        futures::future::join_all(servers.iter().map(|server| server.stop_now())).await;
        self.stopping.close();
        self.stopping.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use clawbridge_bridge::attempt::TurnActivity;
    use clawbridge_bridge::attempt::hooks::{ApprovalDecision, ApprovalRequest, Approver, NoHostTools};
    use clawbridge_protocol::jsonrpc::RequestId;
    use serde_json::json;

    use super::*;

    /// Allows everything and counts how often it was asked.
    #[derive(Default)]
    struct Counting(
        /// How often it was asked.
        AtomicUsize,
    );

    impl Approver for Counting {
        fn decide(&self, _request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(ApprovalDecision::Allow) })
        }
    }

    fn handler(approver: Arc<Counting>) -> Arc<CodexRequestHandler> {
        let limit = std::time::Duration::from_secs(5);
        CodexRequestHandler::new(approver, Arc::new(NoHostTools), Arc::new(TurnActivity::default()), limit, limit)
    }

    fn approval(thread: &str) -> Request {
        let params =
            json!({"threadId": thread, "turnId": "t1", "itemId": "call_1", "command": "echo hi", "cwd": "/tmp"});
        Request::with_value(RequestId::Number("1".into()), "item/commandExecution/requestApproval", Some(params))
    }

    #[tokio::test]
    async fn a_request_goes_to_the_hooks_of_the_thread_it_names_and_an_unknown_thread_gets_the_safe_answer() {
        let routes = Arc::new(Routes::default());
        let (a, b) = (Arc::new(Counting::default()), Arc::new(Counting::default()));
        let (slot_a, _events_a) = routes.join(handler(a.clone()));
        let (slot_b, _events_b) = routes.join(handler(b.clone()));
        routes.claim(slot_a, "thread-a");
        routes.claim(slot_b, "thread-b");
        let router = RoutingHandler { routes: routes.clone() };

        let answer = router.handle(approval("thread-b")).await.unwrap();
        assert_eq!(answer["decision"], "accept");
        assert_eq!((a.0.load(Ordering::SeqCst), b.0.load(Ordering::SeqCst)), (0, 1), "only b's approver was asked");

        let answer = router.handle(approval("thread-nobody-holds")).await.unwrap();
        assert_eq!(answer["decision"], "decline", "no session: the safe answer");
        routes.leave(slot_a);
        let answer = router.handle(approval("thread-a")).await.unwrap();
        assert_eq!(answer["decision"], "decline", "a session that left no longer answers");
        assert_eq!((a.0.load(Ordering::SeqCst), b.0.load(Ordering::SeqCst)), (0, 1), "nobody else was asked");
    }

    fn live(settings: u64) -> LiveThread {
        LiveThread { settings, model: Some("m".into()) }
    }

    #[tokio::test]
    async fn an_idle_loaded_thread_is_lent_once_under_the_same_settings_and_forgotten_when_codex_unloads_it() {
        let routes = Arc::new(Routes::default());
        let (a, _events_a) = routes.join(handler(Arc::new(Counting::default())));
        let (b, _events_b) = routes.join(handler(Arc::new(Counting::default())));
        assert_eq!(routes.adopt_live(a, "t", 7), None, "nothing known: resume");

        routes.remember_live("t", live(7));
        assert_eq!(routes.adopt_live(a, "t", 8), None, "other settings: resume");
        assert_eq!(routes.adopt_live(a, "t", 7), None, "the entry went with the mismatch");

        routes.remember_live("t", live(7));
        assert_eq!(routes.adopt_live(a, "t", 7), Some(Some("m".into())), "same settings, idle: no resume");
        assert!(routes.handler_of("t").is_some(), "and the thread is routed to its new holder");
        routes.remember_live("t", live(7));
        assert_eq!(routes.adopt_live(b, "t", 7), None, "a thread another session holds is never lent");

        routes.leave(a);
        let unload = |method: &str, params: Value| {
            let note = clawbridge_protocol::jsonrpc::Notification::with_value(method, Some(params));
            routes.deliveries(PeerEvent::Notification(note));
        };
        unload("thread/closed", json!({"threadId": "t"}));
        assert_eq!(routes.adopt_live(b, "t", 7), None, "codex closed it: resume");
        routes.remember_live("t", live(7));
        unload("thread/status/changed", json!({"threadId": "t", "status": {"type": "notLoaded"}}));
        assert_eq!(routes.adopt_live(b, "t", 7), None, "codex unloaded it: resume");
        routes.remember_live("t", live(7));
        unload("thread/status/changed", json!({"threadId": "t", "status": {"type": "idle"}}));
        assert_eq!(routes.adopt_live(b, "t", 7), Some(Some("m".into())), "an idle status keeps it");
    }

    #[tokio::test]
    async fn a_server_that_went_away_lends_no_thread_and_the_memory_of_threads_is_bounded() {
        let routes = Arc::new(Routes::default());
        let (a, _events) = routes.join(handler(Arc::new(Counting::default())));
        for n in 0..MAX_LIVE_THREADS + 10 {
            routes.remember_live(&format!("t{n}"), live(1));
        }
        assert_eq!(routes.table().live.len(), MAX_LIVE_THREADS);
        let gone =
            PeerGone { cause: clawbridge_bridge::rpc::GoneCause::OutputClosed, exit: None, stderr_tail: String::new() };
        routes.deliveries(PeerEvent::Closed(Arc::new(gone)));
        assert_eq!(routes.adopt_live(a, "t0", 1), None, "a dead server lends nothing");
        assert!(routes.table().live.is_empty());
    }

    #[tokio::test]
    async fn a_session_that_falls_behind_holds_the_router_at_its_byte_budget_whatever_the_count() {
        let routes = Arc::new(Routes::default());
        let (slot, mut events) = routes.join(handler(Arc::new(Counting::default())));
        routes.claim(slot, "thread-a");
        let delta = "d".repeat(1 << 20);
        let note = |n: usize| {
            PeerEvent::Notification(clawbridge_protocol::jsonrpc::Notification::with_value(
                "item/agentMessage/delta",
                Some(json!({"threadId": "thread-a", "delta": delta, "n": n})),
            ))
        };
        // Notifications of 1 MiB: the count bound (1024) is far off, the byte bound is not.
        let mut routed = 0;
        while tokio::time::timeout(std::time::Duration::from_millis(200), routes.route(note(routed))).await.is_ok() {
            routed += 1;
            assert!(routed <= SESSION_QUEUE_BYTES >> 20, "more than the byte budget waits: {routed} MiB");
        }
        assert!(routed >= (SESSION_QUEUE_BYTES >> 20) - 1, "about the budget's worth was queued: {routed} MiB");
        // Once the session takes one, the router goes on.
        assert!(matches!(events.recv().await, Some(PeerEvent::Notification(_))));
        tokio::time::timeout(std::time::Duration::from_secs(30), routes.route(note(routed)))
            .await
            .expect("room again once the session took an event");
    }

    #[tokio::test]
    async fn a_session_that_falls_behind_makes_the_router_wait_and_loses_nothing() {
        let routes = Arc::new(Routes::default());
        let (slot, mut events) = routes.join(handler(Arc::new(Counting::default())));
        routes.claim(slot, "thread-a");
        let sent = SESSION_QUEUE + 5;
        let router = tokio::spawn({
            let routes = routes.clone();
            async move {
                for n in 0..sent {
                    let note = clawbridge_protocol::jsonrpc::Notification::with_value(
                        "item/agentMessage/delta",
                        Some(json!({"threadId": "thread-a", "delta": n.to_string()})),
                    );
                    routes.route(PeerEvent::Notification(note)).await;
                }
            }
        });
        let mut received = 0;
        while received < sent {
            match tokio::time::timeout(std::time::Duration::from_secs(10), events.recv()).await {
                Ok(Some(PeerEvent::Notification(_))) => received += 1,
                other => panic!("after {received} of {sent}: {other:?}"),
            }
        }
        router.await.unwrap();
        assert!(routes.table().threads.contains_key("thread-a"), "still on the server");
    }

    #[tokio::test]
    async fn notifications_go_to_their_threads_session_and_the_end_of_the_server_to_every_session() {
        let routes = Routes::default();
        let counting = Arc::new(Counting::default());
        let (slot_a, mut events_a) = routes.join(handler(counting.clone()));
        let (slot_b, mut events_b) = routes.join(handler(counting));
        routes.claim(slot_a, "thread-a");
        routes.claim(slot_b, "thread-b");
        let note = |method: &str, params: Value| {
            PeerEvent::Notification(clawbridge_protocol::jsonrpc::Notification::with_value(method, Some(params)))
        };
        routes.route(note("item/agentMessage/delta", json!({"threadId": "thread-b", "delta": "hi"}))).await;
        routes.route(note("thread/started", json!({"thread": {"id": "thread-a"}}))).await;
        routes.route(note("configWarning", json!({"summary": "for everyone"}))).await;
        routes.route(note("item/agentMessage/delta", json!({"threadId": "thread-gone", "delta": "lost"}))).await;
        let gone = Arc::new(PeerGone {
            cause: clawbridge_bridge::rpc::GoneCause::OutputClosed,
            exit: None,
            stderr_tail: String::new(),
        });
        routes.route(PeerEvent::Closed(gone)).await;
        let methods = |events: &mut PeerEvents| {
            let mut seen = Vec::new();
            while let Ok(event) = events.try_recv() {
                seen.push(match event {
                    PeerEvent::Notification(n) => n.method,
                    PeerEvent::Closed(_) => "closed".into(),
                    _ => "other".into(),
                });
            }
            seen
        };
        assert_eq!(methods(&mut events_a), vec!["thread/started", "configWarning", "closed"]);
        assert_eq!(methods(&mut events_b), vec!["item/agentMessage/delta", "configWarning", "closed"]);
        // A session that joins a dead server hears so at once.
        let (_, mut late) = routes.join(handler(Arc::default()));
        assert_eq!(methods(&mut late), vec!["closed"]);
        assert!(routes.is_gone());
    }

    #[tokio::test]
    async fn servers_behind_other_launchers_or_other_proxy_sockets_have_other_keys() {
        use clawbridge_bridge::remote::{Launcher, RemoteSpec};
        let pool = ServerPool::new(ServerMode::DEFAULT_LIMITS);
        let through = |host: &str, socket: &str| {
            let mut config = CodexConfig::new("/usr/bin/ssh");
            let launcher = Launcher::new(vec!["ssh".into(), "-T".into(), host.into()]).unwrap();
            config.remote = Some(RemoteSpec { launcher, program: "codex".into() });
            config.connect = Some(format!("proxy://{socket}").parse().unwrap());
            config
        };
        let key = |config: &CodexConfig| pool.key(config, false);
        assert_eq!(key(&through("a", "/s.sock")), key(&through("a", "/s.sock")));
        assert_ne!(key(&through("a", "/s.sock")), key(&through("b", "/s.sock")), "another host");
        assert_ne!(key(&through("a", "/s.sock")), key(&through("a", "/t.sock")), "another daemon");
    }
}
