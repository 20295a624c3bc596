// OpenClaw entry point (package.json `openclaw.extensions`). Plain ESM, no build step and no
// dependencies: the host resolves `openclaw/plugin-sdk/*` for plugins it loads.

import { appendSessionTranscriptMessageByIdentity } from "openclaw/plugin-sdk/session-transcript-runtime";
import { AgentHarnessPreflightError, runAgentHarnessGatewayQuestion } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createPlugin } from "./src/plugin.js";

export default createPlugin({
  appendTranscriptMessage: appendSessionTranscriptMessageByIdentity,
  PreflightError: AgentHarnessPreflightError,
  askGatewayQuestion: runAgentHarnessGatewayQuestion,
});
