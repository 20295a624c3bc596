// openclaw/plugin-sdk/session-transcript-runtime ships JS without type declarations (2026.9.6). These
// are the signatures the plugin relies on, written from the runtime's own code; a change there shows
// up in the real-host tests, not here.

type TranscriptTarget = {
  agentId?: string;
  sessionId: string;
  sessionKey?: string;
  storePath?: string;
  config?: unknown;
  cwd?: string;
};

type AppendedTranscriptMessage = {
  appended: boolean;
  messageId?: string;
  message?: { role: string; [key: string]: unknown };
  [key: string]: unknown;
};

export function appendSessionTranscriptMessageByIdentity(
  params: TranscriptTarget & { idempotencyLookup?: "scan"; message: { role: string; [key: string]: unknown } },
): Promise<AppendedTranscriptMessage | undefined>;

export function appendSessionTranscriptMessagesByIdentity(
  params: TranscriptTarget & {
    messages: Array<{ message: { role: string; [key: string]: unknown }; idempotencyLookup?: "scan" }>;
  },
): Promise<AppendedTranscriptMessage[]>;

export function publishSessionTranscriptUpdateByIdentity(
  params: TranscriptTarget & { update?: { messageId?: string } },
): Promise<void>;

export function readVisibleSessionTranscriptMessageEntries(params: TranscriptTarget): Promise<
  Array<{
    entryId: string;
    parentId?: string | null;
    seq?: number;
    role: string;
    message: { role: string; content?: unknown; [key: string]: unknown };
    createdAt?: string;
    idempotencyKey?: string;
  }>
>;
