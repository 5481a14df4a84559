import Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";

import { useHarness } from "harnessweb/vitest";

const ask = (prompt: string) => ({
  model: "claude-opus-4-6",
  max_tokens: 256,
  messages: [{ role: "user" as const, content: prompt }],
});

describe("the anthropic client built from the environment alone", () => {
  const harness = useHarness(); // plain beforeEach / afterEach: each test a run of its own

  it("answers from setResponse", async () => {
    await harness.setResponse("Bonjour from the harness");

    const reply = await new Anthropic().messages.create(ask("Say hello in French"));

    expect(reply.content).toMatchObject([{ type: "text", text: "Bonjour from the harness" }]);
    await harness.assertCalledWith({ protocol: "anthropic", model: "claude-opus-4-6", maxTokens: 256, prompt: "Say hello in French" });
  });

  it("plays a loaded scenario, streamed", async () => {
    await harness.useScenario("weather");

    const stream = new Anthropic().messages.stream({ ...ask("Oslo?"), system: "You are a weather assistant." });
    const text = await stream.finalText();

    expect(text).toBe("It is sunny in Oslo, 21 degrees.");
    const [call] = await harness.calls();
    expect(call).toMatchObject({ stream: true, answeredBy: "scenario", system: "You are a weather assistant." });
  });

  it("answers tool calls set with setResponse", async () => {
    await harness.setResponse({ toolCalls: [{ name: "get_weather", arguments: { city: "Oslo" } }] });
    const tools = [{ name: "get_weather", input_schema: { type: "object" as const, properties: {} } }];

    const reply = await new Anthropic().messages.create({ ...ask("Oslo?"), tools });

    expect(reply.stop_reason).toBe("tool_use");
    expect(reply.content.find((block) => block.type === "tool_use")).toMatchObject({
      name: "get_weather",
      input: { city: "Oslo" },
    });
    await harness.assertCalledWith({ tools: ["get_weather"] });
  });

  it("setError makes the SDK throw its own rate-limit error", async () => {
    await harness.setError("rate_limit", { times: "always", model: "claude-opus-4-6" });

    const failed = new Anthropic({ maxRetries: 0 }).messages.create(ask("Oslo?"));

    await expect(failed).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    expect(await harness.promptCount({ model: "claude-opus-4-6" })).toBe(1);
  });

  it("a scenario given whole is stored on the server and played", async () => {
    await harness.useScenario({
      id: "js-inline-greeting",
      turns: [{ turn: 1, response: { kind: "text", assistant_text: "Greetings from an inline scenario." } }],
    });

    const reply = await new Anthropic().messages.create(ask("hi"));

    expect(reply.content[0]).toMatchObject({ text: "Greetings from an inline scenario." });
  });

  it("reset forgets the calls so far", async () => {
    await harness.setResponse("one");
    await new Anthropic().messages.create(ask("first"));
    await harness.reset();

    await harness.assertNotCalled();
    await new Anthropic().messages.create(ask("second"));
    expect((await harness.calls()).map((c) => c.prompt)).toEqual(["second"]);
  });
});
