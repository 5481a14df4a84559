import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import OpenAI from "openai";
import { expect, inject } from "vitest";

import { test } from "harnessweb/vitest";

// isolation-a and isolation-b run at the same time in two workers (each waits for the other), configure the same
// model differently, and each gets its own answers and sees only its own calls.
test("file b gets its own answers while file a runs beside it", async ({ harness }) => {
  const meeting = path.join(tmpdir(), `harnessweb-isolation-${inject("harness").token.slice(-16)}`);
  mkdirSync(meeting, { recursive: true });
  await harness.setResponse("answer for file b", { model: "gpt-4o" });
  const client = new OpenAI();
  const ask = async (n: number) =>
    (await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: `b ${n}` }] }))
      .choices[0].message.content;

  const first = await ask(1);
  writeFileSync(path.join(meeting, "b"), harness.id);
  await expect.poll(() => existsSync(path.join(meeting, "a")), { timeout: 80_000, interval: 50 }).toBe(true);
  const after = await Promise.all([ask(2), ask(3), ask(4)]);

  expect([first, ...after]).toEqual(Array(4).fill("answer for file b"));
  expect((await harness.calls()).map((c) => c.prompt).sort()).toEqual(["b 1", "b 2", "b 3", "b 4"]);
}, 90_000); // waiting for the other file is the slow part under load
