import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai-v6";
import { describe, expect, it } from "vitest";

import { createHarnessProvider } from "harnessweb";
import { useHarness } from "harnessweb/vitest";

// The same scenarios (test/scenarios/seed-000.json) on AI SDK 6, through V3 models.
describe("the AI SDK 6 test provider", () => {
  const harness = useHarness();
  const provider = createHarnessProvider({ run: harness, specificationVersion: "v3" });
  const tools = {
    search: tool({
      inputSchema: jsonSchema<{ query: string }>({ type: "object", properties: { query: { type: "string" } } }),
      execute: async () => ({ weather: "sunny", degrees: 21 }),
    }),
    agent__final_report: tool({ inputSchema: jsonSchema<Record<string, unknown>>({ type: "object" }) }),
  };
  const loop = {
    model: provider("test-llm"),
    system: "You are a research agent.",
    prompt: "ai-tool-loop",
    temperature: 0.3,
    tools,
    stopWhen: stepCountIs(5),
  };

  it("is a V3 model whose stream ends with V3's finish part", async () => {
    const model = provider("test-llm");
    expect(model.specificationVersion).toBe("v3");
    const prompt = [
      { role: "system" as const, content: "You are a research agent." },
      { role: "user" as const, content: [{ type: "text" as const, text: "ai-tool-loop" }] },
    ];
    const offered = ["search", "agent__final_report"].map((name) => ({ type: "function" as const, name, inputSchema: {} }));

    const { stream } = await model.doStream({ prompt, temperature: 0.3, tools: offered });
    const parts = [];
    for await (const part of stream) parts.push(part);

    expect(parts.map((p) => p.type)).toEqual([
      "stream-start",
      "reasoning-start",
      "reasoning-delta",
      "reasoning-end",
      "text-start",
      "text-delta",
      "text-end",
      "tool-call",
      "finish",
    ]);
    expect(parts.at(-1)).toEqual({
      type: "finish",
      finishReason: { unified: "tool-calls", raw: "tool-calls" },
      usage: {
        inputTokens: { total: 64, noCache: 64, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: 32, text: 32, reasoning: undefined },
      },
    });
  });

  it("generateText: reasoning with its signature, the tool loop, the final report", async () => {
    const result = await generateText(loop);

    const [first, last] = result.steps;
    expect(first.reasoning).toMatchObject([{ providerMetadata: { anthropic: { signature: "sig-plan" } } }]);
    expect(first.toolCalls).toMatchObject([{ toolCallId: "call-search-1", input: { query: "oslo weather" } }]);
    expect(first.usage).toMatchObject({ inputTokens: 64, outputTokens: 32, totalTokens: 96 });
    expect(first.finishReason).toBe("tool-calls");
    expect(last.toolCalls).toMatchObject([{ toolName: "agent__final_report", input: { status: "success" } }]);
    expect((await harness.calls()).map((c) => c.problem)).toEqual(["", ""]);
  });

  it("streamText: the same loop, streamed", async () => {
    const result = streamText(loop);

    const steps = await result.steps;

    expect(steps.map((s) => s.toolCalls.map((c) => c.toolName))).toEqual([["search"], ["agent__final_report"]]);
    expect(steps[0].reasoning).toMatchObject([{ providerMetadata: { anthropic: { signature: "sig-plan" } } }]);
  });

  it("a thrown failure rejects with Error(failureMessage); a status is retried by the SDK", async () => {
    const thrown = generateText({ model: provider("test-llm"), prompt: "ai-throws", maxRetries: 2 });
    await expect(thrown).rejects.toThrow(new Error("Simulated provider crash"));

    const retried = await generateText({ model: provider("test-llm"), prompt: "ai-status", maxRetries: 2 });
    expect(retried.text).toBe("Recovered after two rate limits.");
  });

  it("a failed check is the seed's failure report", async () => {
    const result = await generateText({
      model: provider("test-llm", { reasoning: true }),
      system: "You are the harness agent.",
      prompt: "ai-checked",
      temperature: 0.7,
      topP: 0.9,
    });

    expect(result.text).toBe("Scenario validation failed.");
    expect(result.toolCalls[0].input).toMatchObject({ status: "failure" });
    expect((await harness.lastCall())?.problem).toBe("Expected temperature 0.5 but received 0.7");
  });
});
