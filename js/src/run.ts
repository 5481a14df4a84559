/**
 * One test's run on a harness server: a fresh run id, the environment its default clients read (base URLs and an
 * API key `harness-run-<id>` that names the run), what its requests get (the run's script,
 * `PUT /api/runs/{id}/script`: answers, failure kinds, chaos by probability, a scenario, the key every request must
 * carry) and the calls it recorded, read back from the run's events; and seed 001's e2e pieces on the run:
 * `judge(criteria)` (the server's judge over REST), `artifact(name, content)` (a generated page or text) and
 * `collectTurnLog(turn)` (the turn's trace log from `TRACE_LOG_DIR`, its outcome read from its footer by the server).
 * Nothing here needs vitest: `harnessweb/vitest` gives each test one.
 */

import { createHash, randomUUID } from "node:crypto";

import { assertCalledWith, callFromRecord, describe, type Call, type RunCalls, type Wanted } from "./calls.js";
import { judgeBody, verdictFromRecord, type JudgeCriteria, type JudgeJob, type Verdict } from "./judge.js";
import type { Connection } from "./server.js";
import { TraceFolder, type TraceOutcome, type TurnLog } from "./tracelogs.js";

export const RUN_HEADER = "X-Harness-Run";
export const RUN_KEY_PREFIX = "harness-run-";
/** The failure kinds `setError` takes (the scenario schema's `failure_status`). */
export const FAILURE_KINDS = [
  "timeout", "invalid_response", "network_error", "rate_limit", "model_error",
  "auth_error", "permission_error", "not_found", "bad_request", "request_too_large",
  "server_error", "bad_gateway", "unavailable", "overloaded",
  "wrong_content_type", "missing_content_type", "invalid_json_in_stream", "invalid_utf8", "truncated_stream",
  "slow_first_byte",
] as const; // prettier-ignore
export type FailureKind = (typeof FAILURE_KINDS)[number];

/** An answer: its text, or `{ text }`, `{ json }` (structured data, as a scenario's `structured` turn) or
 * `{ toolCalls: [{ name, arguments }] }`. */
export type ResponseSpec =
  | string
  | { text: string }
  | { json: unknown }
  | { toolCalls: { name: string; arguments?: unknown; id?: string }[] };

export interface ScenarioSpec {
  id: string;
  [field: string]: unknown;
}

interface ScriptAnswer {
  model: string | null;
  text?: string;
  json?: unknown;
  tool_calls?: { name: string; arguments: string; id: string }[];
  reasoning: string | null;
  used: number;
}

interface ScriptError {
  model: string | null;
  kind: FailureKind;
  times: number | "always";
  used: number;
}

/** Each chaos rate `chaos()` takes and its name on the wire (the script's `chaos`). */
const CHAOS_RATES = {
  rateLimit: "rate_limit",
  serverError: "server_error",
  networkError: "network_error",
  malformed: "malformed",
} as const;

/** Chaos by probability (`chaos()`): a seed and the rate (0..1) of each kind, the rates together at most 1. */
export type ChaosOptions = { seed?: number } & { [rate in keyof typeof CHAOS_RATES]?: number };

type ScriptChaos = { seed: number; used: number } & Record<(typeof CHAOS_RATES)[keyof typeof CHAOS_RATES], number>;

export class HarnessError extends Error {
  override name = "HarnessError";
}

export interface RunOptions {
  /** The folder the application writes its trace logs to (seed 001's `TRACE_LOG_DIR`, which is the default): the
   * files there now are never taken by `collectTurnLog`. */
  traceDir?: string;
}

/** An artifact as the run stored it. */
export interface StoredArtifact {
  id: number;
  name: string;
  /** "html" or "text". */
  kind: string;
  size: number;
  digest: string;
  /** Its content, for a logged-in browser (a path on the harness). */
  rawUrl: string;
  /** The same content was stored under this name already. */
  duplicate: boolean;
}

/** A verdict (see `judge.ts`) and the job that judged it: `GET jobUrl` reads the stored verdict again. */
export type JudgedVerdict = Verdict & { jobUrl: string };

/** Variables a default client reads before the run's own (`@google/genai`: `GOOGLE_API_KEY` before `GEMINI_API_KEY`). */
const SHADOWING = ["GOOGLE_API_KEY"];

/** The variables the official SDKs' default clients read, set to reach `url` and land in the run `id`. */
export function runEnv(url: string, id: string): Record<string, string> {
  const key = RUN_KEY_PREFIX + id;
  return {
    OPENAI_BASE_URL: `${url}/v1`,
    OPENAI_API_KEY: key,
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: key,
    GOOGLE_GEMINI_BASE_URL: url,
    GEMINI_API_KEY: key,
  };
}

/** The fingerprint the harness records for an API key (never the key): the first 12 hex digits of its SHA-256. */
export function fingerprint(key: string): string {
  return createHash("sha256")
    .update(key.replace(/^Bearer /, "").trim())
    .digest("hex")
    .slice(0, 12);
}

export class HarnessRun {
  readonly id: string;
  readonly url: string;
  /** The API key that names this run (what `env()` gives the SDKs). */
  readonly key: string;
  /** Headers that name this run, for a client given its own key: `defaultHeaders: harness.headers`. */
  readonly headers: Record<string, string>;
  private readonly token: string;
  private answers: ScriptAnswer[] = [];
  private errors: ScriptError[] = [];
  private scenario = "";
  private expectedKey: { fingerprint: string; place?: string } | null = null;
  private chaosScript: ScriptChaos | null = null;
  private forgotten = 0;
  private readonly traces: TraceFolder | null;
  private readonly collected: TurnLog[] = [];

  constructor(connection: Connection, id: string = randomUUID(), options: RunOptions = {}) {
    this.id = id;
    this.url = connection.url.replace(/\/$/, "");
    this.token = connection.token;
    this.key = RUN_KEY_PREFIX + id;
    this.headers = { [RUN_HEADER]: id };
    const traceDir = options.traceDir ?? process.env.TRACE_LOG_DIR;
    this.traces = traceDir ? new TraceFolder(traceDir) : null;
  }

  /** The run's page on the dashboard. */
  get page(): string {
    return `${this.url}/runs/${this.id}/`;
  }

  /** Where the scenario's MCP server `server` (its `mcp.servers` entry) is served: `${url}/mcp/${server}`, over
   * MCP's Streamable HTTP transport. Give the MCP client this run's `headers` too (the TypeScript SDK's
   * `StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: harness.headers } })`): the
   * `X-Harness-Run` header puts its tool calls on this run, beside the model's turns. */
  mcpUrl(server: string): string {
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(server)) {
      throw new HarnessError(
        `mcpUrl: ${JSON.stringify(server)} is no MCP server name (a letter or digit, then up to 63 of A-Z a-z 0-9 _ -)`,
      );
    }
    return `${this.url}/mcp/${server}`;
  }

  /** What the default clients read: `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `GOOGLE_GEMINI_BASE_URL` and their
   * API keys, all naming this run. Give it to a program the test starts. */
  env(): Record<string, string> {
    return runEnv(this.url, this.id);
  }

  /** Set `env()` in `process.env` (and unset `GOOGLE_API_KEY`, which Google's client would read before
   * `GEMINI_API_KEY`); the function returned puts back what was there. */
  applyEnv(): () => void {
    const names = [...Object.keys(this.env()), ...SHADOWING];
    const saved = names.map((name) => [name, process.env[name]] as const);
    for (const name of SHADOWING) delete process.env[name];
    Object.assign(process.env, this.env());
    return () => {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    };
  }

  // -- configuring: the run's script ------------------------------------------------------------------------------

  /** The next answer (for `model` only, if given). Set several times, the answers come in that order and the last
   * one stays. */
  async setResponse(answer: ResponseSpec, options: { model?: string; reasoning?: string } = {}): Promise<void> {
    const entry: ScriptAnswer = { model: options.model ?? null, reasoning: options.reasoning ?? null, used: 0 };
    const spec = typeof answer === "string" ? { text: answer } : answer;
    const given = ["text", "json", "toolCalls"].filter((name) => name in (spec ?? {}));
    if (given.length !== 1) {
      throw new HarnessError(
        `setResponse takes a text, { text }, { json } or { toolCalls } (got ${given.join(" and ") || JSON.stringify(answer)})`,
      );
    }
    if ("text" in spec) {
      if (typeof spec.text !== "string") throw new HarnessError("setResponse: text must be a string");
      entry.text = spec.text;
    } else if ("json" in spec) {
      entry.json = spec.json;
    } else {
      if (!Array.isArray(spec.toolCalls) || spec.toolCalls.length === 0) {
        throw new HarnessError("setResponse: toolCalls must be a non-empty list of { name, arguments }");
      }
      entry.tool_calls = spec.toolCalls.map((call, i) => {
        if (typeof call?.name !== "string") throw new HarnessError(`setResponse: toolCalls[${i}] needs a name`);
        const args = call.arguments ?? {};
        return { name: call.name, arguments: typeof args === "string" ? args : JSON.stringify(args), id: call.id ?? "" };
      });
    }
    this.answers.push(entry);
    await this.push();
  }

  /** The provider's own failure for the next `times` requests (a number, or "always"), for `model` only if given. */
  async setError(kind: FailureKind, options: { times?: number | "always"; model?: string } = {}): Promise<void> {
    if (!FAILURE_KINDS.includes(kind)) {
      throw new HarnessError(`setError: unknown failure kind ${JSON.stringify(kind)}; use one of ${FAILURE_KINDS.join(", ")}`);
    }
    const times = options.times ?? 1;
    if (times !== "always" && !(Number.isInteger(times) && times >= 1)) {
      throw new HarnessError(`setError: times must be a positive number or "always", got ${JSON.stringify(times)}`);
    }
    this.errors.push({ model: options.model ?? null, kind, times, used: 0 });
    await this.push();
  }

  /** Play a scenario the server loaded (by id), or one given whole (stored on the server first). */
  async useScenario(scenario: string | ScenarioSpec): Promise<void> {
    if (typeof scenario !== "string") {
      if (typeof scenario?.id !== "string") throw new HarnessError("useScenario: a scenario needs an id");
      await this.api("PUT", `/scenarios/${encodeURIComponent(scenario.id)}`, scenario, "the scenario");
    }
    this.scenario = typeof scenario === "string" ? scenario : scenario.id;
    await this.push();
  }

  /** Every later request must carry this API key (given as the key or its 12-digit fingerprint), in `place` if
   * given; else it gets the validation failure naming where its key came. `null` stops expecting one. */
  async expectKey(keyOrFingerprint: string | null, options: { place?: string } = {}): Promise<string | null> {
    if (keyOrFingerprint === null) {
      this.expectedKey = null;
    } else {
      const print = /^[0-9a-f]{12}$/.test(keyOrFingerprint) ? keyOrFingerprint : fingerprint(keyOrFingerprint);
      this.expectedKey = options.place ? { fingerprint: print, place: options.place } : { fingerprint: print };
    }
    await this.push();
    return this.expectedKey?.fingerprint ?? null;
  }

  /** Fail later requests at random, the same ones for the same seed and the same sequence of requests: rates (0..1,
   * together at most 1) of `rateLimit` (a 429), `serverError` (a 500), `networkError` (the connection cut) and
   * `malformed` (a chunk whose JSON is cut). The run's requests are numbered from 0 again; a request chaos fails
   * takes no answer, so the client's retry gets it. No rates turns it off. */
  async chaos(options: ChaosOptions = {}): Promise<void> {
    const unknown = Object.keys(options).filter((name) => name !== "seed" && !Object.hasOwn(CHAOS_RATES, name));
    if (unknown.length > 0) {
      const known = ["seed", ...Object.keys(CHAOS_RATES)].join(", ");
      throw new HarnessError(`chaos: unknown option ${JSON.stringify(unknown[0])}; use ${known}`);
    }
    const seed = options.seed ?? 0;
    if (!Number.isSafeInteger(seed) || seed < 0) {
      throw new HarnessError(`chaos: seed must be a whole number from 0, got ${JSON.stringify(seed)}`);
    }
    const given = Object.keys(CHAOS_RATES).filter((name) => options[name as keyof ChaosOptions] !== undefined);
    const script = { seed, used: 0 } as ScriptChaos;
    for (const [name, wire] of Object.entries(CHAOS_RATES)) {
      const rate = options[name as keyof typeof CHAOS_RATES] ?? 0;
      if (typeof rate !== "number" || !(rate >= 0 && rate <= 1)) {
        throw new HarnessError(`chaos: ${name} must be a rate from 0 to 1, got ${JSON.stringify(rate)}`);
      }
      script[wire] = rate;
    }
    this.chaosScript = given.length > 0 ? script : null; // (the server checks that the rates add up to at most 1)
    await this.push(true);
  }

  /** Forget the script and the calls so far. */
  async reset(): Promise<void> {
    this.forgotten = (await this.calls()).length + this.forgotten;
    this.answers = [];
    this.errors = [];
    this.scenario = "";
    this.expectedKey = null;
    this.chaosScript = null;
    const response = await this.request("DELETE", `/runs/${this.id}/script`);
    if (response.status !== 204 && response.status !== 404) await this.refused(response, "forgetting the script");
  }

  /** `chaosFromZero`: a new `chaos()` numbers the requests from 0; any other push keeps the server's number. */
  private async push(chaosFromZero = false): Promise<void> {
    const current = await this.request("GET", `/runs/${this.id}/script`);
    if (current.status === 200) {
      // Keep the server's counts: entries are only ever appended here, so they line up.
      const served = (await current.json()) as { answers: ScriptAnswer[]; errors: ScriptError[]; chaos?: ScriptChaos };
      served.answers.forEach((theirs, i) => this.answers[i] && (this.answers[i].used = theirs.used));
      served.errors.forEach((theirs, i) => this.errors[i] && (this.errors[i].used = theirs.used));
      if (this.chaosScript && !chaosFromZero) this.chaosScript.used = served.chaos?.used ?? 0;
    }
    const script = { answers: this.answers, errors: this.errors, scenario: this.scenario, expect_key: this.expectedKey };
    if (this.chaosScript) Object.assign(script, { chaos: this.chaosScript });
    await this.api("PUT", `/runs/${this.id}/script`, script, "this test's script");
  }

  // -- the history ------------------------------------------------------------------------------------------------

  /** The calls the run recorded, in order (readable the moment a response ends). */
  async calls(options: { model?: string } = {}): Promise<Call[]> {
    const response = await this.request("GET", `/runs/${this.id}/calls`);
    if (response.status === 404) return []; // no request named the run yet
    if (response.status !== 200) await this.refused(response, "reading this test's calls");
    const run = (await response.json()) as RunCalls;
    const calls = run.calls.map(callFromRecord).slice(this.forgotten);
    return options.model === undefined ? calls : calls.filter((c) => c.model === options.model);
  }

  async lastCall(): Promise<Call | undefined> {
    return (await this.calls()).at(-1);
  }

  async promptCount(options: { model?: string } = {}): Promise<number> {
    return (await this.calls(options)).length;
  }

  /** The first call that has every field given (`promptContains`: a text in any of its messages); else an
   * AssertionError showing the closest call and each field that differs. */
  async assertCalledWith(wanted: Wanted): Promise<Call> {
    return assertCalledWith(await this.calls(), wanted);
  }

  async assertCalledTimes(times: number, options: { model?: string } = {}): Promise<void> {
    const calls = await this.calls(options);
    if (calls.length !== times) {
      const scope = options.model === undefined ? "" : ` for model ${JSON.stringify(options.model)}`;
      throw new HarnessError(`Expected ${times} call(s)${scope}, got ${calls.length}:\n${describe(calls)}`);
    }
  }

  async assertNotCalled(): Promise<void> {
    await this.assertCalledTimes(0);
  }

  // -- seed 001: the judge, artifacts, trace logs per turn --------------------------------------------------------

  /** The server's judge on this run's transcript (its calls, artifacts and trace logs) against `criteria`: queued
   * over REST, then read until its verdict is stored on the run. A judge without a key skips (`state` "skipped"). */
  async judge(criteria: JudgeCriteria): Promise<JudgedVerdict> {
    const response = await this.request("POST", `/runs/${this.id}/judge`, judgeBody(criteria));
    if (response.status === 503) {
      const detail = ((await response.json()) as { detail?: string }).detail ?? "";
      throw new HarnessError(
        `${detail} A harness started by startHarness / harnessGlobalSetup reads them from the environment or from ` +
          'its env option: env: { HARNESS_JUDGE_PROTOCOL: "anthropic", HARNESS_JUDGE_BASE_URL: "https://api.anthropic.com" } ' +
          "(the key from HARNESS_JUDGE_API_KEY; without one the judge skips).",
      );
    }
    if (response.status !== 202) await this.refused(response, "queuing the judge", true);
    let job = (await response.json()) as JudgeJob;
    while (job.state !== "done") {
      job = (await this.api("GET", `/judge/${job.id}?wait=60`, undefined, "reading the judge's job")) as JudgeJob;
    }
    if (job.verdict === null) throw new HarnessError(`The judge's job ${job.id} ended without a verdict: ${job.detail}`);
    return { ...verdictFromRecord(job.verdict), jobUrl: job.url };
  }

  /** Keep a page or text the test's application generated on the run (seed 001's generated pages: its short URL
   * and HTML), where the judge and the run's page read it. `contentType` "text/html" or "text/plain" (or "html",
   * "text"); without it a name ending in .html or content opening as an HTML document is HTML. The same name again
   * keeps the latest content. */
  async artifact(name: string, content: string, contentType?: string): Promise<StoredArtifact> {
    const body = contentType === undefined ? { name, content } : { name, content, content_type: contentType };
    const response = await this.request("POST", `/runs/${this.id}/artifacts`, body);
    if (response.status !== 201) await this.refused(response, `the artifact ${JSON.stringify(name)}`, true);
    const row = (await response.json()) as Record<string, unknown> & { raw_url: string };
    const { id, kind, size, digest, duplicate } = row as unknown as StoredArtifact;
    return { id, name: row.name as string, kind, size, digest, rawUrl: row.raw_url, duplicate: Boolean(duplicate) };
  }

  /** Seed 001's `collectTurnLog(turnNumber)`, after a user turn: the newest trace log file that appeared in
   * `TRACE_LOG_DIR` (or the `traceDir` option) since the previous collection becomes the turn's log, uploaded to the
   * run with its outcome read from its `SUCCESS` / `FAILED` footer by the server; null when no file appeared. */
  async collectTurnLog(turnNumber: number): Promise<TurnLog | null> {
    if (!Number.isInteger(turnNumber) || turnNumber < 1) {
      throw new HarnessError(`collectTurnLog: the turn number must be a whole number from 1, got ${JSON.stringify(turnNumber)}`);
    }
    if (this.traces === null) {
      throw new HarnessError(
        "collectTurnLog: no trace folder: set TRACE_LOG_DIR before the test begins (seed 001's setup file does), " +
          "or give the run its traceDir",
      );
    }
    const found = this.traces.next();
    if (found === null) return null;
    const body = { turn_number: turnNumber, file_path: found.filePath, content: found.content };
    const response = await this.request("POST", `/runs/${this.id}/trace-logs`, body);
    if (response.status !== 201) await this.refused(response, `the trace log ${found.filePath}`, true);
    const { outcome } = (await response.json()) as { outcome: TraceOutcome };
    const log: TurnLog = { turnNumber, ...found, outcome };
    this.collected.push(log);
    return log;
  }

  /** The trace logs collected so far, in the order collected (seed 001's `getTurnLogs()`). */
  get turnLogs(): TurnLog[] {
    return [...this.collected];
  }

  /** Files that appeared in the trace folder but were no turn's log (older than the newest of their turn). */
  get skippedTraceFiles(): string[] {
    return [...(this.traces?.skipped ?? [])];
  }

  // -- the REST API -----------------------------------------------------------------------------------------------

  private request(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(`${this.url}/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  }

  private async api(method: string, path: string, body: unknown, what: string): Promise<unknown> {
    const response = await this.request(method, path, body);
    if (response.status >= 400) await this.refused(response, what);
    return response.json();
  }

  /** A refusal as an error; `onRun`: a 404 may be the run missing, which is said so. */
  private async refused(response: Response, what: string, onRun = false): Promise<never> {
    const text = await response.text();
    if (onRun && response.status === 404 && (await this.request("GET", `/runs/${this.id}`)).status === 404) {
      throw new HarnessError(
        `The harness refused ${what}: this test's run ${this.id} does not exist yet (a run is made by the first ` +
          "request that names it: call the provider first)",
      );
    }
    throw new HarnessError(`The harness refused ${what} (${response.status}): ${said(text).slice(0, 2000)}`);
  }
}

/** A refusal's body as one line per problem (`body.content: ...`), its `detail` alone, or the text as it came. */
function said(text: string): string {
  try {
    const body = JSON.parse(text) as { detail?: unknown; errors?: { field?: string; message?: string }[] };
    if (Array.isArray(body.errors) && body.errors.length > 0) {
      return body.errors.map((e) => `${e.field}: ${String(e.message).replace(/^Value error, /, "")}`).join("; ");
    }
    if (typeof body.detail === "string") return body.detail;
  } catch {
    // not JSON: shown as it is
  }
  return text;
}
