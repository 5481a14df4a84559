/**
 * The AI SDK test provider (seed 000's `test-llm`) over the harness's engine: `createHarnessProvider(...)` gives
 * language models of the AI SDK's specification (V2 for AI SDK 5, V3 for AI SDK 6) that send each call to the harness's own endpoint
 * (`POST /harness/v1/generate`: the prompt, tools and settings as the call options carry them) and turn the engine's
 * answer into seed 000's result and stream parts. The scenarios are the server's: a call plays the one its first
 * user message names (or the `scenario` asked for), is checked as the seed checks it (system prompt fragments,
 * expected tools, temperature, topP, reasoning: a failed check is the seed's failure report), and is recorded in the
 * run like any other call. A turn's failures come back as data: a thrown one (`failureThrows`) rejects with
 * `Error(failureMessage)`, one with a status with an `APICallError` the SDK's own retry (`maxRetries`) reads.
 *
 * The specification's types are written out here (the parts this model uses), so the package needs no runtime
 * dependency: the models are structurally the SDK's own `LanguageModelV2` and `LanguageModelV3`. V3 differs in
 * its finish reason (`{ unified, raw }`) and usage (`inputTokens: { total, noCache, cacheRead, cacheWrite }`,
 * `outputTokens: { total, text, reasoning }`), on the result and on the stream's `finish` part; the rest is the same.
 */

import { RUN_HEADER, RUN_KEY_PREFIX } from "./run.js";

export const PROVIDER_NAME = "harness";
export const GENERATE_PATH = "/harness/v1/generate";
export const SCENARIO_HEADER = "X-Harness-Scenario";

type JsonValue = null | string | number | boolean | JsonObject | JsonValue[];
type JsonObject = { [key: string]: JsonValue };
type ProviderMetadata = Record<string, Record<string, JsonValue>>;
type JsonSchema = Record<string, unknown>;

/** What the AI SDK passes a language model's `doGenerate` / `doStream` (the fields this model reads). */
export interface HarnessCallOptions {
  prompt: Array<{ role: "system" | "user" | "assistant" | "tool"; content: unknown }>;
  maxOutputTokens?: number;
  temperature?: number;
  stopSequences?: string[];
  topP?: number;
  responseFormat?: { type: "text" } | { type: "json"; schema?: JsonSchema; name?: string; description?: string };
  tools?: Array<{ type: "function"; name: string; description?: string; inputSchema: JsonSchema } | { type: string; name: string }>;
  toolChoice?: { type: "auto" | "none" | "required" } | { type: "tool"; toolName: string };
  abortSignal?: AbortSignal;
  headers?: Record<string, string | undefined>;
  providerOptions?: Record<string, Record<string, unknown>>;
}

export type HarnessContent =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string; providerMetadata?: ProviderMetadata }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: string };

export type HarnessFinishReason = "stop" | "length" | "tool-calls";

export interface HarnessUsage {
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  totalTokens: number | undefined;
}

export type HarnessStreamPart =
  | { type: "stream-start"; warnings: never[] }
  | { type: "text-start" | "text-end"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "reasoning-start" | "reasoning-end"; id: string; providerMetadata?: ProviderMetadata }
  | { type: "reasoning-delta"; id: string; delta: string; providerMetadata?: ProviderMetadata }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: string }
  | { type: "finish"; finishReason: HarnessFinishReason; usage: HarnessUsage };

export interface HarnessGenerateResult {
  content: HarnessContent[];
  finishReason: HarnessFinishReason;
  usage: HarnessUsage;
  warnings: never[];
  request: { body: unknown };
  response: { id: string; modelId: string; headers: Record<string, string> };
}

/** A language model of the AI SDK's specification V2 (AI SDK 5). */
export interface HarnessLanguageModelV2 {
  readonly specificationVersion: "v2";
  readonly provider: string;
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]>;
  doGenerate(options: HarnessCallOptions): Promise<HarnessGenerateResult>;
  doStream(options: HarnessCallOptions): Promise<{ stream: ReadableStream<HarnessStreamPart>; request: { body: unknown } }>;
}

export interface HarnessUsageV3 {
  inputTokens: { total: number | undefined; noCache: number | undefined; cacheRead: undefined; cacheWrite: undefined };
  outputTokens: { total: number | undefined; text: number | undefined; reasoning: undefined };
}

export interface HarnessFinishReasonV3 {
  unified: HarnessFinishReason;
  raw: string | undefined;
}

export type HarnessStreamPartV3 =
  | Exclude<HarnessStreamPart, { type: "finish" }>
  | { type: "finish"; finishReason: HarnessFinishReasonV3; usage: HarnessUsageV3 };

/** A language model of the AI SDK's specification V3 (AI SDK 6). */
export interface HarnessLanguageModelV3 {
  readonly specificationVersion: "v3";
  readonly provider: string;
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]>;
  doGenerate(
    options: HarnessCallOptions,
  ): Promise<Omit<HarnessGenerateResult, "usage" | "finishReason"> & { usage: HarnessUsageV3; finishReason: HarnessFinishReasonV3 }>;
  doStream(options: HarnessCallOptions): Promise<{ stream: ReadableStream<HarnessStreamPartV3>; request: { body: unknown } }>;
}

export interface HarnessProviderOptions {
  /** The harness's base URL; else the run's, else `HARNESS_URL`. */
  url?: string;
  /** The API key the models send (`Authorization: Bearer ...`); else the run's `harness-run-<id>` key. */
  token?: string;
  /** The run the calls belong to: a test's harness (`HarnessRun`: its URL and key too), or a run id. */
  run?: { id: string; url: string } | string;
  /** The scenario every call plays (`X-Harness-Scenario`); else the first user message names it, as in seed 000. */
  scenario?: string;
}

export interface HarnessModelSettings {
  /** The scenario this model's calls play. */
  scenario?: string;
  /** Ask for reasoning (the seed's `expectedReasoning` checks it); also `providerOptions: { harness: { reasoning } }`. */
  reasoning?: boolean;
}

export interface HarnessProvider<Model = HarnessLanguageModelV2> {
  (modelId: string, settings?: HarnessModelSettings): Model;
  languageModel(modelId: string, settings?: HarnessModelSettings): Model;
}

/** A failure of the harness's endpoint (a turn's failure with a status, or an error): the SDK's `APICallError` by
 * its markers, so the SDK's retry reads `isRetryable` and the retry-after headers. */
export class HarnessCallError extends Error {
  override name = "AI_APICallError";
  readonly url: string;
  readonly requestBodyValues: unknown;
  readonly statusCode: number | undefined;
  readonly responseHeaders: Record<string, string> | undefined;
  readonly responseBody: string | undefined;
  readonly isRetryable: boolean;
  /** The turn's failure as the harness said it (`status`, `message`, `retryable`, `retryAfterMs`, `throws`). */
  readonly data: unknown;

  constructor(fields: {
    message: string;
    url: string;
    requestBodyValues: unknown;
    statusCode?: number;
    responseHeaders?: Record<string, string>;
    responseBody?: string;
    isRetryable: boolean;
    data?: unknown;
    cause?: unknown;
  }) {
    super(fields.message, { cause: fields.cause });
    this.url = fields.url;
    this.requestBodyValues = fields.requestBodyValues;
    this.statusCode = fields.statusCode;
    this.responseHeaders = fields.responseHeaders;
    this.responseBody = fields.responseBody;
    this.isRetryable = fields.isRetryable;
    this.data = fields.data;
    // The markers the SDK's `AISDKError.isInstance` / `APICallError.isInstance` look for.
    Object.defineProperty(this, Symbol.for("vercel.ai.error"), { value: true });
    Object.defineProperty(this, Symbol.for("vercel.ai.error.AI_APICallError"), { value: true });
  }
}

interface Failure {
  status: string;
  message: string;
  retryable: boolean;
  retryAfterMs: number | null;
  throws: boolean;
}

interface Answer {
  id: string;
  model: string;
  content: HarnessContent[];
  finishReason: HarnessFinishReason;
  usage: { inputTokens: number; outputTokens: number; totalTokens: number };
}

/** The provider: `provider(id)` or `provider.languageModel(id)`, with the model's settings; its models are V2 (AI
 * SDK 5, seed 000's own), or V3 (AI SDK 6) with `specificationVersion: "v3"`. */
export function createHarnessProvider(
  options: HarnessProviderOptions & { specificationVersion: "v3" },
): HarnessProvider<HarnessLanguageModelV3>;
export function createHarnessProvider(
  options?: HarnessProviderOptions & { specificationVersion?: "v2" },
): HarnessProvider<HarnessLanguageModelV2>;
export function createHarnessProvider(
  options: HarnessProviderOptions & { specificationVersion?: "v2" | "v3" } = {},
): HarnessProvider<HarnessLanguageModelV2> | HarnessProvider<HarnessLanguageModelV3> {
  if (options.specificationVersion === "v3") {
    const languageModel = (modelId: string, settings: HarnessModelSettings = {}) =>
      asV3(harnessLanguageModel(modelId, options, settings));
    return Object.assign(languageModel, { languageModel });
  }
  const languageModel = (modelId: string, settings: HarnessModelSettings = {}) =>
    harnessLanguageModel(modelId, options, settings);
  return Object.assign(languageModel, { languageModel });
}

/** The V2 model as V3: the same calls, the finish reason and usage in V3's shapes. */
function asV3(model: HarnessLanguageModelV2): HarnessLanguageModelV3 {
  const usage = (u: HarnessUsage): HarnessUsageV3 => ({
    inputTokens: { total: u.inputTokens, noCache: u.inputTokens, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: u.outputTokens, text: u.outputTokens, reasoning: undefined },
  });
  const finish = (reason: HarnessFinishReason): HarnessFinishReasonV3 => ({ unified: reason, raw: reason });
  return {
    specificationVersion: "v3",
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    async doGenerate(call) {
      const result = await model.doGenerate(call);
      return { ...result, usage: usage(result.usage), finishReason: finish(result.finishReason) };
    },
    async doStream(call) {
      const { stream, request } = await model.doStream(call);
      const v3 = stream.pipeThrough(
        new TransformStream<HarnessStreamPart, HarnessStreamPartV3>({
          transform(part, controller) {
            controller.enqueue(
              part.type === "finish" ? { ...part, usage: usage(part.usage), finishReason: finish(part.finishReason) } : part,
            );
          },
        }),
      );
      return { stream: v3, request };
    },
  };
}

function harnessLanguageModel(
  modelId: string,
  options: HarnessProviderOptions,
  settings: HarnessModelSettings,
): HarnessLanguageModelV2 {
  const generate = async (call: HarnessCallOptions, stream: boolean) => {
    const body = requestBody(modelId, call, settings, stream);
    const { answer, headers } = await post(options, settings, call, body);
    return { body, answer, headers };
  };
  return {
    specificationVersion: "v2",
    provider: PROVIDER_NAME,
    modelId,
    supportedUrls: {},
    async doGenerate(call) {
      const { body, answer, headers } = await generate(call, false);
      return {
        content: answer.content,
        finishReason: answer.finishReason,
        usage: answer.usage,
        warnings: [],
        request: { body },
        response: { id: answer.id, modelId: answer.model, headers },
      };
    },
    async doStream(call) {
      const { body, answer } = await generate(call, true);
      const parts = streamParts(answer);
      const stream = new ReadableStream<HarnessStreamPart>({
        start(controller) {
          parts.forEach((part) => controller.enqueue(part));
          controller.close();
        },
      });
      return { stream, request: { body } };
    },
  };
}

/** Seed 000's stream parts of a whole answer: `stream-start`, one start/delta/end per text and reasoning item (the
 * reasoning's `providerMetadata` on each), the tool calls as they are, then `finish` with the usage. */
export function streamParts(answer: Pick<Answer, "content" | "finishReason" | "usage">): HarnessStreamPart[] {
  const parts: HarnessStreamPart[] = [{ type: "stream-start", warnings: [] }];
  answer.content.forEach((entry, index) => {
    const id = String(index);
    if (entry.type === "text") {
      parts.push({ type: "text-start", id }, { type: "text-delta", id, delta: entry.text }, { type: "text-end", id });
    } else if (entry.type === "reasoning") {
      const meta = entry.providerMetadata ? { providerMetadata: entry.providerMetadata } : {};
      parts.push(
        { type: "reasoning-start", id, ...meta },
        { type: "reasoning-delta", id, delta: entry.text, ...meta },
        { type: "reasoning-end", id, ...meta },
      );
    } else {
      parts.push(entry);
    }
  });
  parts.push({ type: "finish", finishReason: answer.finishReason, usage: answer.usage });
  return parts;
}

/** The endpoint's request: the prompt as the SDK gives it (file data left out), the settings by the names every
 * protocol's reader knows. */
function requestBody(modelId: string, call: HarnessCallOptions, settings: HarnessModelSettings, stream: boolean) {
  const tools = (call.tools ?? []).map((tool) => ({
    name: tool.name,
    description: "description" in tool ? tool.description : undefined,
    input_schema: "inputSchema" in tool ? tool.inputSchema : undefined,
  }));
  const choice = call.toolChoice;
  const format = call.responseFormat;
  return {
    model: modelId,
    prompt: call.prompt.map((message) =>
      Array.isArray(message.content)
        ? { ...message, content: message.content.map((part: { type?: string; mediaType?: string }) =>
            part?.type === "file" ? { type: "file", mediaType: part.mediaType } : part) }
        : message,
    ),
    tools,
    tool_choice: choice === undefined ? undefined : choice.type === "tool" ? { type: "tool", name: choice.toolName } : choice.type,
    temperature: call.temperature,
    top_p: call.topP,
    max_tokens: call.maxOutputTokens,
    stop: call.stopSequences,
    output_format: format?.type === "json" && format.schema ? { type: "json_schema", schema: format.schema } : undefined,
    reasoning: Boolean(call.providerOptions?.harness?.reasoning ?? settings.reasoning),
    stream,
  }; // prettier-ignore
}

async function post(
  options: HarnessProviderOptions,
  settings: HarnessModelSettings,
  call: HarnessCallOptions,
  body: unknown,
): Promise<{ answer: Answer; headers: Record<string, string> }> {
  const run = options.run;
  // (a test's harness from useHarness() is a proxy of the current test's run: read by its fields, not its class)
  const base = options.url ?? (typeof run === "object" ? run.url : undefined) ?? process.env.HARNESS_URL;
  if (!base) {
    throw new Error(
      "createHarnessProvider: no harness to call: give { url } or { run } (a test's harness), or set HARNESS_URL",
    );
  }
  const url = base.replace(/\/$/, "") + GENERATE_PATH;
  const runId = typeof run === "object" ? run.id : run;
  const key = options.token ?? (runId ? RUN_KEY_PREFIX + runId : undefined);
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (runId) headers[RUN_HEADER] = runId;
  const scenario = settings.scenario ?? options.scenario;
  if (scenario) headers[SCENARIO_HEADER] = scenario;
  for (const [name, value] of Object.entries(call.headers ?? {})) if (value !== undefined) headers[name] = value;
  let response: Response;
  try {
    response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), signal: call.abortSignal });
  } catch (error) {
    if (call.abortSignal?.aborted) throw error;
    throw new HarnessCallError({
      message: `Cannot reach the harness at ${url}: ${String(error)}`,
      url,
      requestBodyValues: body,
      isRetryable: true,
      cause: error,
    });
  }
  const responseHeaders = Object.fromEntries(response.headers.entries());
  const text = await response.text();
  let parsed: Partial<Failure & Answer> & { error?: { message?: string } };
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new HarnessCallError({
      message: `The harness answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`,
      url,
      requestBodyValues: body,
      statusCode: response.status,
      responseHeaders,
      responseBody: text,
      isRetryable: response.status >= 500,
      cause: error,
    });
  }
  // A turn's failure says whether the model throws (seed 000's failureThrows) or fails with its status.
  const failure = typeof parsed.throws === "boolean" ? (parsed as Failure) : undefined;
  if (failure?.throws) throw new Error(failure.message);
  if (!response.ok || !Array.isArray(parsed.content)) {
    throw new HarnessCallError({
      message: failure?.message ?? parsed.error?.message ?? `The harness answered ${response.status}`,
      url,
      requestBodyValues: body,
      statusCode: response.status,
      responseHeaders,
      responseBody: text,
      isRetryable: failure?.retryable ?? false,
      data: failure ?? parsed.error,
    });
  }
  return { answer: parsed as Answer, headers: responseHeaders };
}
