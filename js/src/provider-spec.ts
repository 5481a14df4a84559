/**
 * The AI SDK's language model specification as the test provider's models implement it, written out (the parts they
 * use) so the package needs no runtime dependency: V2 (AI SDK 5, seed 000's own), V3 (AI SDK 6) and V4 (AI SDK 7).
 * The models are structurally the SDK's own `LanguageModelV2`, `LanguageModelV3` and `LanguageModelV4`.
 *
 * What differs between them here: V3 and V4 give the finish reason as `{ unified, raw }` and the usage as
 * `inputTokens: { total, noCache, cacheRead, cacheWrite }`, `outputTokens: { total, text, reasoning }` (on the
 * result and on the stream's `finish` part), where V2 has a string and flat counts; V4's call options carry AI SDK 7's
 * own `reasoning` setting (an effort level, `"none"` or `"provider-default"`). The content these models answer (text,
 * reasoning with its `providerMetadata`, tool calls with JSON input), the other stream parts and the rest of the call
 * options they read are the same in all three.
 */

export type JsonValue = null | string | number | boolean | JsonObject | JsonValue[];
export type JsonObject = { [key: string]: JsonValue };
export type ProviderMetadata = Record<string, Record<string, JsonValue>>;
type JsonSchema = Record<string, unknown>;

/** AI SDK 7's `reasoning` call setting (V4 only). */
export type HarnessReasoningLevel = "provider-default" | "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

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
  /** V4 (AI SDK 7): how much the model reasons; a level asks for reasoning, `"none"` turns it off. */
  reasoning?: HarnessReasoningLevel;
  abortSignal?: AbortSignal;
  headers?: Record<string, string | undefined>;
  providerOptions?: Record<string, Record<string, unknown>>;
}

export type HarnessContent =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string; providerMetadata?: ProviderMetadata }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: string };

export type HarnessFinishReason = "stop" | "length" | "tool-calls";

/** V2's usage. */
export interface HarnessUsage {
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  totalTokens: number | undefined;
}

/** V3's and V4's usage. */
export interface HarnessUsageV3 {
  inputTokens: { total: number | undefined; noCache: number | undefined; cacheRead: undefined; cacheWrite: undefined };
  outputTokens: { total: number | undefined; text: number | undefined; reasoning: undefined };
}

/** V3's and V4's finish reason. */
export interface HarnessFinishReasonV3 {
  unified: HarnessFinishReason;
  raw: string | undefined;
}

/** The stream parts, with a version's `finish` part. */
export type HarnessStreamPartOf<Finish, Usage> =
  | { type: "stream-start"; warnings: never[] }
  | { type: "text-start" | "text-end"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "reasoning-start" | "reasoning-end"; id: string; providerMetadata?: ProviderMetadata }
  | { type: "reasoning-delta"; id: string; delta: string; providerMetadata?: ProviderMetadata }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: string }
  | { type: "finish"; finishReason: Finish; usage: Usage };

export type HarnessStreamPart = HarnessStreamPartOf<HarnessFinishReason, HarnessUsage>;
export type HarnessStreamPartV3 = HarnessStreamPartOf<HarnessFinishReasonV3, HarnessUsageV3>;
export type HarnessStreamPartV4 = HarnessStreamPartV3;

/** What `doGenerate` gives, with a version's finish reason and usage. */
export interface HarnessGenerateResultOf<Finish, Usage> {
  content: HarnessContent[];
  finishReason: Finish;
  usage: Usage;
  warnings: never[];
  request: { body: unknown };
  response: { id: string; modelId: string; headers: Record<string, string> };
}

export type HarnessGenerateResult = HarnessGenerateResultOf<HarnessFinishReason, HarnessUsage>;

/** What `doStream` gives. */
export interface HarnessStreamResultOf<Part> {
  stream: ReadableStream<Part>;
  request: { body: unknown };
  response: { headers: Record<string, string> };
}

/** A language model of one version of the specification. */
export interface HarnessLanguageModelOf<Version extends string, Finish, Usage> {
  readonly specificationVersion: Version;
  readonly provider: string;
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]>;
  doGenerate(options: HarnessCallOptions): Promise<HarnessGenerateResultOf<Finish, Usage>>;
  doStream(options: HarnessCallOptions): Promise<HarnessStreamResultOf<HarnessStreamPartOf<Finish, Usage>>>;
}

/** A language model of the specification V2 (AI SDK 5). */
export type HarnessLanguageModelV2 = HarnessLanguageModelOf<"v2", HarnessFinishReason, HarnessUsage>;
/** A language model of the specification V3 (AI SDK 6). */
export type HarnessLanguageModelV3 = HarnessLanguageModelOf<"v3", HarnessFinishReasonV3, HarnessUsageV3>;
/** A language model of the specification V4 (AI SDK 7): V3's result and stream under its own version. */
export type HarnessLanguageModelV4 = HarnessLanguageModelOf<"v4", HarnessFinishReasonV3, HarnessUsageV3>;

/** The versions `createHarnessProvider` makes models of. */
export type HarnessSpecificationVersion = "v2" | "v3" | "v4";

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
  /** Ask for reasoning (the seed's `expectedReasoning` checks it); also `providerOptions: { harness: { reasoning } }`,
   * and on AI SDK 7 its own `reasoning` setting (a level asks for it, `"none"` turns it off). */
  reasoning?: boolean;
}

export interface HarnessProvider<Model = HarnessLanguageModelV2> {
  (modelId: string, settings?: HarnessModelSettings): Model;
  languageModel(modelId: string, settings?: HarnessModelSettings): Model;
}
