import { APICallError, generateText, jsonSchema, stepCountIs, streamText, tool } from "ai-v7";
import type { LanguageModel } from "ai-v7";
import { describe, expect, it } from "vitest";

import { createHarnessProvider, HarnessCallError } from "harnessweb";
import { useHarness } from "harnessweb/vitest";

// AI SDK 7's own LanguageModelV4, as its `LanguageModel` union holds it: a model assigned to it is checked by tsc.
type LanguageModelV4 = Extract<LanguageModel, { specificationVersion: "v4" }>;

// Seed 000's flows on AI SDK 7, through V4 models: the scenarios are test/scenarios/seed-000.json (and v7-*.json).
describe("the AI SDK 7 test provider", () => {
  const harness = useHarness();
  const provider = createHarnessProvider({ run: harness, specificationVersion: "v4" });
  const model: LanguageModelV4 = provider("test-llm");
  const searched: string[] = [];
  const tools = {
    search: tool({
      description: "Search the web",
      inputSchema: jsonSchema<{ query: string }>({ type: "object", properties: { query: { type: "string" } } }),
      execute: async ({ query }) => {
        searched.push(query);
        return { weather: "sunny", degrees: 21 };
      },
    }),
    // No execute: the loop ends at the final report, as seed 000's agent does.
    agent__final_report: tool({ inputSchema: jsonSchema<Record<string, unknown>>({ type: "object" }) }),
  };
  const loop = {
    model,
    instructions: "You are a research agent.",
    prompt: "ai-tool-loop", // the first user message names the scenario
    temperature: 0.3,
    tools,
    stopWhen: stepCountIs(5),
  };
  const signed = { providerMetadata: { anthropic: { signature: "sig-plan" } } };

  it("is a V4 model whose stream is seed 000's parts with V4's finish part", async () => {
    expect(model.specificationVersion).toBe("v4");
    expect(() => createHarnessProvider({ specificationVersion: "v5" as "v4" })).toThrow(
      'specificationVersion is "v2" (AI SDK 5), "v3" (AI SDK 6) or "v4" (AI SDK 7), not "v5"',
    );
    const prompt = [
      { role: "system" as const, content: "You are a research agent." },
      { role: "user" as const, content: [{ type: "text" as const, text: "ai-tool-loop" }] },
    ];
    const offered = ["search", "agent__final_report"].map((name) => ({ type: "function" as const, name, inputSchema: {} }));

    const { stream } = await model.doStream({ prompt, temperature: 0.3, tools: offered });
    const parts = [];
    for await (const part of stream) parts.push(part);

    expect(parts).toEqual([
      { type: "stream-start", warnings: [] },
      { type: "reasoning-start", id: "0", ...signed },
      { type: "reasoning-delta", id: "0", delta: "The user wants Oslo's weather: search.", ...signed },
      { type: "reasoning-end", id: "0", ...signed },
      { type: "text-start", id: "1" },
      { type: "text-delta", id: "1", delta: "Let me search." },
      { type: "text-end", id: "1" },
      { type: "tool-call", toolCallId: "call-search-1", toolName: "search", input: '{"query":"oslo weather"}' },
      {
        type: "finish",
        finishReason: { unified: "tool-calls", raw: "tool-calls" },
        usage: {
          inputTokens: { total: 64, noCache: 64, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 32, text: 32, reasoning: undefined },
        },
      },
    ]);
    expect((await harness.lastCall())?.stream).toBe(true);
  });

  it("generateText: reasoning with its signature, a tool call, its result, then the final report", async () => {
    const result = await generateText(loop);

    expect(result.steps).toHaveLength(2);
    const [first, last] = result.steps;
    const thought = "The user wants Oslo's weather: search.";
    expect(first.content.filter((part) => part.type === "reasoning")).toEqual([{ type: "reasoning", text: thought, ...signed }]);
    // AI SDK 7's step.reasoning is the part as the next prompt carries it back: the metadata as providerOptions.
    expect(first.reasoning).toEqual([{ type: "reasoning", text: thought, providerOptions: signed.providerMetadata }]);
    expect(first.text).toBe("Let me search.");
    expect(first.toolCalls).toMatchObject([{ toolCallId: "call-search-1", toolName: "search", input: { query: "oslo weather" } }]);
    expect(first.usage).toMatchObject({ inputTokens: 64, outputTokens: 32, totalTokens: 96 });
    expect(first.finishReason).toBe("tool-calls");
    expect(last.toolCalls).toMatchObject([
      {
        toolCallId: "agent-final-report",
        toolName: "agent__final_report",
        input: { status: "success", report_format: "markdown", report_content: "# Oslo\n\nSunny, 21 degrees." },
      },
    ]);
    expect(searched).toContain("oslo weather");
    const calls = await harness.calls();
    // The second call carried the reasoning back with its signature and answered the tool call: no problem.
    expect(calls.map((c) => [c.protocol, c.answeredBy, c.problem])).toEqual([
      ["harness", "scenario", ""],
      ["harness", "scenario", ""],
    ]);
    expect(calls[1].messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(calls[0]).toMatchObject({ system: "You are a research agent.", temperature: 0.3, stream: false });
  });

  it("streamText: the same loop, streamed", async () => {
    const result = streamText(loop);

    const reasoning = [];
    for await (const part of result.fullStream) if (part.type === "reasoning-end") reasoning.push(part);
    const steps = await result.steps;

    expect(reasoning).toMatchObject([signed]);
    expect(steps.map((s) => s.toolCalls.map((c) => c.toolName))).toEqual([["search"], ["agent__final_report"]]);
    expect(steps[0].reasoningText).toBe("The user wants Oslo's weather: search.");
    expect(steps[0].text).toBe("Let me search.");
    expect((await harness.calls()).map((c) => [c.stream, c.problem])).toEqual([
      [true, ""],
      [true, ""],
    ]);
  });

  it("a thrown failure rejects with Error(failureMessage), not retried; the next call gets the answer", async () => {
    const ask = () => generateText({ model, prompt: "ai-throws", maxRetries: 2 });

    const failed = ask();

    await expect(failed).rejects.toThrow(new Error("Simulated provider crash"));
    await expect(failed).rejects.not.toBeInstanceOf(HarnessCallError);
    expect((await ask()).text).toBe("Recovered after the crash.");
    const calls = await harness.calls();
    expect(calls.map((c) => c.error?.kind ?? c.response?.text)).toEqual(["network_error", "Recovered after the crash."]);
  });

  it("a thrown failure inside streamText reaches onError with the same Error", async () => {
    const errors: unknown[] = [];
    const result = streamText({ model, prompt: "ai-throws", onError: ({ error }) => void errors.push(error) });

    await result.consumeStream();

    expect(errors).toEqual([new Error("Simulated provider crash")]);
  });

  it("a failure with a status: the SDK's own retry (maxRetries) gets the answer", async () => {
    const result = await generateText({ model, prompt: "ai-status", maxRetries: 2 });

    expect(result.text).toBe("Recovered after two rate limits.");
    const calls = await harness.calls();
    expect(calls.map((c) => c.error?.kind ?? c.response?.text)).toEqual([
      "rate_limit",
      "rate_limit",
      "Recovered after two rate limits.",
    ]);
  });

  it("a failure with a status and too few retries is the SDK's RetryError of APICallErrors", async () => {
    const failed = generateText({ model, prompt: "ai-status", maxRetries: 1 });

    await expect(failed).rejects.toMatchObject({
      name: "AI_RetryError",
      reason: "maxRetriesExceeded",
      lastError: { statusCode: 429, isRetryable: true, data: { status: "rate_limit", retryAfterMs: 10, throws: false } },
    });
  });

  it("a scripted network_error is the SDK's APICallError for a failed connection: no status, retryable", async () => {
    const error = await generateText({ model, prompt: "v7-network-error", maxRetries: 0 }).catch((e: unknown) => e);

    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      message: "Cannot connect to API: socket hang up",
      statusCode: undefined,
      isRetryable: true,
      data: { status: "network_error", throws: false },
    });
    // The retry, with a picture: the call is recorded with the file's media type, not its bytes.
    const picture = { type: "file" as const, data: new Uint8Array([137, 80, 78, 71]), mediaType: "image/png" };
    const content = [{ type: "text" as const, text: "v7-network-error" }, picture];
    const retried = await generateText({ model, messages: [{ role: "user", content }], maxRetries: 0 });
    expect(retried.text).toBe("Reconnected.");
    const sent = (await harness.lastCall())?.body as { prompt: Array<{ content: unknown[] }> };
    expect(sent.prompt[0].content).toEqual([{ type: "text", text: "v7-network-error" }, { type: "file", mediaType: "image/png" }]);
  });

  it("the seed's checks hold, AI SDK 7's reasoning setting among them; each failed one is the failure report", async () => {
    const checked = {
      model,
      instructions: "You are the harness agent.",
      prompt: "ai-checked",
      temperature: 0.5,
      topP: 0.9,
      reasoning: "high" as const, // a level asks for reasoning
    };
    expect((await generateText(checked)).text).toBe("All checks hold.");

    const report = async (changes: Record<string, unknown>) => {
      const result = await generateText({ ...checked, ...changes });
      expect(result.text).toBe("Scenario validation failed.");
      const input = result.toolCalls[0].input as { status: string; report_content: string };
      expect(input.status).toBe("failure");
      return input.report_content;
    };
    expect(await report({ temperature: 0.7 })).toBe("# Test Harness Error\n\nExpected temperature 0.5 but received 0.7");
    expect(await report({ topP: 0.5 })).toContain("Expected topP 0.9 but received 0.5");
    const settled = provider("test-llm", { reasoning: true });
    expect(await report({ model: settled, reasoning: "none" })).toContain("Expected reasoning to remain enabled");
    expect(await report({ instructions: "You are someone else." })).toContain("System prompt missing: harness agent");
    expect((await generateText({ ...checked, model: settled, reasoning: "provider-default" })).text).toBe("All checks hold.");
    const calls = await harness.calls();
    expect(calls.map((c) => c.problem)).toEqual([
      "",
      "Expected temperature 0.5 but received 0.7",
      "Expected topP 0.9 but received 0.5",
      "Expected reasoning to remain enabled",
      "System prompt missing: harness agent",
      "",
    ]);
  });
});
