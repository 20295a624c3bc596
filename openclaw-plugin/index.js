// OpenClaw entry point (package.json `openclaw.extensions`). Plain ESM, no build step and no
// dependencies: the host resolves `openclaw/plugin-sdk/*` for plugins it loads.

import {
  AgentHarnessPreflightError,
  buildEmbeddedAttemptToolRunContext,
  buildEmbeddedForegroundPromptContext,
  classifyAgentHarnessTerminalOutcome,
  emitAgentEvent,
  extractMessagingToolSend,
  extractMessagingToolSendResult,
  extractToolResultMediaArtifact,
  filterToolResultMediaUrls,
  formatToolAggregate,
  inferToolMetaFromArgs,
  isDeliveredMessagingToolResult,
  isMessagingTool,
  isMessagingToolSendAction,
  projectAgentToolActivity,
  readEmbeddedMessageDeliveryFact,
  resolveAttemptSpawnWorkspaceDir,
  resolveModelAuthMode,
  runAgentEndSideEffects,
  runAgentHarnessBeforeMessageWriteHook,
  runAgentHarnessGatewayQuestion,
  sanitizeToolArgs,
  sanitizeToolResult,
} from "openclaw/plugin-sdk/agent-harness-runtime";
import { EmbeddedBlockChunker } from "openclaw/plugin-sdk/agent-runtime";
import {
  appendSessionTranscriptMessageByIdentity,
  appendSessionTranscriptMessagesByIdentity,
  publishSessionTranscriptUpdateByIdentity,
  readVisibleSessionTranscriptMessageEntries,
} from "openclaw/plugin-sdk/session-transcript-runtime";
// Optional helpers, read off the namespace so an SDK without one still loads the plugin.
import * as harnessRuntime from "openclaw/plugin-sdk/agent-harness-runtime";

import { createPlugin } from "./src/plugin.js";

export default createPlugin({
  appendTranscriptMessage: appendSessionTranscriptMessageByIdentity,
  PreflightError: AgentHarnessPreflightError,
  sdk: {
    appendSessionTranscriptMessagesByIdentity,
    publishSessionTranscriptUpdateByIdentity,
    readVisibleSessionTranscriptMessageEntries,
    runAgentHarnessBeforeMessageWriteHook,
    classifyAgentHarnessTerminalOutcome,
    inferToolMetaFromArgs,
    runAgentEndSideEffects,
    buildEmbeddedForegroundPromptContext,
    buildEmbeddedAttemptToolRunContext,
    resolveAttemptSpawnWorkspaceDir,
    resolveModelAuthMode,
    isMessagingTool,
    isMessagingToolSendAction,
    readEmbeddedMessageDeliveryFact,
    isDeliveredMessagingToolResult,
    extractMessagingToolSend,
    extractMessagingToolSendResult,
    extractToolResultMediaArtifact,
    filterToolResultMediaUrls,
    // Optional (finalize.js, turn-facts.js, context-engine.js): an SDK without one leaves its fact or hook out.
    assembleHarnessContextEngine: harnessRuntime.assembleHarnessContextEngine,
    runAgentHarnessBeforeAgentFinalizeHook: harnessRuntime.runAgentHarnessBeforeAgentFinalizeHook,
    buildAgentHookContextChannelFields: harnessRuntime.buildAgentHookContextChannelFields,
    normalizeHeartbeatToolResponse: harnessRuntime.normalizeHeartbeatToolResponse,
    HEARTBEAT_RESPONSE_TOOL_NAME: harnessRuntime.HEARTBEAT_RESPONSE_TOOL_NAME,
    extractMessagingToolSourceReplyPayload: harnessRuntime.extractMessagingToolSourceReplyPayload,
    isDeliveredMessageToolOnlySourceReplyResult: harnessRuntime.isDeliveredMessageToolOnlySourceReplyResult,
    isDeliveredMessagingToolSendToCurrentSource: harnessRuntime.isDeliveredMessagingToolSendToCurrentSource,
    // Optional (mcp-servers.js): without it the user's MCP servers do not reach the native runtime.
    loadCodexBundleMcpThreadConfig: harnessRuntime.loadCodexBundleMcpThreadConfig,
    // Optional (bootstrap.js): without it the workspace bootstrap files do not reach the native agent.
    resolveBootstrapContextForRun: harnessRuntime.resolveBootstrapContextForRun,
  },
  loadPromptImages: harnessRuntime.detectAndLoadAgentHarnessPromptImages,
  setActiveEmbeddedRun: harnessRuntime.setActiveEmbeddedRun,
  clearActiveEmbeddedRun: harnessRuntime.clearActiveEmbeddedRun,
  askGatewayQuestion: runAgentHarnessGatewayQuestion,
  progressSdk: {
    EmbeddedBlockChunker,
    emitAgentEvent,
    formatToolAggregate,
    inferToolMetaFromArgs,
    projectAgentToolActivity,
    sanitizeToolArgs,
    sanitizeToolResult,
  },
});
