import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai-v5";
import { describe, expect, it } from "vitest";

import { createHarnessProvider, HarnessCallError } from "harnessweb";
import { useHarness } from "harnessweb/vitest";

// Seed 000's test provider on AI SDK 5: the scenarios are test/scenarios/seed-000.json, played by the server's engine.
describe("the AI SDK 5 test provider", () => {
  const harness = useHarness();
  const provider = createHarnessProvider({ run: harness }); // this test's run: its calls are recorded there
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
    model: provider("test-llm"),
    system: "You are a research agent.",
    prompt: "ai-tool-loop", // the first user message names the scenario
    temperature: 0.3,
    tools,
    stopWhen: stepCountIs(5),
  };

  it("generateText: reasoning with its signature, a tool call, its result, then the final report", async () => {
    const result = await generateText(loop);

    expect(result.steps).toHaveLength(2);
    const [first, last] = result.steps;
    expect(first.reasoning).toEqual([
      {
        type: "reasoning",
        text: "The user wants Oslo's weather: search.",
        providerMetadata: { anthropic: { signature: "sig-plan" } },
      },
    ]);
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
    expect(calls.map((c) => [c.protocol, c.path, c.answeredBy, c.problem])).toEqual([
      ["harness", "/harness/v1/generate", "scenario", ""],
      ["harness", "/harness/v1/generate", "scenario", ""],
    ]);
    expect(calls[1].messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(calls[0]).toMatchObject({ system: "You are a research agent.", temperature: 0.3 });
  });

  it("doStream gives seed 000's parts exactly", async () => {
    const model = provider("test-llm");
    const prompt = [
      { role: "system" as const, content: "You are a research agent." },
      { role: "user" as const, content: [{ type: "text" as const, text: "ai-tool-loop" }] },
    ];
    const search = { type: "function" as const, name: "search", inputSchema: { type: "object" } };
    const final = { type: "function" as const, name: "agent__final_report", inputSchema: { type: "object" } };

    const { stream } = await model.doStream({ prompt, temperature: 0.3, tools: [search, final] });
    const parts = [];
    for await (const part of stream) parts.push(part);

    const signature = { providerMetadata: { anthropic: { signature: "sig-plan" } } };
    expect(parts).toEqual([
      { type: "stream-start", warnings: [] },
      { type: "reasoning-start", id: "0", ...signature },
      { type: "reasoning-delta", id: "0", delta: "The user wants Oslo's weather: search.", ...signature },
      { type: "reasoning-end", id: "0", ...signature },
      { type: "text-start", id: "1" },
      { type: "text-delta", id: "1", delta: "Let me search." },
      { type: "text-end", id: "1" },
      { type: "tool-call", toolCallId: "call-search-1", toolName: "search", input: '{"query":"oslo weather"}' },
      { type: "finish", finishReason: "tool-calls", usage: { inputTokens: 64, outputTokens: 32, totalTokens: 96 } },
    ]);
    const [call] = await harness.calls();
    expect(call.stream).toBe(true);
  });

  it("streamText: the same loop, streamed", async () => {
    const result = streamText(loop);

    const reasoning = [];
    for await (const part of result.fullStream) if (part.type === "reasoning-end") reasoning.push(part);
    const steps = await result.steps;

    expect(reasoning).toMatchObject([{ providerMetadata: { anthropic: { signature: "sig-plan" } } }]);
    expect(steps.map((s) => s.toolCalls.map((c) => c.toolName))).toEqual([["search"], ["agent__final_report"]]);
    expect(steps[0].reasoningText).toBe("The user wants Oslo's weather: search.");
    expect(await result.text).toBe("");
    expect(steps[0].text).toBe("Let me search.");
    expect(await harness.promptCount()).toBe(2);
  });

  it("a thrown failure rejects with Error(failureMessage); the next call gets the answer", async () => {
    const ask = () => generateText({ model: provider("test-llm"), prompt: "ai-throws", maxRetries: 2 });

    const failed = ask();

    await expect(failed).rejects.toThrow(new Error("Simulated provider crash"));
    await expect(failed).rejects.not.toBeInstanceOf(HarnessCallError); // thrown as the seed throws: not retried
    expect((await ask()).text).toBe("Recovered after the crash.");
    const calls = await harness.calls();
    expect(calls.map((c) => c.error?.kind ?? c.response?.text)).toEqual(["network_error", "Recovered after the crash."]);
  });

  it("a thrown failure inside streamText reaches onError with the same Error", async () => {
    const errors: unknown[] = [];
    const result = streamText({ model: provider("test-llm"), prompt: "ai-throws", onError: ({ error }) => void errors.push(error) });

    await result.consumeStream();

    expect(errors).toEqual([new Error("Simulated provider crash")]);
  });

  it("a failure with a status: the SDK's own retry (maxRetries) gets the answer", async () => {
    const result = await generateText({ model: provider("test-llm"), prompt: "ai-status", maxRetries: 2 });

    expect(result.text).toBe("Recovered after two rate limits.");
    const calls = await harness.calls();
    expect(calls.map((c) => c.error?.kind ?? c.response?.text)).toEqual([
      "rate_limit",
      "rate_limit",
      "Recovered after two rate limits.",
    ]);
  });

  it("a failure with a status and too few retries is the SDK's RetryError of APICallErrors", async () => {
    const failed = generateText({ model: provider("test-llm"), prompt: "ai-status", maxRetries: 1 });

    await expect(failed).rejects.toMatchObject({
      name: "AI_RetryError",
      reason: "maxRetriesExceeded",
      lastError: { statusCode: 429, isRetryable: true, data: { status: "rate_limit", retryAfterMs: 10, throws: false } },
    });
  });

  it("the seed's checks hold, and each failed one is the failure report", async () => {
    const checked = {
      model: provider("test-llm", { reasoning: true }),
      system: "You are the harness agent.",
      prompt: "ai-checked",
      temperature: 0.5,
      topP: 0.9,
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
    expect(await report({ model: provider("test-llm") })).toContain("Expected reasoning to remain enabled");
    expect(await report({ system: "You are someone else." })).toContain("System prompt missing: harness agent");
    const calls = await harness.calls();
    expect(calls.map((c) => c.problem)).toEqual([
      "",
      "Expected temperature 0.5 but received 0.7",
      "Expected topP 0.9 but received 0.5",
      "Expected reasoning to remain enabled",
      "System prompt missing: harness agent",
    ]);
  });
});
