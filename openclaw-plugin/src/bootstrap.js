// @ts-check
// OpenClaw's workspace bootstrap files (AGENTS.md, SOUL.md, USER.md, IDENTITY.md, TOOLS.md, ...) for
// the native agent, assembled the way the built-in runner does: the SDK's
// `resolveBootstrapContextForRun` picks the files for the run kind (`bootstrapContextRunKind`:
// default, heartbeat, cron) and mode (`bootstrapContextMode`: full or lightweight), runs the
// bootstrap hooks and applies OpenClaw's per-file and total character budgets. The files come from
// `bootstrapWorkspaceDir` (the agent's canonical workspace, which core names when the run executes
// elsewhere) or else `workspaceDir`, as OpenClaw's bundled Codex harness reads them.
//
// They are rendered as one "# Project Context" section of system guidance and sent as the run's
// `bootstrapContext` (docs/host-protocol.md): the bridge gives it after `extraSystemPrompt` (Codex
// developer instructions, Claude Code's appended system prompt) but keeps it out of the session's
// identity, so a changed file never replaces the native session (Claude Code's next turn sees an
// edited USER.md; a resumed Codex thread keeps the files it started with). Both native runtimes
// read a project's AGENTS.md themselves from their working directory (Codex 0.169.0 as a project
// doc, Claude Code 2.1.328 as "project instructions"), so when that directory is the bootstrap
// workspace AGENTS.md is left out (as OpenClaw's bundled Codex harness leaves it to Codex); from
// another working directory, or on a turn that skips the native project docs
// (`skipsNativeProjectDocs`), the agent workspace's AGENTS.md is sent. Files OpenClaw reports
// missing (`[MISSING] Expected at:`) are not sent.

import { resolve } from "node:path";

/** The most bootstrap text sent per turn, in UTF-16 code units (OpenClaw's budgets apply first). */
export const MAX_BOOTSTRAP_CHARS = 256 * 1024;

/** The harnesses that get the bootstrap files: the native runtimes with a system prompt to give them in. */
export const BOOTSTRAP_HARNESSES = new Set(["clawbridge-codex", "clawbridge-claude"]);

/** The harnesses whose native runtime reads AGENTS.md from its working directory by itself. */
const NATIVE_AGENTS_MD_READERS = new Set(["clawbridge-codex", "clawbridge-claude"]);

/** The built-in runner's order of the well-known files; the rest follow by name. */
const ORDER = ["agents.md", "soul.md", "identity.md", "user.md", "tools.md", "bootstrap.md", "memory.md", "heartbeat.md"];

/** @param {string} path */
function basename(path) {
  const normalized = path.replace(/\\/g, "/");
  return normalized.slice(normalized.lastIndexOf("/") + 1).toLowerCase();
}

/**
 * Whether the native runtime must read none of its working directory's project docs (AGENTS.md,
 * CLAUDE.md) by itself: OpenClaw's lightweight bootstrap mode and tool-less turns, for which its
 * bundled Codex harness sets the native project-document budget to zero. Sent as `attempt/run`
 * `skipNativeProjectDocs` (docs/host-protocol.md).
 *
 * @param {any} params the attempt params
 * @returns {boolean}
 */
export function skipsNativeProjectDocs(params) {
  return params?.bootstrapContextMode === "lightweight" || params?.disableTools === true;
}

/**
 * The workspace whose bootstrap files this attempt gets.
 *
 * @param {any} params the attempt params
 * @returns {string | undefined}
 */
export function bootstrapWorkspace(params) {
  for (const dir of [params?.bootstrapWorkspaceDir, params?.workspaceDir]) {
    if (typeof dir === "string" && dir.trim()) return dir;
  }
  return undefined;
}

/**
 * The bootstrap files of this attempt as system guidance, or undefined when there are none (or the
 * SDK has no `resolveBootstrapContextForRun`). A failure to read them is logged and the turn runs
 * without them, as the bundled Codex harness does.
 *
 * @param {any} sdk the SDK helpers (`resolveBootstrapContextForRun`)
 * @param {string} harnessId
 * @param {any} params the attempt params
 * @param {any} logger
 * @returns {Promise<string | undefined>}
 */
export async function bootstrapGuidance(sdk, harnessId, params, logger) {
  const workspaceDir = bootstrapWorkspace(params);
  if (!BOOTSTRAP_HARNESSES.has(harnessId) || !workspaceDir || typeof sdk?.resolveBootstrapContextForRun !== "function") return undefined;
  let contextFiles;
  try {
    ({ contextFiles } = await sdk.resolveBootstrapContextForRun({
      workspaceDir,
      config: params.config,
      sessionKey: params.sessionTarget?.sessionKey ?? params.sessionKey,
      sessionId: typeof params.sessionId === "string" ? params.sessionId : undefined,
      agentId: params.sessionTarget?.agentId ?? params.agentId,
      ...(typeof params.bootstrapUserProfileId === "string" ? { bootstrapUserProfileId: params.bootstrapUserProfileId } : {}),
      ...(params.bootstrapContextMode ? { contextMode: params.bootstrapContextMode } : {}),
      ...(params.bootstrapContextRunKind ? { runKind: params.bootstrapContextRunKind } : {}),
      // The harness only reads the workspace; the run's own bookkeeping stays core's.
      readOnlyState: true,
      warn: (/** @type {string} */ message) => logger.warn?.(`clawbridge: ${message}`),
    }));
  } catch (error) {
    logger.warn?.(`clawbridge: the workspace bootstrap files could not be read: ${error?.message ?? error}; the turn runs without them`);
    return undefined;
  }
  const cwd = typeof params.cwd === "string" && params.cwd ? params.cwd : workspaceDir;
  // A turn that skips the native project docs gets AGENTS.md from OpenClaw, if its mode keeps it.
  const nativeReadsAgentsMd =
    NATIVE_AGENTS_MD_READERS.has(harnessId) && resolve(cwd) === resolve(workspaceDir) && !skipsNativeProjectDocs(params);
  const files = (Array.isArray(contextFiles) ? contextFiles : []).filter(
    (file) =>
      file &&
      typeof file.path === "string" &&
      typeof file.content === "string" &&
      file.content.trim() !== "" &&
      !file.content.trimStart().startsWith("[MISSING] Expected at:") &&
      !(nativeReadsAgentsMd && basename(file.path) === "agents.md"),
  );
  return renderBootstrap(files);
}

/**
 * The files as the built-in runner's "# Project Context" section, at most `MAX_BOOTSTRAP_CHARS`.
 *
 * @param {{path: string, content: string, personalUser?: true}[]} files
 * @returns {string | undefined}
 */
export function renderBootstrap(files) {
  if (files.length === 0) return undefined;
  const rank = (/** @type {string} */ path) => {
    const index = ORDER.indexOf(basename(path));
    return index === -1 ? ORDER.length : index;
  };
  const sorted = [...files].sort((a, b) => rank(a.path) - rank(b.path) || basename(a.path).localeCompare(basename(b.path)) || a.path.localeCompare(b.path));
  const names = new Set(sorted.map((file) => basename(file.path)));
  const lines = ["# Project Context", "", "Loaded project context:"];
  if (names.has("soul.md")) lines.push("SOUL.md: persona/tone. Follow it unless higher-priority instructions override.");
  if (names.has("memory.md")) lines.push("MEMORY.md: durable non-profile facts and decisions; use when relevant unless higher-priority instructions override.");
  if (names.has("user.md")) lines.push("USER.md: durable user preferences and profile directives; follow unless higher-priority instructions override.");
  lines.push("");
  for (const file of sorted) lines.push(`## ${file.path}`, "", file.content.trim(), "");
  const text = lines.join("\n").trim();
  if (text.length <= MAX_BOOTSTRAP_CHARS) return text;
  const note = "\n\n[clawbridge: the workspace files were cut here, at 256 Ki characters]";
  return text.slice(0, MAX_BOOTSTRAP_CHARS - note.length) + note;
}
