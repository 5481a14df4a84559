import OpenAI from "openai";
import { describe, expect, test as plainTest } from "vitest";

import { fingerprint } from "harnessweb";
import { test } from "harnessweb/vitest";

process.env.GOOGLE_API_KEY = "the-team-s-own-google-key"; // what a developer's shell may hold

const ask = (prompt: string) => ({ model: "gpt-4o", messages: [{ role: "user" as const, content: prompt }] });

describe("the openai client built from the environment alone", () => {
  test("answers from setResponse, and the run holds the call", async ({ harness }) => {
    await harness.setResponse("Hello from the harness");
    const client = new OpenAI(); // OPENAI_BASE_URL and OPENAI_API_KEY: the test's run

    const reply = await client.chat.completions.create(ask("What is the weather in Oslo?"));

    expect(reply.choices[0].message.content).toBe("Hello from the harness");
    const call = await harness.assertCalledWith({ promptContains: "Oslo", model: "gpt-4o" });
    expect(call).toMatchObject({ protocol: "openai", path: "/v1/chat/completions", answeredBy: "configured" });
    expect(call.key).toEqual({ place: "authorization", fingerprint: fingerprint(harness.key) });
    expect(call.response?.text).toBe("Hello from the harness");
  });

  test("plays a loaded scenario, its system prompt checked", async ({ harness }) => {
    await harness.useScenario("weather");
    const client = new OpenAI();

    const reply = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "You are a weather assistant." },
        { role: "user", content: "Oslo?" },
      ],
    });

    expect(reply.choices[0].message.content).toBe("It is sunny in Oslo, 21 degrees.");
    const [call] = await harness.calls();
    expect(call).toMatchObject({ answeredBy: "scenario", system: "You are a weather assistant.", prompt: "Oslo?" });
  });

  test("a scenario's tool call, then its answer, through the Responses API", async ({ harness }) => {
    await harness.useScenario("weather-tools");
    const client = new OpenAI();
    const tools = [
      { type: "function" as const, name: "get_weather", parameters: { type: "object", properties: {} }, strict: false },
    ];

    const first = await client.responses.create({ model: "gpt-4o", input: "Weather in Oslo?", tools });
    const call = first.output.find((item) => item.type === "function_call");
    expect(call).toMatchObject({ name: "get_weather", arguments: JSON.stringify({ city: "Oslo" }) });
    const second = await client.responses.create({
      model: "gpt-4o",
      tools,
      input: [
        { role: "user", content: "Weather in Oslo?" },
        { type: "function_call", call_id: call!.type === "function_call" ? call!.call_id : "", name: "get_weather", arguments: "{}" },
        { type: "function_call_output", call_id: call!.type === "function_call" ? call!.call_id : "", output: "sunny" },
      ],
    });

    expect(second.output_text).toBe("Oslo: sunny, 21 degrees.");
    const calls = await harness.calls();
    expect(calls.map((c) => [c.protocol, c.tools, c.messages.at(-1)?.role])).toEqual([
      ["responses", ["get_weather"], "user"],
      ["responses", ["get_weather"], "tool"],
    ]);
  });

  test("setError makes the SDK throw its own rate-limit error", async ({ harness }) => {
    await harness.setError("rate_limit", { times: "always" });
    const client = new OpenAI({ maxRetries: 0 });

    const failed = client.chat.completions.create(ask("Oslo?"));

    await expect(failed).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    await expect(failed).rejects.toMatchObject({ status: 429 });
    const [call] = await harness.calls();
    expect(call.error).toMatchObject({ kind: "rate_limit", status: 429 });
  });

  test("a rate limit once: the SDK's own retry gets the answer", async ({ harness }) => {
    await harness.setError("rate_limit", { times: 1 });
    await harness.setResponse("After the retry");

    const reply = await new OpenAI().chat.completions.create(ask("Oslo?"));

    expect(reply.choices[0].message.content).toBe("After the retry");
    const calls = await harness.calls();
    expect(calls.map((c) => c.error?.kind ?? c.response?.text)).toEqual(["rate_limit", "After the retry"]);
  });

  test("assertCalledWith shows the closest call and what differs", async ({ harness }) => {
    await harness.setResponse({ json: { city: "Oslo" } }, { model: "gpt-4o" });
    const reply = await new OpenAI().chat.completions.create(ask("Where?"));
    expect(JSON.parse(reply.choices[0].message.content ?? "")).toEqual({ city: "Oslo" });

    const failure = harness.assertCalledWith({ promptContains: "Bergen", model: "gpt-4.1" });

    await expect(failure).rejects.toThrow(
      'No call matches promptContains="Bergen", model="gpt-4.1" among 1 call(s). ' +
        'Closest: call 0 (openai "gpt-4o", prompt "Where?"), which differs in:\n' +
        '  - promptContains: "Bergen" is in no message (last user message: "Where?")\n' +
        '  - model: wanted "gpt-4.1", sent "gpt-4o"',
    );
    await harness.assertCalledTimes(1, { model: "gpt-4o" });
    await expect(harness.assertNotCalled()).rejects.toThrow("Expected 0 call(s), got 1");
  });

  test("expectKey: a request with another key gets the validation failure naming its key", async ({ harness }) => {
    await harness.expectKey("sk-team-key");
    await harness.setResponse("fine");

    await new OpenAI().chat.completions.create(ask("Oslo?")); // sent with the run's own key

    const [call] = await harness.calls();
    expect(call.problem).toContain(`Expected the API key with fingerprint ${fingerprint("sk-team-key")}`);
    expect(call.problem).toContain(fingerprint(harness.key));
  });

  test("the environment is the test's, and put back after it", async ({ harness }) => {
    expect(process.env.OPENAI_API_KEY).toBe(`harness-run-${harness.id}`);
    expect(process.env.OPENAI_BASE_URL).toBe(`${harness.url}/v1`);
    expect(process.env.ANTHROPIC_BASE_URL).toBe(harness.url);
    expect(process.env.GEMINI_API_KEY).toBe(harness.key);
    expect(process.env.GOOGLE_GEMINI_BASE_URL).toBe(harness.url);
    expect(process.env.GOOGLE_API_KEY).toBeUndefined(); // @google/genai would read it before GEMINI_API_KEY
  });
});

plainTest("a test without the fixture has the environment it started with", () => {
  expect(process.env.OPENAI_API_KEY ?? "").not.toMatch(/^harness-run-/);
  expect(process.env.ANTHROPIC_API_KEY ?? "").not.toMatch(/^harness-run-/);
  expect(process.env.GOOGLE_API_KEY).toBe("the-team-s-own-google-key");
});
