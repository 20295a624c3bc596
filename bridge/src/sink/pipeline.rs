//! The pipeline: a turn's events leave the session's (synchronous) sink through the [`EventQueue`]
//! and are processed by one task in order: every [`EventStage`] first, then the transcript mirror.
//! The mirror's rows are held and stored as one group per burst — when nothing more is ready, at
//! least every [`FLUSH_DEADLINE`], at the turn's terminal, and once [`MAX_HELD_ROWS`] or
//! [`MAX_HELD_ROW_BYTES`] are held — each store acknowledged before the next event is taken, right
//! after the stages flushed what they buffered, so a host never sees a row before the events that
//! made it. Finishing waits until every event went through, and closes the rows of a turn whose
//! terminal never reached the mirror.
//! A turn's sink from [`Pipeline::gated`] or [`Pipeline::sender`] holds the turn back while the
//! queue is full ([`super::queue::MAX_QUEUED_BYTES`]).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::queue::{EventQueue, message_bytes, room_in};
use crate::attempt::AttemptResult;
use crate::attempt::driver::TurnSink;
use crate::events::Event;
use crate::transcript::{Message, ModelLabel, TranscriptMirror};

/// A stage every event passes through, in order: a person's view, the host's event stream.
pub trait EventStage: Send + 'static {
    /// Takes one event; the next one waits until this is done. A stage may buffer what it writes:
    /// [`flush`](Self::flush) follows whenever nothing more is ready, at least every
    /// [`FLUSH_DEADLINE`], and after the last event.
    fn on_event<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, ()>;

    /// Writes out what [`on_event`](Self::on_event) buffered. A stage that writes through has
    /// nothing to do.
    fn flush(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// The longest a buffered stage holds what it wrote while events keep coming: the queue is
/// rarely empty under a steady stream, and a reader must not wait for the turn's end to see it.
pub const FLUSH_DEADLINE: std::time::Duration = std::time::Duration::from_micros(500);

/// The most rows held for one group: a store's group stays small enough for any host to take
/// whole (the OpenClaw plugin refuses groups of more than 256).
pub const MAX_HELD_ROWS: usize = 128;

/// The held rows' bytes (as [`message_bytes`] counts them) past which they are stored at once, so
/// holding rows for a burst adds no more than this, plus the rows of the one event that passed it,
/// to a turn's memory.
pub const MAX_HELD_ROW_BYTES: usize = 1 << 20;

/// Why a store does not hold a group of rows.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Where mirrored transcript rows are kept.
pub trait TranscriptStore: Send + 'static {
    /// Stores one group of rows (a turn's rows come in order, each group complete).
    fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), StoreError>>;
}

/// How a turn is mirrored.
#[derive(Clone, Debug)]
pub struct MirrorSpec {
    /// Idempotency keys are `<scope>:<turn id>:…`.
    pub scope: String,
    /// The model the assistant rows name.
    pub label: ModelLabel,
    /// The prompt, mirrored as the turn's first row; `None` when the store's owner writes it itself
    /// (the OpenClaw host does).
    pub prompt: Option<String>,
}

/// How the mirroring of a turn went.
#[derive(Debug)]
pub struct Mirrored {
    /// Whether the store holds every row of the turn (a host then writes no copy of its own).
    pub owned: bool,
    /// The final assistant row's key, once the turn started.
    pub key: Option<String>,
    /// The first append that failed, if one did (the turn went on).
    pub error: Option<StoreError>,
    /// Delta bytes merged away while a stage lagged (streaming progress only).
    pub dropped_delta_bytes: u64,
}

/// Queues events into a running [`Pipeline`] (see [`Pipeline::sender`]).
#[derive(Clone, Debug)]
pub struct PipelineSender {
    /// The pipeline's queue.
    queue: Arc<EventQueue>,
}

impl PipelineSender {
    /// Queues one event (never blocks); dropped once the pipeline is finishing.
    pub fn push(&self, event: &Event) {
        self.queue.push(event.clone());
    }

    /// Bytes queued now (as [`event_bytes`](super::queue::event_bytes) counts them).
    pub fn queued_bytes(&self) -> usize {
        self.queue.queued_bytes()
    }

    /// The most bytes the pipeline's queue ever held at once.
    pub fn high_water_bytes(&self) -> usize {
        self.queue.high_water_bytes()
    }
}

/// A turn's sink straight into the pipeline: the driver waits while its queue is full.
impl TurnSink for PipelineSender {
    fn push(&mut self, event: &Event) {
        PipelineSender::push(self, event);
    }

    fn room(&self) -> Option<BoxFuture<'static, ()>> {
        room_in(&self.queue)
    }

    fn interrupting(&mut self) {
        self.queue.shed_deltas();
    }
}

/// A turn's sink that runs its own code per event (which pushes into the pipeline) and waits, like
/// [`PipelineSender`], while the pipeline's queue is full. From [`Pipeline::gated`].
#[derive(Debug)]
pub struct GatedSink<F> {
    /// What each event goes through.
    push: F,
    /// The queue whose room the driver waits for.
    queue: Arc<EventQueue>,
}

impl<F: FnMut(&Event) + Send> TurnSink for GatedSink<F> {
    fn push(&mut self, event: &Event) {
        (self.push)(event);
    }

    fn room(&self) -> Option<BoxFuture<'static, ()>> {
        room_in(&self.queue)
    }

    fn interrupting(&mut self) {
        self.queue.shed_deltas();
    }
}

/// A running pipeline for one turn.
pub struct Pipeline {
    /// Filled by the sink.
    queue: Arc<EventQueue>,
    /// The task taking the queue through the stages and the mirror.
    task: tokio::task::JoinHandle<Processor>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline").finish_non_exhaustive()
    }
}

impl Pipeline {
    /// Starts the pipeline's task: events go through `stages`, then (when given) into the mirror
    /// and its store.
    pub fn start(stages: Vec<Box<dyn EventStage>>, mirror: Option<(MirrorSpec, Box<dyn TranscriptStore>)>) -> Self {
        let queue = Arc::new(EventQueue::default());
        let (spec, store) = match mirror {
            Some((spec, store)) => (Some(spec), Some(store)),
            None => (None, None),
        };
        let processor = Processor { stages, spec, store, mirror: None, held: HeldRows::default(), error: None };
        let task = tokio::spawn(processor.run(queue.clone()));
        Pipeline { queue, task }
    }

    /// Queues one event (never blocks); a turn's sink should be [`gated`](Self::gated) instead, so
    /// the turn waits while the queue is full.
    pub fn push(&self, event: &Event) {
        self.queue.push(event.clone());
    }

    /// A turn sink that passes each event to `push` (which queues it here, after whatever else
    /// the caller does per event) and holds the turn back while this pipeline's queue is full.
    pub fn gated<F: FnMut(&Event) + Send>(&self, push: F) -> GatedSink<F> {
        GatedSink { push, queue: self.queue.clone() }
    }

    /// A handle that queues events into this pipeline from elsewhere (events the bridge itself
    /// raises mid-turn, in order with the native ones). Events pushed after `finish` are dropped.
    pub fn sender(&self) -> PipelineSender {
        PipelineSender { queue: self.queue.clone() }
    }

    /// Ends the stream after the turn: waits until every event went through, and closes the rows
    /// of a turn whose terminal never reached the mirror.
    pub async fn finish(self, result: &AttemptResult) -> Mirrored {
        self.queue.close();
        let dropped_delta_bytes = self.queue.dropped_bytes();
        let mut processor = match self.task.await {
            Ok(processor) => processor,
            Err(join) => {
                tracing::error!(%join, "the event pipeline died");
                let error = Some(StoreError(format!("the event pipeline died: {join}").into()));
                return Mirrored { owned: false, key: None, error, dropped_delta_bytes };
            }
        };
        if let Some(mirror) = processor.mirror.as_mut() {
            if !mirror.is_finished() {
                let messages = mirror.finish(&result.terminal);
                processor.append(messages).await;
            }
        }
        let key = processor.mirror.as_ref().map(TranscriptMirror::assistant_key);
        let owned = processor.store.is_some() && processor.mirror.is_some() && processor.error.is_none();
        Mirrored { owned, key, error: processor.error, dropped_delta_bytes }
    }
}

/// The pipeline's task state.
struct Processor {
    /// Every event passes these first, in order.
    stages: Vec<Box<dyn EventStage>>,
    /// How the turn is mirrored; `None` mirrors nothing.
    spec: Option<MirrorSpec>,
    /// Where the rows go.
    store: Option<Box<dyn TranscriptStore>>,
    /// The turn's mirror, once it started.
    mirror: Option<TranscriptMirror>,
    /// Rows made since the last store, stored together at the end of the burst.
    held: HeldRows,
    /// The first failed append.
    error: Option<StoreError>,
}

/// Rows made but not yet stored, counted so holding them stays bounded.
#[derive(Debug, Default)]
struct HeldRows {
    /// In the order the mirror made them.
    rows: Vec<Message>,
    /// Their [`message_bytes`].
    bytes: usize,
}

impl HeldRows {
    fn extend(&mut self, rows: Vec<Message>) {
        self.bytes += rows.iter().map(message_bytes).sum::<usize>();
        self.rows.extend(rows);
    }

    /// Whether the held rows must be stored before more are made.
    fn is_full(&self) -> bool {
        self.rows.len() >= MAX_HELD_ROWS || self.bytes >= MAX_HELD_ROW_BYTES
    }

    fn take(&mut self) -> Vec<Message> {
        self.bytes = 0;
        std::mem::take(&mut self.rows)
    }
}

/// Closes the queue when the pipeline's task ends however it ends: a stage that panics must not
/// leave the turn waiting for room in a queue nobody drains any more.
struct CloseOnDrop(Arc<EventQueue>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl Processor {
    async fn run(mut self, queue: Arc<EventQueue>) -> Self {
        let queue = CloseOnDrop(queue);
        let queue = &queue.0;
        let mut flushed = tokio::time::Instant::now();
        while let Some(event) = queue.next().await {
            for stage in &mut self.stages {
                stage.on_event(&event).await;
            }
            let rows = self.mirror_rows(&event);
            self.held.extend(rows);
            // What the stages buffered and the rows held go out once per burst rather than once
            // per event, the burst being what is ready now, cut at the deadline; a turn's last
            // rows go out with its terminal.
            let ends_turn = matches!(event, Event::TurnTerminal(_));
            if queue.is_empty() && !ends_turn {
                // The producer is often between two events of one native line: one turn of the
                // scheduler lets it queue them, so the burst goes out in one write, not two.
                tokio::task::yield_now().await;
            }
            if queue.is_empty() || ends_turn || self.held.is_full() || flushed.elapsed() >= FLUSH_DEADLINE {
                self.flush().await;
                flushed = tokio::time::Instant::now();
            }
        }
        self.flush().await;
        self
    }

    /// The rows `event` makes: the prompt and whatever the mirror makes of it, once the turn started.
    fn mirror_rows(&mut self, event: &Event) -> Vec<Message> {
        let Some(spec) = self.spec.as_mut() else { return Vec::new() };
        if let Event::ModelInUse { model } = event {
            // A mirror that starts later names it too.
            if !model.trim().is_empty() {
                spec.label.model.clone_from(model);
            }
        }
        let mut messages = Vec::new();
        if let Event::TurnStarted { turn_id } = event {
            if self.mirror.is_none() {
                let mirror = TranscriptMirror::new(spec.scope.clone(), turn_id.clone(), spec.label.clone());
                if let Some(prompt) = &spec.prompt {
                    messages.push(mirror.prompt(prompt.clone()));
                }
                self.mirror = Some(mirror);
            }
        }
        if let Some(mirror) = self.mirror.as_mut() {
            messages.extend(mirror.on_event(event));
        }
        messages
    }

    /// Flushes the stages, then stores the held rows (events before the rows they made).
    async fn flush(&mut self) {
        self.flush_stages().await;
        let rows = self.held.take();
        self.append(rows).await;
    }

    async fn flush_stages(&mut self) {
        for stage in &mut self.stages {
            stage.flush().await;
        }
    }

    /// Stores one group of rows; a failure is kept (the first) and logged, and the turn goes on.
    /// Groups of at most [`MAX_HELD_ROWS`] (one event, a turn's end with many open calls, may make
    /// more) are stored one after the other.
    async fn append(&mut self, messages: Vec<Message>) {
        let Some(store) = self.store.as_mut() else { return };
        for group in groups_of(messages) {
            if let Err(error) = store.append(group).await {
                tracing::warn!(%error, "the transcript store did not take a group of rows");
                self.error.get_or_insert(error);
            }
        }
    }
}

/// Cuts `rows` into groups of at most [`MAX_HELD_ROWS`], plus one where a cut would part a tool
/// call's row from the result that follows it (a group is stored whole or not at all, and a call
/// must never be stored without its result beside it).
fn groups_of(rows: Vec<Message>) -> Vec<Vec<Message>> {
    let mut groups: Vec<Vec<Message>> = Vec::new();
    let mut group = Vec::new();
    for row in rows {
        let parts_a_pair = matches!(group.last(), Some(Message::Assistant(_))) && matches!(row, Message::ToolResult(_));
        if group.len() >= MAX_HELD_ROWS && !parts_a_pair {
            groups.push(std::mem::take(&mut group));
        }
        group.push(row);
    }
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{TerminalKind, ToolCall, ToolFinish, ToolOutcome, TurnTerminal};
    use std::sync::Mutex;

    /// Keeps what it is given, failing the appends after `fail_after`.
    struct Kept {
        rows: Arc<Mutex<Vec<Message>>>,
        fail_after: usize,
    }

    impl TranscriptStore for Kept {
        fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), StoreError>> {
            Box::pin(async move {
                let mut rows = self.rows.lock().unwrap();
                if rows.len() >= self.fail_after {
                    return Err(StoreError("full".into()));
                }
                rows.extend(messages);
                Ok(())
            })
        }
    }

    struct Seen(Arc<Mutex<Vec<String>>>);

    impl EventStage for Seen {
        fn on_event<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, ()> {
            Box::pin(async move { self.0.lock().unwrap().push(format!("{event:?}")) })
        }
    }

    fn label() -> ModelLabel {
        ModelLabel { api: "api".into(), provider: "p".into(), model: "m".into() }
    }

    fn result(kind: TerminalKind) -> AttemptResult {
        let mut recorder = crate::attempt::AttemptRecorder::new();
        recorder.record(&Event::TurnTerminal(TurnTerminal { kind, message: None, cause: None }));
        recorder.finish(None)
    }

    #[tokio::test]
    async fn every_event_reaches_the_stages_in_order_and_the_prompt_is_mirrored_first() {
        let rows = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let spec = MirrorSpec { scope: "s".into(), label: label(), prompt: Some("hi".into()) };
        let store = Kept { rows: rows.clone(), fail_after: usize::MAX };
        let pipeline = Pipeline::start(vec![Box::new(Seen(seen.clone()))], Some((spec, Box::new(store))));
        pipeline.push(&Event::TurnStarted { turn_id: "t1".into() });
        pipeline.push(&Event::AssistantFinal { item_id: "i1".into(), text: "hello".into() });
        pipeline.push(&Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }));
        let mirrored = pipeline.finish(&result(TerminalKind::Ok)).await;
        assert!(mirrored.owned && mirrored.error.is_none());
        assert_eq!(mirrored.key.as_deref(), Some("s:t1:assistant"));
        assert_eq!(seen.lock().unwrap().len(), 3);
        let rows = rows.lock().unwrap();
        assert!(matches!(rows.first(), Some(Message::User(_))), "the prompt first: {rows:?}");
        assert!(rows.iter().any(|m| matches!(m, Message::Assistant(_))), "{rows:?}");
    }

    /// Logs events and flushes in the order the pipeline gives them.
    struct Flushes(Arc<Mutex<Vec<&'static str>>>);

    impl EventStage for Flushes {
        fn on_event<'a>(&'a mut self, _event: &'a Event) -> BoxFuture<'a, ()> {
            self.0.lock().unwrap().push("event");
            Box::pin(async {})
        }

        fn flush(&mut self) -> BoxFuture<'_, ()> {
            self.0.lock().unwrap().push("flush");
            Box::pin(async {})
        }
    }

    /// Lets a pipeline on the test's one thread take everything queued and flush it (it yields
    /// once itself before a flush, so one yield of ours is not enough).
    async fn drain() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_ready_events_is_flushed_once_and_the_last_event_is_always_flushed() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let pipeline = Pipeline::start(vec![Box::new(Flushes(log.clone()))], None);
        // The test's runtime has one thread: the task takes these only once the test awaits; the
        // clock is paused, so the deadline never cuts the burst however slow the machine is.
        for n in 0..100 {
            pipeline.push(&Event::AssistantDelta { item_id: format!("i{n}"), delta: "x".into() });
        }
        drain().await;
        pipeline.push(&Event::TurnStarted { turn_id: "t".into() });
        pipeline.finish(&result(TerminalKind::Ok)).await;
        let log = log.lock().unwrap();
        let events = log.iter().filter(|&&what| what == "event").count();
        let flushes = log.iter().filter(|&&what| what == "flush").count();
        assert_eq!(events, 101);
        assert!((2..=3).contains(&flushes), "a flush per burst, not per event: {log:?}");
        assert_eq!(log.last(), Some(&"flush"), "nothing is left unflushed: {log:?}");
        let last_event = log.iter().rposition(|&what| what == "event").unwrap();
        let first_after_burst = log.iter().position(|&what| what == "flush").unwrap();
        assert!(first_after_burst < last_event, "the first burst was flushed before the late event came");
    }

    /// Logs each store's row count into the log the stages write too.
    struct Groups(Log, GroupSizes);

    impl TranscriptStore for Groups {
        fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), StoreError>> {
            self.0.lock().unwrap().push("store");
            self.1.lock().unwrap().push(messages.len());
            Box::pin(async { Ok(()) })
        }
    }

    fn call(id: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall { call_id: id.into(), tool_name: "exec".into(), arguments, native: true, native_mutation: None }
    }

    fn finished(id: &str) -> Event {
        Event::ToolFinished(ToolFinish {
            call: call(id, serde_json::json!({})),
            outcome: ToolOutcome::Success,
            exit_code: Some(0),
            execution_started: true,
            output: None,
        })
    }

    /// What the stages and the store did, in order ("event", "flush", "store").
    type Log = Arc<Mutex<Vec<&'static str>>>;

    /// The row count of each group stored.
    type GroupSizes = Arc<Mutex<Vec<usize>>>;

    /// A pipeline with a logging stage and store, mirroring (without a prompt row) turn `t`.
    fn logged() -> (Pipeline, Log, GroupSizes) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let groups = Arc::new(Mutex::new(Vec::new()));
        let spec = MirrorSpec { scope: "s".into(), label: label(), prompt: None };
        let store = Groups(log.clone(), groups.clone());
        let pipeline = Pipeline::start(vec![Box::new(Flushes(log.clone()))], Some((spec, Box::new(store))));
        (pipeline, log, groups)
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_rows_is_stored_as_one_group_after_the_stages_flushed() {
        let (pipeline, log, groups) = logged();
        // Queued before the task runs (one thread, paused clock): one burst.
        pipeline.push(&Event::TurnStarted { turn_id: "t".into() });
        for n in 0..10 {
            pipeline.push(&Event::ToolStarted(call(&format!("c{n}"), serde_json::json!({}))));
            pipeline.push(&finished(&format!("c{n}")));
        }
        drain().await;
        pipeline.push(&Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }));
        pipeline.finish(&result(TerminalKind::Ok)).await;
        let groups = groups.lock().unwrap();
        // Ten calls, ten results, then the final assistant row with the terminal.
        assert_eq!(groups.iter().sum::<usize>(), 21, "{groups:?}");
        assert_eq!(groups.first(), Some(&20), "the burst's rows in one group: {groups:?}");
        let log = log.lock().unwrap();
        for (at, what) in log.iter().enumerate() {
            if *what == "store" {
                assert_eq!(
                    log.get(at.wrapping_sub(1)),
                    Some(&"flush"),
                    "the stages flush before rows are stored: {log:?}"
                );
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn held_rows_are_stored_once_they_reach_the_row_or_byte_cap() {
        let (pipeline, _log, groups) = logged();
        pipeline.push(&Event::TurnStarted { turn_id: "t".into() });
        for n in 0..(MAX_HELD_ROWS + 10) {
            pipeline.push(&Event::ToolStarted(call(&format!("c{n}"), serde_json::json!({}))));
        }
        // Each row holds a quarter of the byte cap: every fourth row fills the hold.
        let big = serde_json::json!({ "text": "x".repeat(MAX_HELD_ROW_BYTES / 4) });
        for n in 0..8 {
            pipeline.push(&Event::ToolStarted(call(&format!("big{n}"), big.clone())));
        }
        pipeline.finish(&result(TerminalKind::Ok)).await;
        let groups = groups.lock().unwrap();
        assert_eq!(groups.first(), Some(&MAX_HELD_ROWS), "the row cap cuts the first group: {groups:?}");
        assert!(groups.iter().all(|&rows| rows <= MAX_HELD_ROWS), "the closing rows are cut too: {groups:?}");
        // The ten small rows left over and four big ones fill the hold; the other four big rows are
        // what was held when the queue ran empty.
        assert_eq!(groups.get(1..3), Some(&[14, 4][..]), "the byte cap cuts the big rows: {groups:?}");
        // The closing rows (a failed result per open call, the final row) come from `finish`.
        assert!(groups.iter().sum::<usize>() > MAX_HELD_ROWS + 18, "{groups:?}");
    }

    #[test]
    fn a_cut_never_parts_a_call_from_its_result() {
        let assistant = |id: &str| {
            let mut mirror = TranscriptMirror::new("s", "t", label());
            mirror.on_event(&Event::ToolStarted(call(id, serde_json::json!({})))).remove(0)
        };
        let result_row = |id: &str| {
            let mut mirror = TranscriptMirror::new("s", "t", label());
            mirror.on_event(&finished(id)).pop().unwrap()
        };
        let mut rows: Vec<Message> = (0..MAX_HELD_ROWS - 1).map(|n| result_row(&format!("r{n}"))).collect();
        rows.push(assistant("c"));
        rows.push(result_row("c"));
        rows.push(result_row("d"));
        let groups = groups_of(rows);
        let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
        assert_eq!(sizes, [MAX_HELD_ROWS + 1, 1], "the pair stays together, the next row starts a group");
        assert!(matches!(groups[0].last(), Some(Message::ToolResult(_))));
        assert!(groups_of(Vec::new()).is_empty());
    }

    /// Panics on the first event it is given.
    struct Panics;

    impl EventStage for Panics {
        fn on_event<'a>(&'a mut self, _event: &'a Event) -> BoxFuture<'a, ()> {
            Box::pin(async { panic!("a stage bug") })
        }
    }

    #[tokio::test]
    async fn a_pipeline_whose_task_dies_lets_the_turn_go_on_and_finish_says_why() {
        let pipeline = Pipeline::start(vec![Box::new(Panics)], None);
        let mut sink = pipeline.sender();
        let big = "x".repeat(1 << 20);
        // Fill the queue past its cap, as a host that lags would; the stage dies on the first event.
        for n in 0..16 {
            TurnSink::push(&mut sink, &Event::AssistantFinal { item_id: format!("i{n}"), text: big.clone() });
        }
        if let Some(room) = TurnSink::room(&sink) {
            tokio::time::timeout(std::time::Duration::from_secs(30), room)
                .await
                .expect("a dead pipeline never holds the turn back");
        }
        let mirrored = pipeline.finish(&result(TerminalKind::Ok)).await;
        assert!(mirrored.error.is_some_and(|e| e.to_string().contains("died")));
    }

    #[tokio::test]
    async fn a_failed_append_is_kept_and_the_turn_is_not_owned() {
        let rows = Arc::new(Mutex::new(Vec::new()));
        let spec = MirrorSpec { scope: "s".into(), label: label(), prompt: None };
        let store = Kept { rows: rows.clone(), fail_after: 0 };
        let pipeline = Pipeline::start(Vec::new(), Some((spec, Box::new(store))));
        pipeline.push(&Event::TurnStarted { turn_id: "t1".into() });
        pipeline.push(&Event::AssistantFinal { item_id: "i1".into(), text: "hello".into() });
        // No terminal reaches the mirror: finishing closes the turn's rows itself.
        let mirrored = pipeline.finish(&result(TerminalKind::Failed)).await;
        assert!(!mirrored.owned);
        assert!(mirrored.error.is_some_and(|e| e.to_string() == "full"));
        assert!(rows.lock().unwrap().is_empty());
    }
}
