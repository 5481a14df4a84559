import { generateText, jsonSchema, stepCountIs, tool } from "ai-v5"; // npm:ai@5 (a team's own is just "ai")
import { expect } from "vitest";

import { createHarnessProvider } from "harnessweb";
import { test } from "harnessweb/vitest";

test("the agent searches, then reports", async ({ harness }) => {
  const testLlm = createHarnessProvider({ run: harness }); // seed 000's test-llm, played by the harness
  const search = tool({
    inputSchema: jsonSchema<{ query: string }>({ type: "object", properties: { query: { type: "string" } } }),
    execute: async () => ({ weather: "sunny", degrees: 21 }),
  });
  const agent__final_report = tool({ inputSchema: jsonSchema({ type: "object" }) }); // no execute: the loop ends

  const result = await generateText({
    model: testLlm("test-llm"),
    system: "You are a research agent.",
    prompt: "ai-tool-loop", // test/scenarios/seed-000.json: the first user message names the scenario
    temperature: 0.3,
    tools: { search, agent__final_report },
    stopWhen: stepCountIs(5),
  });

  expect(result.steps[0].reasoning).toMatchObject([{ providerMetadata: { anthropic: { signature: "sig-plan" } } }]);
  expect(result.toolCalls[0].input).toMatchObject({ status: "success", report_content: "# Oslo\n\nSunny, 21 degrees." });
  await harness.assertCalledTimes(2);
});
