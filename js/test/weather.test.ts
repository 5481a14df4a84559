import OpenAI from "openai";
import { expect } from "vitest";

import { test } from "harnessweb/vitest";

test("it reports the weather", async ({ harness }) => {
  await harness.useScenario("weather"); // test/scenarios/weather.json
  const client = new OpenAI(); // the code under test builds its client from the environment

  const reply = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [
      { role: "system", content: "You are a weather assistant." },
      { role: "user", content: "Oslo?" },
    ],
  });

  expect(reply.choices[0].message.content).toBe("It is sunny in Oslo, 21 degrees.");
  await harness.assertCalledWith({ promptContains: "Oslo", model: "gpt-4o" });
});
