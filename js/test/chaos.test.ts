import OpenAI from "openai";
import { describe, expect } from "vitest";

import { HarnessError } from "harnessweb";
import { test } from "harnessweb/vitest";

const ask = { model: "gpt-4o", messages: [{ role: "user" as const, content: "Oslo?" }] };
const RATES = { rateLimit: 0.3, serverError: 0.2 };
// What seed 5 gives the requests numbered 0 to 7 under RATES (the server's harnessweb.engine.chaos draw).
const SEED_5 = ["fine", "fine", 500, "fine", "fine", 500, "fine", 429];

/** One request's outcome as the SDK saw it: the answer's text, or the status of the error it threw. */
async function outcome(client: OpenAI): Promise<string | number | undefined> {
  try {
    return (await client.chat.completions.create(ask)).choices[0].message.content ?? "";
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error.status;
    return (error as Error).name; // the body cut after a 200's headers: no APIError, the SDK throws as it reads
  }
}

async function outcomes(client: OpenAI, count: number): Promise<(string | number | undefined)[]> {
  const seen = [];
  for (let i = 0; i < count; i++) seen.push(await outcome(client));
  return seen;
}

describe("chaos by probability through the openai client", () => {
  test("the same seed fails the same requests twice, its count kept across setResponse", async ({ harness }) => {
    await harness.chaos({ seed: 5, ...RATES });
    await harness.setResponse("fine"); // pushes the script again: chaos stays
    const client = new OpenAI({ maxRetries: 0 });

    const first = await outcomes(client, 8);
    await harness.chaos({ seed: 5, ...RATES }); // the run's requests numbered from 0 again
    const second = await outcomes(client, 4);
    await harness.setResponse("fine"); // a later push keeps the server's number: request 4 is next
    second.push(...(await outcomes(client, 4)));

    expect(first).toEqual(SEED_5);
    expect(second).toEqual(first);
    const calls = await harness.calls();
    expect(calls.map((c) => c.error?.kind ?? c.response?.text)).toEqual(
      [...SEED_5, ...SEED_5].map((o) => ({ 500: "server_error", 429: "rate_limit" })[o] ?? o),
    );
  });

  test("a rate of 1 fails every request its way; chaos() turns it off", async ({ harness }) => {
    await harness.setResponse("after the chaos");
    const client = new OpenAI({ maxRetries: 0 });

    await harness.chaos({ seed: 1, rateLimit: 1 });
    expect(await outcomes(client, 3)).toEqual([429, 429, 429]);
    await harness.chaos({ seed: 1, serverError: 1 });
    expect(await outcomes(client, 3)).toEqual([500, 500, 500]);
    await harness.chaos({ seed: 1, networkError: 1 });
    expect(await outcomes(client, 2)).toEqual(["TypeError", "TypeError"]); // undici's "terminated"
    await harness.chaos({ seed: 1, malformed: 1 });
    expect(await outcomes(client, 2)).toEqual(["SyntaxError", "SyntaxError"]); // the JSON cut in two
    await harness.chaos();

    expect(await outcome(client)).toBe("after the chaos"); // no failed request took the answer
  });

  test("a bad rate names the option; rates above 1 together are refused by the server", async ({ harness }) => {
    await expect(harness.chaos({ seed: 1, rateLimit: 1.5 })).rejects.toThrow(
      new HarnessError("chaos: rateLimit must be a rate from 0 to 1, got 1.5"),
    );
    await expect(harness.chaos({ rate_limit: 0.1 } as never)).rejects.toThrow(
      'chaos: unknown option "rate_limit"; use seed, rateLimit, serverError, networkError, malformed',
    );
    await expect(harness.chaos({ seed: -1, malformed: 0.1 })).rejects.toThrow("chaos: seed must be a whole number");
    await expect(harness.chaos({ seed: 1, rateLimit: 0.6, serverError: 0.6 })).rejects.toThrow(
      "body.chaos: the rates add up to 1.2; together they may be at most 1",
    );
  });
});
