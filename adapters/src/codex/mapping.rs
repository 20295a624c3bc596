//! The pure mapping from Codex app-server notifications to normalized [`Event`]s, one turn at a time.
//!
//! A [`TurnMapper`] is fed every notification the peer sends, in arrival order, and returns the events
//! they mean. It does no I/O and keeps only what it needs to keep the event stream well formed:
//!
//! - every event of a turn follows its `TurnStarted`, and nothing follows its `TurnTerminal`;
//! - every `ToolFinished` follows a `ToolStarted` for the same call id (synthesized from the completed
//!   item when `item/started` was missed), and there is exactly one `ToolFinished` per call id, whatever
//!   the peer repeats (Codex re-sends pending items on resume: docs/peers/codex.md#re-sent-server-requests);
//! - a tool's outcome comes from the item's structured `status` / `exitCode` / `success`, never from
//!   its display text; a missing or unknown status is a failure that may have run (docs/peers/codex.md#items),
//!   and a declined approval did not run (docs/peers/codex.md#decline-is-not-cancel);
//! - `turn/completed` is authoritative (docs/peers/codex.md#missing-turncompleted): its `turn.items` backfill what was missed, and
//!   every tool still open when the turn ends gets a terminal (docs/peers/codex.md#every-tool-gets-one-terminal), so the host's
//!   `observeToolTerminal` is called exactly once per call (docs/peers/openclaw.md#observetoolterminal).

use std::collections::{HashMap, HashSet};

use clawbridge_bridge::events::{
    CappedText, Event, LastCall, NativeMutation, Plan, PlanStep, PlanStepStatus, TerminalCause, TerminalKind, ToolCall,
    ToolFinish, ToolImage, ToolOutcome, TurnTerminal, Usage,
};
use clawbridge_bridge::input::image_from_data_url;
use clawbridge_protocol::codex::{
    CodexErrorInfo, CommandExecutionItem, DynamicToolCallItem, DynamicToolContentItem, ItemStatus, McpToolCallItem,
    PlanStepStatus as WirePlanStepStatus, ServerNotification, ThreadItem, TokenUsageBreakdown, Turn, TurnError,
    TurnStatus,
};
use serde_json::{Value, json};

/// Canonical name of Codex's shell tool (`commandExecution` items): `bash`, as the project's issue
/// for the Codex backend specifies. It is a native tool (reported with `nativeMutation`), so the host
/// needs no definition of its own for it; OpenClaw's own shell tool is `exec`.
pub const SHELL_TOOL_NAME: &str = "bash";
/// Canonical name of Codex's patch tool (`fileChange` items).
pub const PATCH_TOOL_NAME: &str = "apply_patch";
/// Canonical name of Codex's web search (`webSearch` items).
pub const WEB_SEARCH_TOOL_NAME: &str = "web_search";

/// Facts for native tools that may change files, processes or the outside world: a shell command, a
/// patch, an MCP call (docs/peers/codex.md#items counts all three as mutating; we cannot tell a read-only
/// command from a writing one, so the host must assume the worst).
const MUTATING: NativeMutation = NativeMutation { mutating_action: true, replay_safe: false };
/// Facts for native tools that only read (web search).
const READ_ONLY: NativeMutation = NativeMutation { mutating_action: false, replay_safe: true };

/// The canonical (OpenClaw) tool name of a tool item, or `None` when the item is not a tool this
/// mapping reports (messages, reasoning, plans, item types these types do not model).
///
/// `commandExecution` → [`SHELL_TOOL_NAME`], `fileChange` → [`PATCH_TOOL_NAME`], `mcpToolCall` →
/// `server.tool`, `webSearch` → [`WEB_SEARCH_TOOL_NAME`], `dynamicToolCall` → the tool's own name
/// (dynamic tools are host tools we declared, so their name already is the host's; a namespace is a
/// Codex grouping only and is dropped).
pub fn canonical_tool_name(item: &ThreadItem) -> Option<String> {
    Some(match item {
        ThreadItem::CommandExecution(_) => SHELL_TOOL_NAME.to_owned(),
        ThreadItem::FileChange(_) => PATCH_TOOL_NAME.to_owned(),
        ThreadItem::McpToolCall(i) if i.server.is_empty() => i.tool.clone(),
        ThreadItem::McpToolCall(i) => format!("{}.{}", i.server, i.tool),
        ThreadItem::WebSearch(_) => WEB_SEARCH_TOOL_NAME.to_owned(),
        ThreadItem::DynamicToolCall(i) => i.tool.clone(),
        _ => return None,
    })
}

/// The tool call a tool item describes (canonical name, the arguments that reach the tool, and the
/// native / mutation facts), or `None` for items that are not tools. Also useful to describe the item
/// an approval request points at.
pub fn tool_call(item: &ThreadItem) -> Option<ToolCall> {
    let tool_name = canonical_tool_name(item)?;
    let call_id = item.id().unwrap_or_default().to_owned();
    let (arguments, native, native_mutation) = match item {
        // The command as run (Codex's wrapped `/bin/bash -lc '…'`) and where: that is what reached the shell.
        ThreadItem::CommandExecution(i) => (json!({"command": i.command, "cwd": i.cwd}), true, Some(MUTATING)),
        ThreadItem::FileChange(i) => {
            let changes = serde_json::to_value(&i.changes).unwrap_or(Value::Null);
            (json!({"changes": changes}), true, Some(MUTATING))
        }
        ThreadItem::McpToolCall(i) => (i.arguments.clone(), true, Some(MUTATING)),
        ThreadItem::WebSearch(i) => {
            let mut args = json!({"query": i.query});
            if let Some(action) = &i.action {
                args["action"] = action.clone();
            }
            (args, true, Some(READ_ONLY))
        }
        // A host tool: the host has its own metadata for it, so no native facts.
        ThreadItem::DynamicToolCall(i) => (i.arguments.clone(), false, None),
        _ => return None,
    };
    Some(ToolCall { call_id, tool_name, arguments, native, native_mutation })
}

/// Whether arguments carry nothing (null, `{}`, or an object of nulls / empty arrays). A completed
/// item that repeats no arguments must not erase the ones its `item/started` reported.
fn is_blank(arguments: &Value) -> bool {
    match arguments {
        Value::Null => true,
        Value::Object(map) => map.values().all(|v| match v {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            _ => false,
        }),
        _ => false,
    }
}

/// State for one turn of one thread: turns Codex notifications into normalized events.
///
/// Create it when the turn is requested (before `turn/start` is sent, so nothing is missed), feed it
/// every notification in arrival order, and either see [`is_complete`](Self::is_complete) or call
/// [`abandon`](Self::abandon) when the turn ends any other way.
#[derive(Debug)]
pub struct TurnMapper {
    /// The thread whose notifications count.
    thread_id: String,
    /// The turn, once `turn/started` (or the caller, from the `turn/start` result) named it.
    turn_id: Option<String>,
    /// `TurnStarted` was emitted.
    announced: bool,
    /// `ModelCallStarted` was emitted (once, for `turn/started`).
    model_call_announced: bool,
    /// `turn/completed` for this turn was seen.
    complete: bool,
    /// A `TurnTerminal` was emitted (by `turn/completed` or [`abandon`](Self::abandon)); nothing follows.
    terminated: bool,
    /// Tool calls started and not yet finished, in start order (so synthesized terminals come out in a
    /// stable order). Each holds the call as last known (arguments may be updated by patch updates).
    open_tools: Vec<ToolCall>,
    /// Call ids that got their `ToolFinished`; never finished twice, never restarted.
    finished_tools: HashSet<String>,
    /// Agent message items that got their `AssistantFinal`.
    final_messages: HashSet<String>,
    /// Reasoning items that got their `ReasoningFinal`.
    final_reasoning: HashSet<String>,
    /// For each reasoning item, the highest summary part a delta was emitted for, so a new part starts
    /// with the same separator the final text joins parts with.
    reasoning_part: HashMap<String, u32>,
    /// The message of the last final (`willRetry:false`) `error` notification, for a failed turn whose
    /// `turn.error` is missing.
    last_error: Option<String>,
    /// Whether that final error was Codex's transport failure ([`TurnMapper::is_transport`]).
    last_error_transport: bool,
    /// The detail of the last retried error when Codex classed it as its transport
    /// ([`is_transport_failure`]): what a final error of class `other` repeats when the retries ran out.
    retried_transport: Option<String>,
    /// The last transient (`willRetry:true`) error and how many came: what a turn that then stalls
    /// or is abandoned was waiting on, named in its terminal message.
    last_retry: Option<(u32, String)>,
    /// Token counts at the start of this turn (thread totals), learned from the turn's first usage
    /// notification as `total - last`.
    usage_baseline: Option<TokenUsageBreakdown>,
}

/// What separates reasoning summary parts, in deltas and in the final text.
const PART_SEPARATOR: &str = "\n\n";

impl TurnMapper {
    /// A mapper for the next turn on `thread_id`; the turn id is learned from `turn/started` (or
    /// [`expect_turn`](Self::expect_turn)).
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            turn_id: None,
            announced: false,
            model_call_announced: false,
            complete: false,
            terminated: false,
            open_tools: Vec::new(),
            finished_tools: HashSet::new(),
            final_messages: HashSet::new(),
            final_reasoning: HashSet::new(),
            reasoning_part: HashMap::new(),
            last_error: None,
            last_error_transport: false,
            retried_transport: None,
            last_retry: None,
            usage_baseline: None,
        }
    }

    /// Pins the turn id (from the `turn/start` result, which may arrive before or after `turn/started`).
    /// Returns false, changing nothing, when a different turn id is already known: `turn/start` on a
    /// thread with an active turn steers into that turn, and the caller must then map that one instead.
    pub fn expect_turn(&mut self, turn_id: &str) -> bool {
        match &self.turn_id {
            Some(known) => known == turn_id,
            None => {
                self.turn_id = Some(turn_id.to_owned());
                true
            }
        }
    }

    /// The turn id, once known.
    pub fn turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    /// True once `turn/completed` for this turn was seen.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Zero or more events for one notification, in order.
    ///
    /// Ignored (no events): notifications for another thread, or without a thread; turn-scoped
    /// notifications before the turn id is known (on resume Codex replays the previous turn's token
    /// usage before the new turn starts) or for another turn; unknown methods (the caller logs them);
    /// everything after the turn's terminal.
    pub fn on_notification(&mut self, notification: &ServerNotification) -> Vec<Event> {
        use ServerNotification as N;
        let mut out = Vec::new();
        if self.terminated || !self.accepts(notification) {
            return out;
        }
        match notification {
            N::TurnStarted(n) => {
                self.turn_id.get_or_insert_with(|| n.turn.id.clone());
                // Codex sends the turn's first model request as it starts the turn; its app-server
                // announces no later request (docs/peers/codex.md#model-requests), so this is the
                // only model call start it can report.
                if !self.model_call_announced {
                    self.model_call_announced = true;
                    self.push(&mut out, Event::ModelCallStarted {});
                }
            }
            N::TurnCompleted(n) => self.on_turn_completed(&n.turn, &mut out),
            N::ItemStarted(n) => self.on_item_started(&n.item, &mut out),
            N::ItemCompleted(n) => self.on_item_completed(&n.item, &mut out),
            // After the final text, a late delta would only duplicate it.
            N::AgentMessageDelta(n) if !n.delta.is_empty() && !self.final_messages.contains(&n.item_id) => {
                self.push(&mut out, Event::AssistantDelta { item_id: n.item_id.clone(), delta: n.delta.clone() });
            }
            N::ReasoningSummaryTextDelta(n) => {
                if n.delta.is_empty() || self.final_reasoning.contains(&n.item_id) {
                    return out;
                }
                let mut delta = String::new();
                match self.reasoning_part.get(&n.item_id) {
                    Some(&part) if n.summary_index > part => delta.push_str(PART_SEPARATOR),
                    _ => {}
                }
                let part = self.reasoning_part.entry(n.item_id.clone()).or_insert(n.summary_index);
                *part = (*part).max(n.summary_index);
                delta.push_str(&n.delta);
                self.push(&mut out, Event::ReasoningDelta { item_id: n.item_id.clone(), delta });
            }
            // Output of a call we never announced, or already finished, has nowhere to go; the completed
            // item's `aggregatedOutput` is authoritative anyway.
            N::CommandExecutionOutputDelta(n) | N::FileChangeOutputDelta(n)
                if !n.delta.is_empty() && self.open_tools.iter().any(|c| c.call_id == n.item_id) =>
            {
                self.push(&mut out, Event::ToolOutputDelta { call_id: n.item_id.clone(), delta: n.delta.clone() });
            }
            N::FileChangePatchUpdated(n) => {
                // The patch that will be applied changed: keep it as the call's arguments, so the
                // terminal reports what actually reached the tool. No event: the start was announced.
                if let Some(call) = self.open_tools.iter_mut().find(|c| c.call_id == n.item_id) {
                    call.arguments = json!({"changes": serde_json::to_value(&n.changes).unwrap_or(Value::Null)});
                }
            }
            N::TurnPlanUpdated(n) => {
                let steps = n
                    .plan
                    .iter()
                    .map(|s| PlanStep { step: s.step.clone(), status: plan_step_status(s.status.as_ref()) })
                    .collect();
                self.push(&mut out, Event::Plan(Plan { explanation: n.explanation.clone(), steps }));
            }
            N::ThreadTokenUsageUpdated(n) => {
                let usage = &n.token_usage;
                // `total` is cumulative over the thread and `last` is one model call; the turn's usage
                // is the growth of `total` since the turn began. The baseline is `total - last` of the
                // turn's first report, so a repeated report is not counted twice (summing `last` would)
                // and a resumed thread's history is not counted at all (reporting `total` would).
                let baseline =
                    self.usage_baseline.get_or_insert_with(|| breakdown_minus(&usage.total, &usage.last)).clone();
                let turn = breakdown_minus(&usage.total, &baseline);
                self.push(
                    &mut out,
                    Event::Usage(Usage {
                        input_tokens: turn.input_tokens,
                        output_tokens: turn.output_tokens,
                        cached_input_tokens: turn.cached_input_tokens,
                        reasoning_tokens: turn.reasoning_output_tokens,
                    }),
                );
                // `last` is the latest model call alone: its prompt size and cache use, with the
                // window Codex applies to the thread (what the host shows as the session's context).
                let last = &usage.last;
                let call = LastCall {
                    usage: Usage {
                        input_tokens: last.input_tokens,
                        output_tokens: last.output_tokens,
                        cached_input_tokens: last.cached_input_tokens,
                        reasoning_tokens: last.reasoning_output_tokens,
                    },
                    cache_write_tokens: last.cache_write_input_tokens,
                    context_window: usage.model_context_window.filter(|w| *w > 0),
                };
                self.push(&mut out, Event::LastCall(call));
            }
            // `willRetry:true` is transient: Codex retries and the turn goes on. A final error only
            // explains the `failed` turn/completed that follows.
            N::Error(n) if !n.will_retry => {
                self.last_error = Some(describe_error(&n.error));
                self.last_error_transport = self.is_transport(&n.error);
            }
            // Shown to the host as progress, so a retrying endpoint is visible before the turn ends.
            N::Error(n) => {
                let message = describe_error(&n.error);
                self.retried_transport = n
                    .error
                    .codex_error_info
                    .as_ref()
                    .filter(|info| is_transport_failure(info))
                    .map(|_| n.error.additional_details.as_deref().unwrap_or(&n.error.message).trim().to_owned());
                let counted = self.last_retry.as_ref().map_or(1, |(count, _)| count + 1);
                // 0.169 numbers its retries in the message (`Reconnecting... 2/5`); a count of our
                // own stands in when it does not.
                let (numbered, max_attempts) = retry_numbers(&n.error.message).unzip();
                let attempt = numbered.unwrap_or(counted);
                self.last_retry = Some((attempt, message.clone()));
                let http_status = n.error.codex_error_info.as_ref().and_then(http_status);
                let retry =
                    Event::ModelRetry { message, attempt: Some(attempt), max_attempts, retry_in_ms: None, http_status };
                self.push(&mut out, retry);
            }
            _ => {}
        }
        out
    }

    /// Closing a turn that `turn/completed` never ended (the server died, the watchdog fired, the
    /// user cancelled); nothing when it did end. Every tool still open gets the terminal
    /// [`ToolOutcome::abandoned`] gives, counted as started (the host must assume a side effect),
    /// and the `TurnTerminal` comes last.
    pub fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        if self.terminated {
            return Vec::new();
        }
        let mut out = Vec::new();
        let message = match &self.last_retry {
            Some((count, last)) => format!("{message}; the model request had failed {count} time(s), last: {last}"),
            None => message,
        };
        let outcome = ToolOutcome::abandoned(kind, &message);
        self.close_open_tools(&outcome, &mut out);
        self.terminate(kind, Some(message), &mut out);
        out
    }

    /// Whether `notification` belongs to this thread and turn.
    fn accepts(&self, notification: &ServerNotification) -> bool {
        use ServerNotification as N;
        match notification.thread_id() {
            Some(thread) if thread == self.thread_id => {}
            // An `error` without a thread can only be about the running turn; anything else without a
            // thread (config warnings, deprecation notices) is not turn content.
            None if matches!(notification, N::Error(_)) => {}
            _ => return false,
        }
        let stated = match notification {
            N::TurnStarted(n) => {
                return self.turn_id.as_deref().is_none_or(|known| known == n.turn.id);
            }
            N::TurnCompleted(n) => Some(n.turn.id.as_str()),
            N::ItemStarted(n) => Some(n.turn_id.as_str()),
            N::ItemCompleted(n) => Some(n.turn_id.as_str()),
            N::AgentMessageDelta(n) | N::CommandExecutionOutputDelta(n) | N::FileChangeOutputDelta(n) => {
                Some(n.turn_id.as_str())
            }
            N::ReasoningSummaryTextDelta(n) => Some(n.turn_id.as_str()),
            N::FileChangePatchUpdated(n) => Some(n.turn_id.as_str()),
            N::TurnPlanUpdated(n) => Some(n.turn_id.as_str()),
            N::ThreadTokenUsageUpdated(n) => Some(n.turn_id.as_str()),
            N::Error(n) => n.turn_id.as_deref(),
            // Nothing else maps to an event.
            _ => return false,
        };
        // Before the turn is known, turn content can only be a previous turn's; an empty or absent turn
        // id (the field is optional on deltas and errors) is taken as "this turn".
        let Some(known) = self.turn_id.as_deref() else { return false };
        stated.is_none_or(|t| t.is_empty() || t == known)
    }

    /// Emits `TurnStarted` once, as soon as the turn id is known.
    fn announce(&mut self, out: &mut Vec<Event>) {
        if self.announced {
            return;
        }
        if let Some(turn_id) = &self.turn_id {
            self.announced = true;
            out.push(Event::TurnStarted { turn_id: turn_id.clone() });
        }
    }

    /// Emits `event`, after `TurnStarted` if that is still owed (the `turn/start` result may have pinned
    /// the id before `turn/started` arrived).
    fn push(&mut self, out: &mut Vec<Event>, event: Event) {
        self.announce(out);
        out.push(event);
    }

    fn on_item_started(&mut self, item: &ThreadItem, out: &mut Vec<Event>) {
        let Some(call) = tool_call(item) else { return };
        self.start_tool(call, out);
    }

    /// Announces a tool call unless it already started (Codex re-sends items on resume) or finished.
    fn start_tool(&mut self, call: ToolCall, out: &mut Vec<Event>) {
        if self.finished_tools.contains(&call.call_id) || self.open_tools.iter().any(|c| c.call_id == call.call_id) {
            return;
        }
        self.open_tools.push(call.clone());
        self.push(out, Event::ToolStarted(call));
    }

    fn on_item_completed(&mut self, item: &ThreadItem, out: &mut Vec<Event>) {
        // Codex compacted the thread by itself (its auto-compaction, mid-turn or before it).
        if item.item_type() == Some("contextCompaction") {
            let item_id = item.id().unwrap_or_default().to_string();
            self.push(out, Event::ContextCompacted { item_id, tokens_before: None, tokens_after: None });
            return;
        }
        match item {
            ThreadItem::AgentMessage(message) => {
                if self.final_messages.insert(message.id.clone()) {
                    let event = Event::AssistantFinal { item_id: message.id.clone(), text: message.text.clone() };
                    self.push(out, event);
                }
            }
            ThreadItem::Reasoning(reasoning) => {
                // The summary is what the user may see; raw reasoning content (rarely exposed) stands in
                // only when there is no summary.
                let parts = if reasoning.summary.is_empty() { &reasoning.content } else { &reasoning.summary };
                let text = parts.join(PART_SEPARATOR);
                let streamed = self.reasoning_part.contains_key(&reasoning.id);
                // An empty reasoning item (encrypted reasoning) is not reasoning text for the host, unless
                // deltas were shown and must be replaced.
                if (!text.is_empty() || streamed) && self.final_reasoning.insert(reasoning.id.clone()) {
                    let event = Event::ReasoningFinal { item_id: reasoning.id.clone(), text, signature: None };
                    self.push(out, event);
                }
            }
            ThreadItem::Plan(plan) => {
                // A plan item (plan mode) is prose, not steps: it becomes the plan's explanation.
                if !plan.text.is_empty() {
                    let event = Event::Plan(Plan { explanation: Some(plan.text.clone()), steps: Vec::new() });
                    self.push(out, event);
                }
            }
            _ => self.finish_tool_item(item, out),
        }
    }

    /// Emits the terminal of a completed tool item (and its start, when `item/started` was missed).
    fn finish_tool_item(&mut self, item: &ThreadItem, out: &mut Vec<Event>) {
        let Some(completed) = tool_call(item) else { return };
        if self.finished_tools.contains(&completed.call_id) {
            return;
        }
        self.start_tool(completed.clone(), out);
        let Some(index) = self.open_tools.iter().position(|c| c.call_id == completed.call_id) else { return };
        let mut call = self.open_tools.remove(index);
        // The completed item is authoritative, but it may leave out arguments the start reported.
        if !is_blank(&completed.arguments) {
            call.arguments = completed.arguments;
        }
        let mut finish = tool_finish(item, call);
        if matches!(finish.outcome, ToolOutcome::Declined { .. }) && finish.call.native {
            // A declined call did nothing (declined approvals report no mutation: docs/peers/openclaw.md#observetoolterminal).
            finish.call.native_mutation = Some(READ_ONLY);
        }
        self.finished_tools.insert(finish.call.call_id.clone());
        self.push(out, Event::ToolFinished(finish));
    }

    /// Finishes every open tool with `outcome`, conservatively as started.
    fn close_open_tools(&mut self, outcome: &ToolOutcome, out: &mut Vec<Event>) {
        for call in std::mem::take(&mut self.open_tools) {
            self.finished_tools.insert(call.call_id.clone());
            let finish =
                ToolFinish { call, outcome: outcome.clone(), exit_code: None, execution_started: true, output: None };
            self.push(out, Event::ToolFinished(finish));
        }
    }

    /// Finishes every open shell command as running in the background.
    fn background_open_commands(&mut self, out: &mut Vec<Event>) {
        let (commands, others): (Vec<ToolCall>, Vec<ToolCall>) =
            std::mem::take(&mut self.open_tools).into_iter().partition(|c| c.native && c.tool_name == SHELL_TOOL_NAME);
        self.open_tools = others;
        for call in commands {
            self.finished_tools.insert(call.call_id.clone());
            // Its output so far went out as deltas; the rest is the process's, not this turn's.
            let outcome = ToolOutcome::Backgrounded { detail: None };
            let finish = ToolFinish { call, outcome, exit_code: None, execution_started: true, output: None };
            self.push(out, Event::ToolFinished(finish));
        }
    }

    fn on_turn_completed(&mut self, turn: &Turn, out: &mut Vec<Event>) {
        self.turn_id.get_or_insert_with(|| turn.id.clone());
        self.complete = true;
        self.announce(out);
        // The terminal record is authoritative: whatever its items say completed and we missed is
        // reported now (0.169 sends only the final agent message; a full view would carry tools too).
        for item in &turn.items {
            self.on_item_completed(item, out);
        }
        let mut cause = None;
        let (kind, message) = match &turn.status {
            Some(TurnStatus::Completed) => (TerminalKind::Ok, None),
            Some(TurnStatus::Interrupted) => (TerminalKind::Aborted, None),
            Some(TurnStatus::Failed) => {
                // The turn's own error classifies it; without a class, the final error notification's.
                let transport = match turn.error.as_ref() {
                    Some(error) if error.codex_error_info.is_some() => self.is_transport(error),
                    _ => self.last_error_transport,
                };
                if transport {
                    cause = Some(TerminalCause::ProviderTransport);
                }
                let message = turn
                    .error
                    .as_ref()
                    .map(describe_error)
                    .filter(|m| !m.is_empty())
                    .or_else(|| self.last_error.clone())
                    .or_else(|| self.last_retry.as_ref().map(|(_, last)| last.clone()))
                    .unwrap_or_else(|| "the turn failed".to_owned());
                (TerminalKind::Failed, Some(message))
            }
            // A terminal record without a terminal status is not a success.
            Some(other) => (TerminalKind::Failed, Some(format!("turn ended with status {}", other.as_str()))),
            None => (TerminalKind::Failed, Some("turn ended without a status".to_owned())),
        };
        // A command still open when the turn completed was backgrounded: Codex's unified exec
        // returns "Process running with session ID …" to the model past the command's yield time
        // and ends the turn while the process runs on (docs/peers/codex.md#backgrounded-commands).
        if kind == TerminalKind::Ok {
            self.background_open_commands(out);
        }
        // Tools the turn ended on without ever reporting their end.
        let outcome = ToolOutcome::left_open(kind);
        self.close_open_tools(&outcome, out);
        self.terminated = true;
        self.push(out, Event::TurnTerminal(TurnTerminal { kind, message, cause }));
    }

    /// Whether a final error is Codex's transport failure: its class says so, or (codex 0.169) the
    /// class is `other` and the error repeats the retried transport error's detail: when its stream
    /// retries run out, Codex fails the turn with the last retry's detail as the message and the class
    /// `other`, while each retry before it carried `responseStreamDisconnected`.
    fn is_transport(&self, error: &TurnError) -> bool {
        match &error.codex_error_info {
            Some(CodexErrorInfo::Other) => self.retried_transport.as_deref() == Some(error.message.trim()),
            Some(info) => is_transport_failure(info),
            None => false,
        }
    }

    fn terminate(&mut self, kind: TerminalKind, message: Option<String>, out: &mut Vec<Event>) {
        self.terminated = true;
        self.push(out, Event::TurnTerminal(TurnTerminal { kind, message, cause: None }));
    }
}

/// The terminal of a completed tool item, from its structured fields only.
fn tool_finish(item: &ThreadItem, call: ToolCall) -> ToolFinish {
    let status = item.status();
    let mut finish =
        ToolFinish { call, outcome: ToolOutcome::Success, exit_code: None, execution_started: true, output: None };
    match item {
        ThreadItem::CommandExecution(i) => command_finish(i, status, &mut finish),
        ThreadItem::FileChange(_) => finish.outcome = status_outcome(status, None),
        ThreadItem::McpToolCall(i) => mcp_finish(i, status, &mut finish),
        ThreadItem::DynamicToolCall(i) => dynamic_finish(i, status, &mut finish),
        // A web search item has no status: its completion is its only terminal signal.
        ThreadItem::WebSearch(_) => {}
        _ => finish.outcome = status_outcome(status, None),
    }
    if matches!(finish.outcome, ToolOutcome::Declined { .. }) {
        finish.execution_started = false;
    }
    finish
}

/// The outcome a tool status means; `failure` describes a `failed` status.
fn status_outcome(status: Option<&ItemStatus>, failure: Option<String>) -> ToolOutcome {
    let failed = |error: String| ToolOutcome::Failure { error: Some(error), error_code: None, timed_out: false };
    match status {
        Some(ItemStatus::Completed) => ToolOutcome::Success,
        Some(ItemStatus::Failed) => failed(failure.unwrap_or_else(|| "failed".to_owned())),
        Some(ItemStatus::Declined) => ToolOutcome::Declined { reason: None },
        // Completed while still "in progress", an unknown value, or no status at all: we cannot tell
        // whether it worked, so it did not (docs/peers/codex.md#items).
        Some(other) => failed(format!("unknown status: {}", other.as_str())),
        None => failed("unknown status".to_owned()),
    }
}

fn command_finish(item: &CommandExecutionItem, status: Option<&ItemStatus>, finish: &mut ToolFinish) {
    finish.exit_code = item.exit_code;
    finish.output = item.aggregated_output.as_deref().map(capped);
    let failure = item.exit_code.map(|code| format!("exit code {code}"));
    finish.outcome = match (status, item.exit_code) {
        // "completed" means the process ran to its end; its own verdict is the exit code.
        (Some(ItemStatus::Completed), Some(code)) if code != 0 => ToolOutcome::Failure {
            error: Some(format!("command exited with code {code}")),
            error_code: None,
            timed_out: false,
        },
        _ => status_outcome(status, failure),
    };
}

fn mcp_finish(item: &McpToolCallItem, status: Option<&ItemStatus>, finish: &mut ToolFinish) {
    let error = item.error.as_ref().map(|e| e.message.clone()).filter(|m| !m.is_empty());
    let result_text = item.result.as_ref().and_then(mcp_result_text);
    finish.output = result_text.as_deref().or(error.as_deref()).map(capped);
    // MCP's own structured failure flag: a "completed" call whose result says `isError` failed.
    let is_error = item.result.as_ref().and_then(|r| r.get("isError")).and_then(Value::as_bool) == Some(true);
    finish.outcome = match status {
        Some(ItemStatus::Completed) if is_error || error.is_some() => ToolOutcome::Failure {
            error: Some(error.unwrap_or_else(|| "the tool reported an error".to_owned())),
            error_code: None,
            timed_out: false,
        },
        _ => status_outcome(status, error),
    };
}

fn dynamic_finish(item: &DynamicToolCallItem, status: Option<&ItemStatus>, finish: &mut ToolFinish) {
    let texts: Vec<&str> = item
        .content_items
        .iter()
        .flatten()
        .filter_map(|c| match c {
            DynamicToolContentItem::InputText { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // Images our reply carried (a host tool's screenshot) stay images in the transcript.
    let images: Vec<ToolImage> = item
        .content_items
        .iter()
        .flatten()
        .filter_map(|c| match c {
            DynamicToolContentItem::InputImage { image_url } => image_from_data_url(image_url),
            _ => None,
        })
        .collect();
    if !texts.is_empty() || !images.is_empty() {
        let mut output = capped(&texts.join("\n"));
        output.images = images;
        finish.output = Some(output);
    }
    finish.outcome = match (status, item.success) {
        // Our own reply said it failed (or the request errored), whatever the status says.
        (Some(ItemStatus::Completed), Some(false)) => ToolOutcome::Failure {
            error: Some("the tool reported failure".to_owned()),
            error_code: None,
            timed_out: false,
        },
        _ => status_outcome(status, None),
    };
}

/// The text parts of an MCP `CallToolResult` (`{content:[{type:"text",text}…]}`), or the whole result
/// as JSON when it has no text.
fn mcp_result_text(result: &Value) -> Option<String> {
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    if !texts.is_empty() {
        return Some(texts.join("\n"));
    }
    match result {
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Output text bounded like every tool output (events::CappedText defaults).
fn capped(text: &str) -> clawbridge_bridge::events::CappedOutput {
    let mut capped = CappedText::default();
    capped.push(text);
    capped.finish()
}

fn plan_step_status(status: Option<&WirePlanStepStatus>) -> PlanStepStatus {
    match status {
        Some(WirePlanStepStatus::Pending) => PlanStepStatus::Pending,
        Some(WirePlanStepStatus::InProgress) => PlanStepStatus::InProgress,
        Some(WirePlanStepStatus::Completed) => PlanStepStatus::Completed,
        _ => PlanStepStatus::Unknown,
    }
}

/// `(n, m)` of a retry message ending in `n/m` (`Reconnecting... 2/5`).
fn retry_numbers(message: &str) -> Option<(u32, u32)> {
    let last = message.split_whitespace().next_back()?;
    let (n, m) = last.split_once('/')?;
    Some((n.parse().ok()?, m.parse().ok()?))
}

/// Whether Codex classified a failure as its transport to the provider, the transient kind OpenClaw
/// lets a failed settled tool turn be finalized after: no connection or a response stream that broke
/// off, with no HTTP status (no error response came). A failure with an HTTP status is the provider's
/// answer (a 5xx, a 429; 0.169 retries a 503 as `responseStreamDisconnected` with its status), and
/// `responseTooManyFailedAttempts` does not say what failed; neither is one.
fn is_transport_failure(info: &CodexErrorInfo) -> bool {
    match info {
        CodexErrorInfo::HttpConnectionFailed { http_status_code }
        | CodexErrorInfo::ResponseStreamConnectionFailed { http_status_code }
        | CodexErrorInfo::ResponseStreamDisconnected { http_status_code } => http_status_code.is_none(),
        _ => false,
    }
}

/// The HTTP status an error carries, when a response came.
fn http_status(info: &CodexErrorInfo) -> Option<u16> {
    match info {
        CodexErrorInfo::HttpConnectionFailed { http_status_code }
        | CodexErrorInfo::ResponseStreamConnectionFailed { http_status_code }
        | CodexErrorInfo::ResponseStreamDisconnected { http_status_code }
        | CodexErrorInfo::ResponseTooManyFailedAttempts { http_status_code } => *http_status_code,
        _ => None,
    }
}

/// A turn error for people: its message, the machine class in brackets (it tells a rate limit from an
/// outage when the message is generic), and any extra detail.
fn describe_error(error: &TurnError) -> String {
    let mut text = error.message.trim().to_owned();
    if let Some(info) = &error.codex_error_info {
        let info = match info {
            CodexErrorInfo::Unknown(Value::String(s)) => s.clone(),
            other => match serde_json::to_value(other) {
                Ok(Value::String(s)) => s,
                Ok(value) => value.to_string(),
                Err(_) => String::new(),
            },
        };
        if !info.is_empty() {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&format!("[{info}]"));
        }
    }
    if let Some(details) = error.additional_details.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        text.push_str(": ");
        text.push_str(details);
    }
    text
}

/// `a - b` per count, never below zero (a thread total can shrink, e.g. after compaction).
fn breakdown_minus(a: &TokenUsageBreakdown, b: &TokenUsageBreakdown) -> TokenUsageBreakdown {
    TokenUsageBreakdown {
        total_tokens: a.total_tokens.saturating_sub(b.total_tokens),
        input_tokens: a.input_tokens.saturating_sub(b.input_tokens),
        cached_input_tokens: a.cached_input_tokens.saturating_sub(b.cached_input_tokens),
        cache_write_input_tokens: a.cache_write_input_tokens.saturating_sub(b.cache_write_input_tokens),
        output_tokens: a.output_tokens.saturating_sub(b.output_tokens),
        reasoning_output_tokens: a.reasoning_output_tokens.saturating_sub(b.reasoning_output_tokens),
        extra: Default::default(),
    }
}
