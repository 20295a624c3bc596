// OpenClaw entry point (package.json `openclaw.extensions`). Plain ESM, no build step and no
// dependencies: the host resolves `openclaw/plugin-sdk/*` for plugins it loads.

import { appendSessionTranscriptMessageByIdentity } from "openclaw/plugin-sdk/session-transcript-runtime";
import {
  AgentHarnessPreflightError,
  emitAgentEvent,
  formatToolAggregate,
  inferToolMetaFromArgs,
  projectAgentToolActivity,
  sanitizeToolArgs,
  sanitizeToolResult,
} from "openclaw/plugin-sdk/agent-harness-runtime";
import { EmbeddedBlockChunker } from "openclaw/plugin-sdk/agent-runtime";

import { createPlugin } from "./src/plugin.js";

export default createPlugin({
  appendTranscriptMessage: appendSessionTranscriptMessageByIdentity,
  PreflightError: AgentHarnessPreflightError,
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
