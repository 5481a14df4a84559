/**
 * The call history a test reads: one `Call` per conversation request a run recorded, as the server answers them
 * (`GET /api/runs/{id}/calls`, built from the run's events by the same Python code as the pytest plugin's call
 * history, `harnessweb/engine/calls.py`) with the plugin's fields in TypeScript's case; and `assertCalledWith`,
 * whose failure shows the closest call and each field that differs.
 */

export interface CallMessage {
  role: string;
  content: string;
}

export interface CallError {
  status: number | null;
  kind: string;
  message: string;
}

export interface Call {
  protocol: string;
  model: string;
  path: string;
  messages: CallMessage[];
  system: string;
  /** The last user message's text. */
  prompt: string;
  promptLength: number;
  tools: string[];
  schema: Record<string, unknown> | null;
  temperature: number | null;
  topP: number | null;
  maxTokens: number | null;
  /** Every other parameter of the body. */
  params: Record<string, unknown>;
  stream: boolean;
  timestamp: string;
  /** What it got: `text`, `reasoning`, `tool_calls`, `finish_reason`, `usage`, `chunks` as the run recorded them. */
  response: Record<string, unknown> | null;
  error: CallError | null;
  durationMs: number | null;
  /** How it was answered: "configured", "scenario", "instruction", "lorem", "cassette"... */
  answeredBy: string;
  /** Where its API key came and its fingerprint, never the key. */
  key: { place: string; fingerprint: string } | null;
  /** The validation failure it got ("" for none). */
  problem: string;
  body: Record<string, unknown>;
}

/** One call as `GET /api/runs/{id}/calls` answers it: the pytest plugin's fields in snake_case. */
export interface CallRecord {
  protocol: string;
  model: string;
  path: string;
  messages: CallMessage[];
  system: string;
  prompt: string;
  prompt_length: number;
  tools: string[];
  schema: Record<string, unknown> | null;
  temperature: number | null;
  top_p: number | null;
  max_tokens: number | null;
  params: Record<string, unknown>;
  stream: boolean;
  timestamp: string;
  response: Record<string, unknown> | null;
  error: CallError | null;
  duration_ms: number | null;
  answered_by: string;
  key: { place: string; fingerprint: string } | null;
  problem: string;
  body: Record<string, unknown>;
}

/** What `GET /api/runs/{id}/calls` answers. */
export interface RunCalls {
  run_id: string;
  calls: CallRecord[];
}

/** A call as the server answers it, in TypeScript's case. */
export function callFromRecord(record: CallRecord): Call {
  return {
    protocol: record.protocol,
    model: record.model,
    path: record.path,
    messages: record.messages,
    system: record.system,
    prompt: record.prompt,
    promptLength: record.prompt_length,
    tools: record.tools,
    schema: record.schema,
    temperature: record.temperature,
    topP: record.top_p,
    maxTokens: record.max_tokens,
    params: record.params,
    stream: record.stream,
    timestamp: record.timestamp,
    response: record.response,
    error: record.error,
    durationMs: record.duration_ms,
    answeredBy: record.answered_by,
    key: record.key,
    problem: record.problem,
    body: record.body,
  };
}

type Json = Record<string, any>;

// ---------------------------------------------------------------------------------------------------------------
// Assertions

/** What a call is asserted to have: any field of a call, and `promptContains` (a text in any of its messages). */
export type Wanted = Partial<Omit<Call, "tools">> & { promptContains?: string; tools?: string[] };

/** The fields of `call` that differ from what is wanted, each as one readable line. */
export function differences(call: Call, wanted: Wanted): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(wanted)) {
    if (value === undefined) continue;
    if (name === "promptContains") {
      const texts = [call.prompt, call.system, ...call.messages.map((m) => m.content)];
      if (!texts.some((text) => text.includes(value as string))) {
        found.push(`promptContains: ${show(value)} is in no message (last user message: ${show(call.prompt)})`);
      }
    } else if (name === "tools") {
      const want = [...(value as string[])].sort();
      const sent = [...call.tools].sort();
      if (show(want) !== show(sent)) found.push(`tools: wanted ${show(want)}, sent ${show(sent)}`);
    } else {
      const sent = (call as unknown as Json)[name];
      if (show(sent) !== show(value)) found.push(`${name}: wanted ${show(value)}, sent ${show(sent)}`);
    }
  }
  return found;
}

/** The first call that matches every field given; else an AssertionError showing the closest call and what
 * differs in it. */
export function assertCalledWith(calls: Call[], wanted: Wanted): Call {
  const given = Object.fromEntries(Object.entries(wanted).filter(([, v]) => v !== undefined));
  const shown = Object.entries(given)
    .map(([k, v]) => `${k}=${show(v)}`)
    .join(", ") || "anything";
  if (calls.length === 0) throw new AssertionError(`No call reached the harness (wanted one with ${shown})`);
  const scored = calls.map((call, index) => ({ diffs: differences(call, given), index, call }));
  const match = scored.find((row) => row.diffs.length === 0);
  if (match) return match.call;
  const closest = scored.reduce((best, row) => (row.diffs.length < best.diffs.length ? row : best));
  const { call, index, diffs } = closest;
  throw new AssertionError(
    `No call matches ${shown} among ${calls.length} call(s). Closest: call ${index} (${call.protocol} ` +
      `${show(call.model)}, prompt ${show(call.prompt.slice(0, 80))}), which differs in:\n` +
      diffs.map((line) => `  - ${line}`).join("\n"),
  );
}

/** The calls, one line each, for a failure message. */
export function describe(calls: Call[]): string {
  if (calls.length === 0) return "  (none)";
  return calls
    .map((c, i) => `  ${i}: ${c.protocol} ${show(c.model)} ${show(c.prompt.slice(0, 60))} (${c.answeredBy})`)
    .join("\n");
}

export class AssertionError extends Error {
  override name = "AssertionError";
}

function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}
