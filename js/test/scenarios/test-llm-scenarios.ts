// Seed 000's scenario registry, kept in TypeScript: `npx harnessweb export-scenarios` writes each as a JSON file.
import type { ScenarioDefinition } from "harnessweb";

const scenarios: ScenarioDefinition[] = [
  {
    id: "ts-module-lookup",
    description: "A tool call, then the final report.",
    systemPromptMustInclude: ["research agent"],
    turns: [
      {
        turn: 1,
        expectedTools: ["search", "agent__final_report"],
        response: {
          kind: "tool-call",
          assistantText: "Searching.",
          toolCalls: [{ toolName: "search", callId: "call-search-1", arguments: { query: "bergen weather" } }],
        },
      },
      {
        turn: 2,
        response: { kind: "final-report", reportContent: "# Bergen\n\nRain, 12 degrees.", reportFormat: "markdown" },
      },
    ],
  },
  {
    id: "ts-module-retry",
    description: "A rate limit once, then the answer.",
    turns: [
      {
        turn: 1,
        failuresBeforeSuccess: 1,
        failureStatus: "rate_limit",
        failureRetryAfterMs: 10,
        response: { kind: "text", assistantText: "Answered after a rate limit." },
      },
    ],
  },
];

const byId = new Map(scenarios.map((scenario) => [scenario.id, scenario]));

export function getScenario(id: string): ScenarioDefinition | undefined {
  return byId.get(id);
}

export function listScenarioIds(): string[] {
  return Array.from(byId.keys());
}
