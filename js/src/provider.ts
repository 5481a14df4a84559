/**
 * The AI SDK test provider (seed 000's `test-llm`) over the harness's engine: `createHarnessProvider(...)` gives
 * language models of the AI SDK's specification (V2 for AI SDK 5, V3 for AI SDK 6, V4 for AI SDK 7; the types in
 * `provider-spec.ts`) that send each call to the harness's own endpoint (`POST /harness/v1/generate`: the prompt,
 * tools and settings as the call options carry them) and turn the engine's answer into seed 000's result and stream
 * parts. The scenarios are the server's: a call plays the one its first user message names (or the `scenario` asked
 * for), is checked as the seed checks it (system prompt fragments, expected tools, temperature, topP, reasoning: a
 * failed check is the seed's failure report), and is recorded in the run like any other call. A turn's failures come
 * back as data: a thrown one (`failureThrows`) rejects with `Error(failureMessage)`, a `network_error` with the
 * `APICallError` the SDK gives a connection that failed, one with a status with an `APICallError` of that status;
 * the SDK's own retry (`maxRetries`) reads the last two.
 *
 * One model makes the calls (V2's shapes); V3 and V4 are the same model with their finish reason and usage.
 */

import type {
  HarnessCallOptions,
  HarnessContent,
  HarnessFinishReason,
  HarnessFinishReasonV3,
  HarnessLanguageModelOf,
  HarnessLanguageModelV2,
  HarnessLanguageModelV3,
  HarnessLanguageModelV4,
  HarnessModelSettings,
  HarnessProvider,
  HarnessProviderOptions,
  HarnessSpecificationVersion,
  HarnessStreamPart,
  HarnessStreamPartV3,
  HarnessUsage,
  HarnessUsageV3,
} from "./provider-spec.js";
import { RUN_HEADER, RUN_KEY_PREFIX } from "./run.js";

export const PROVIDER_NAME = "harness";
export const GENERATE_PATH = "/harness/v1/generate";
export const SCENARIO_HEADER = "X-Harness-Scenario";
const SPECIFICATION_VERSIONS: readonly HarnessSpecificationVersion[] = ["v2", "v3", "v4"];

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
 * SDK 5, seed 000's own), V3 (AI SDK 6) with `specificationVersion: "v3"`, or V4 (AI SDK 7) with `"v4"`. */
export function createHarnessProvider(
  options: HarnessProviderOptions & { specificationVersion: "v4" },
): HarnessProvider<HarnessLanguageModelV4>;
export function createHarnessProvider(
  options: HarnessProviderOptions & { specificationVersion: "v3" },
): HarnessProvider<HarnessLanguageModelV3>;
export function createHarnessProvider(
  options?: HarnessProviderOptions & { specificationVersion?: "v2" },
): HarnessProvider<HarnessLanguageModelV2>;
export function createHarnessProvider(
  options: HarnessProviderOptions & { specificationVersion?: HarnessSpecificationVersion } = {},
): HarnessProvider<HarnessLanguageModelV2 | HarnessLanguageModelV3 | HarnessLanguageModelV4> {
  const version = options.specificationVersion ?? "v2";
  if (!SPECIFICATION_VERSIONS.includes(version)) {
    throw new Error(
      `createHarnessProvider: specificationVersion is "v2" (AI SDK 5), "v3" (AI SDK 6) or "v4" (AI SDK 7), not ${JSON.stringify(version)}`,
    );
  }
  const languageModel = (modelId: string, settings: HarnessModelSettings = {}) => {
    const model = harnessLanguageModel(modelId, options, settings);
    return version === "v2" ? model : withUnifiedShapes(model, version);
  };
  return Object.assign(languageModel, { languageModel });
}

/** The V2 model as V3 or V4: the same calls, the finish reason (`{ unified, raw }`) and usage (input and output
 * token details) in the shapes both share. */
function withUnifiedShapes<Version extends "v3" | "v4">(
  model: HarnessLanguageModelV2,
  version: Version,
): HarnessLanguageModelOf<Version, HarnessFinishReasonV3, HarnessUsageV3> {
  const usage = (u: HarnessUsage): HarnessUsageV3 => ({
    inputTokens: { total: u.inputTokens, noCache: u.inputTokens, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: u.outputTokens, text: u.outputTokens, reasoning: undefined },
  });
  const finish = (reason: HarnessFinishReason): HarnessFinishReasonV3 => ({ unified: reason, raw: reason });
  return {
    specificationVersion: version,
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    async doGenerate(call) {
      const result = await model.doGenerate(call);
      return { ...result, usage: usage(result.usage), finishReason: finish(result.finishReason) };
    },
    async doStream(call) {
      const { stream, ...rest } = await model.doStream(call);
      const unified = stream.pipeThrough(
        new TransformStream<HarnessStreamPart, HarnessStreamPartV3>({
          transform(part, controller) {
            controller.enqueue(
              part.type === "finish" ? { ...part, usage: usage(part.usage), finishReason: finish(part.finishReason) } : part,
            );
          },
        }),
      );
      return { ...rest, stream: unified };
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
      const { body, answer, headers } = await generate(call, true);
      const parts = streamParts(answer);
      const stream = new ReadableStream<HarnessStreamPart>({
        start(controller) {
          parts.forEach((part) => controller.enqueue(part));
          controller.close();
        },
      });
      return { stream, request: { body }, response: { headers } };
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
      Array.isArray(message.content) ? { ...message, content: message.content.map(withoutFileData) } : message,
    ),
    tools,
    tool_choice: choice === undefined ? undefined : choice.type === "tool" ? { type: "tool", name: choice.toolName } : choice.type,
    temperature: call.temperature,
    top_p: call.topP,
    max_tokens: call.maxOutputTokens,
    stop: call.stopSequences,
    output_format: format?.type === "json" && format.schema ? { type: "json_schema", schema: format.schema } : undefined,
    reasoning: reasoningAsked(call, settings),
    stream,
  }; // prettier-ignore
}

/** Whether a call asks for reasoning: the `harness` provider option, else AI SDK 7's own `reasoning` setting (a level
 * asks for it, `"none"` does not, `"provider-default"` leaves it to the model's settings), else the model's settings. */
function reasoningAsked(call: HarnessCallOptions, settings: HarnessModelSettings): boolean {
  const option = call.providerOptions?.harness?.reasoning;
  if (option != null) return Boolean(option);
  if (call.reasoning !== undefined && call.reasoning !== "provider-default") return call.reasoning !== "none";
  return Boolean(settings.reasoning);
}

/** A prompt part without the bytes of the files it carries (a file, V4's reasoning file, a tool result's file items):
 * their media type is what the harness records. */
function withoutFileData(part: unknown): unknown {
  if (typeof part !== "object" || part === null) return part;
  const { type, mediaType, data, output } = part as {
    type?: string;
    mediaType?: unknown;
    data?: unknown;
    output?: { type?: string; value?: unknown };
  };
  if (data !== undefined && typeof mediaType === "string") return { type, mediaType };
  if (type === "tool-result" && output?.type === "content" && Array.isArray(output.value)) {
    return { ...part, output: { ...output, value: output.value.map(withoutFileData) } };
  }
  return part;
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
  if (failure?.status === "network_error") {
    // A dropped connection, as the SDK's own fetch reports one: no status, retryable, the network's error as cause.
    throw new HarnessCallError({
      message: `Cannot connect to API: ${failure.message}`,
      url,
      requestBodyValues: body,
      isRetryable: true,
      data: failure,
      cause: new Error(failure.message),
    });
  }
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
