import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import OpenAI from "openai";
import { describe, expect, inject } from "vitest";

import { HarnessError } from "harnessweb";
import { test } from "harnessweb/vitest";

// A scenario whose model asks for a tool its MCP server answers: the model's turns and the tool calls, one run.
const TRIP = {
  id: "ts-mcp-trip",
  turns: [
    { turn: 1, response: { kind: "tool-call", tool_calls: [{ tool_name: "get_forecast", arguments: { city: "Paris" } }] } },
    { turn: 2, response: { kind: "text", assistant_text: "Sunny in Paris: go." } },
  ],
  mcp: {
    servers: {
      "ts-travel": {
        tools: [
          {
            name: "get_forecast",
            description: "The forecast for a city.",
            inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          },
        ],
        answers: [
          { tool: "get_forecast", arguments: { city: "Paris" }, text: "Sunny, 24°C" },
          { tool: "get_forecast", isError: true, text: "No forecast for that city" },
        ],
      },
    },
  },
};

async function runEvents(id: string): Promise<{ kind: string; data: Record<string, unknown> }[]> {
  const { url, token } = inject("harness");
  const response = await fetch(`${url}/api/runs/${id}`, { headers: { Authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { events: { kind: string; data: Record<string, unknown> }[] }).events;
}

describe("a scenario's MCP server, through the official TypeScript SDK", () => {
  test("lists and calls its tools, and the calls join the test's run beside the model's turns", async ({ harness }) => {
    await harness.useScenario(TRIP);
    const model = new OpenAI(); // the test's run, from the environment
    const ask = { model: "gpt-4o", messages: [{ role: "user" as const, content: "Weather in Paris?" }] };
    const first = await model.chat.completions.create(ask);
    const asked = first.choices[0].message;
    expect(asked.tool_calls?.[0]).toMatchObject({ function: { name: "get_forecast" } });

    const transport = new StreamableHTTPClientTransport(new URL(harness.mcpUrl("ts-travel")), {
      requestInit: { headers: harness.headers },
    });
    const client = new Client({ name: "harnessweb-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["get_forecast"]);
      const paris = await client.callTool({ name: "get_forecast", arguments: { city: "Paris" } });
      expect(paris).toMatchObject({ content: [{ type: "text", text: "Sunny, 24°C" }] });
      expect(paris.isError).toBeFalsy();
      const oslo = await client.callTool({ name: "get_forecast", arguments: { city: "Oslo" } });
      expect(oslo).toMatchObject({ isError: true, content: [{ type: "text", text: "No forecast for that city" }] });
    } finally {
      await client.close();
    }

    const answered = { role: "tool" as const, tool_call_id: asked.tool_calls![0].id, content: "Sunny, 24°C" };
    const second = await model.chat.completions.create({ ...ask, messages: [...ask.messages, asked, answered] });
    expect(second.choices[0].message.content).toBe("Sunny in Paris: go.");
    const events = await runEvents(harness.id);
    const calls = events.filter((e) => e.kind === "mcp_call").map((e) => [e.data.server, e.data.tool, e.data.arguments]);
    expect(calls).toEqual([
      ["ts-travel", "get_forecast", { city: "Paris" }],
      ["ts-travel", "get_forecast", { city: "Oslo" }],
    ]);
    const order = events.map((e) => e.kind).filter((kind) => kind === "response" || kind === "mcp_result");
    expect(order).toEqual(["response", "mcp_result", "mcp_result", "response"]);
  });

  test("mcpUrl is the server's path on the harness, and refuses what is no server name", async ({ harness }) => {
    expect(harness.mcpUrl("ts-travel")).toBe(`${inject("harness").url}/mcp/ts-travel`);
    expect(() => harness.mcpUrl("../api")).toThrow(HarnessError);
    expect(() => harness.mcpUrl("")).toThrow(/is no MCP server name/);
  });
});
