import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import Anthropic from "@anthropic-ai/sdk";
import { expect, inject } from "vitest";

import { test } from "harnessweb/vitest";

// Seed 001's setup: the application's state in a temporary folder of the run's own, its trace logs there.
const E2E_TEMP_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-"));
process.env.TRACE_LOG_DIR = path.join(E2E_TEMP_DIR, "logs");
writeTraceLog("before-the-tests", ["an earlier run's log", "=== SUCCESS ==="]); // never a test's turn

// The application under test: a grocery assistant on Claude whose TraceLogger writes one file per turn.
class Assistant {
  private readonly client = new Anthropic({ maxRetries: 0 }); // from the environment: the test's run
  private readonly history: Anthropic.MessageParam[] = [];

  async sendMessage(text: string): Promise<string> {
    const requestId = randomUUID().slice(0, 8);
    const trace = [`[${requestId}] user: ${text}`];
    this.history.push({ role: "user", content: text });
    try {
      const reply = await this.client.messages.create({
        model: "claude-opus-4-6",
        max_tokens: 1024,
        system: "You keep the user's grocery lists as web pages.",
        messages: this.history,
      });
      const answer = reply.content.map((block) => (block.type === "text" ? block.text : "")).join("");
      this.history.push({ role: "assistant", content: answer });
      trace.push(`[${requestId}] assistant: ${answer}`, "=== SUCCESS ===");
      return answer;
    } catch (error) {
      this.history.pop();
      trace.push(`[${requestId}] error: ${String(error)}`, "=== FAILED ===");
      throw error;
    } finally {
      writeTraceLog(requestId, trace);
    }
  }
}

function writeTraceLog(requestId: string, lines: string[]): void {
  const now = new Date().toISOString(); // {TRACE_LOG_DIR}/{YYYY-MM-DD}/{HH-mm-ss}_{requestId}.log
  const folder = path.join(process.env.TRACE_LOG_DIR!, now.slice(0, 10));
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, `${now.slice(11, 19).replaceAll(":", "-")}_${requestId}.log`), lines.join("\n"));
}

const listPage = (items: string[]) => `<!doctype html><ul>${items.map((item) => `<li>${item}</li>`).join("")}</ul>`;

test("a grocery list over three turns: trace logs per turn, pages, the judge", async ({ harness }) => {
  await harness.useScenario("grocery-list"); // test/scenarios/grocery-list.json
  const assistant = new Assistant();

  const first = await assistant.sendMessage("Create a grocery list with eggs, milk, bread and butter");
  expect(first).toContain("/u/list-1");
  await harness.artifact("/u/list-1", listPage(["eggs", "milk", "bread", "butter"]));
  expect(await harness.collectTurnLog(1)).toMatchObject({ turnNumber: 1, outcome: "success" });

  const second = await assistant.sendMessage("Add hummus and regenerate the page. Return the new link.");
  expect(second).toContain("/u/list-2");
  const page = await harness.artifact("/u/list-2", listPage(["eggs", "milk", "bread", "butter", "hummus"]));
  expect(page).toMatchObject({ name: "/u/list-2", kind: "html", duplicate: false });
  expect(await harness.collectTurnLog(2)).toMatchObject({ turnNumber: 2, outcome: "success" });

  await expect(assistant.sendMessage("Share it with Sam")).rejects.toBeInstanceOf(Anthropic.InternalServerError);
  const failed = await harness.collectTurnLog(3);
  expect(failed).toMatchObject({ turnNumber: 3, outcome: "failed" });
  expect(failed?.content).toContain("529");
  expect(await harness.collectTurnLog(4)).toBeNull(); // no new file
  expect(harness.turnLogs.map((log) => path.dirname(log.filePath))).toEqual(Array(3).fill(path.dirname(failed!.filePath)));
  await harness.artifact("notes.txt", "Sam has no account yet.", "text/plain");

  // The judge over REST reads the run: its calls, pages and trace logs. A diagnostic, never the gate.
  const verdict = await harness.judge(["The list holds all five items", "Each turn returned a new link"]);

  expect(verdict.runId).toBe(harness.id);
  if (!process.env.HARNESS_JUDGE_API_KEY) {
    expect(verdict).toMatchObject({ state: "skipped", effective: "SKIPPED", overall: "", criteria: [] });
    expect(verdict.skippedReason).toContain("HARNESS_JUDGE_API_KEY");
  } else {
    expect(["judged", "judge_error"]).toContain(verdict.state);
  }
  // Stored in the run: read back through the API, with the prompt the judge was (or would have been) sent.
  const { token } = inject("harness");
  const job = await (await fetch(`${verdict.jobUrl}?prompt=true`, { headers: { Authorization: `Bearer ${token}` } })).json();
  expect(job.verdict).toMatchObject({ id: verdict.id, run_id: harness.id, state: verdict.state });
  for (const seen of ["hummus", "<li>hummus</li>", "=== FAILED ===", "Sam has no account yet."]) {
    expect(job.verdict.prompt).toContain(seen);
  }
  const stored = await fetch(`${harness.url}/api/runs/${harness.id}/artifacts`, { headers: { Authorization: `Bearer ${token}` } });
  expect((await stored.json()).map((a: { name: string; kind: string }) => [a.name, a.kind])).toEqual([
    ["/u/list-1", "html"],
    ["/u/list-2", "html"],
    ["notes.txt", "text"],
  ]);
});

test("the judge before any call, a log holding a key, a log without a footer", async ({ harness }) => {
  await expect(harness.judge(["Anything"])).rejects.toThrow(
    `this test's run ${harness.id} does not exist yet (a run is made by the first request that names it`,
  );
  await harness.setResponse("Noted.");
  await new Assistant().sendMessage("Remember my key sk-ant-api03-abcdefghijklmnopqrstuvwxyz");

  await expect(harness.collectTurnLog(1)).rejects.toThrow(
    /^The harness refused the trace log \/.*\.log \(422\): body.content: \/.*\.log, line 1, holds an Anthropic key \(sk-ant-…\): redact it before uploading the log$/,
  );
  await expect(harness.judge([])).rejects.toThrow("The harness refused queuing the judge (422): body.criteria: has no criteria.");

  writeTraceLog("older", ["a retry's log", "=== SUCCESS ==="]);
  await new Promise((resolve) => setTimeout(resolve, 20));
  writeTraceLog("newer", ["SUCCESSFUL lookup", "Failed to fetch the page"]); // no footer: neither word is one
  expect(await harness.collectTurnLog(1)).toMatchObject({ turnNumber: 1, outcome: "" });
  expect(harness.skippedTraceFiles).toEqual([expect.stringMatching(/_older\.log$/)]);
});
