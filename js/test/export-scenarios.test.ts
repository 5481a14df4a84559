import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { generateText, jsonSchema, stepCountIs, tool } from "ai-v5";
import { describe, expect } from "vitest";

import { createHarnessProvider } from "harnessweb";
import { test } from "harnessweb/vitest";

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
/** `npx harnessweb ARGS` from this folder (the package's own bin, as in a project that installed it): its exit
 * status, stdout and stderr. */
async function harnessweb(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("npx", ["--no-install", "harnessweb", ...args], { cwd: here });
    return { code: 0, stdout, stderr };
  } catch (failed) {
    const { code, stdout, stderr } = failed as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

/** `harness check` with the server's Python (HARNESS_PYTHON), else `harness` from PATH. */
async function harnessCheck(folder: string): Promise<{ code: number; out: string }> {
  const python = process.env.HARNESS_PYTHON;
  const [command, ...prefix] = python ? [python, "-m", "harnessweb"] : ["harness"];
  try {
    const { stdout, stderr } = await run(command, [...prefix, "check", folder]);
    return { code: 0, out: stdout + stderr };
  } catch (failed) {
    const { code, stdout, stderr } = failed as { code: number; stdout: string; stderr: string };
    return { code, out: stdout + stderr };
  }
}

const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), "scenarios-"));

describe("npx harnessweb export-scenarios", () => {
  test("writes seed 000's test-llm-scenarios.ts as JSON that harness check accepts and the harness plays", async ({ harness }) => {
    const out = scratch();

    const exported = await harnessweb("export-scenarios", "scenarios/test-llm-scenarios.ts", out);

    expect(exported).toMatchObject({ code: 0, stderr: `2 scenarios exported from scenarios/test-llm-scenarios.ts to ${out}\n` });
    expect(fs.readdirSync(out).sort()).toEqual(["ts-module-lookup.json", "ts-module-retry.json"]);
    expect(fs.readdirSync(path.join(here, "scenarios")).filter((name) => name.endsWith(".mjs"))).toEqual([]); // cleaned up
    const checked = await harnessCheck(out);
    expect(checked).toEqual({ code: 0, out: "harness check: 2 scenarios and 0 cassettes in 2 files: no errors\n" });

    const scenario = JSON.parse(fs.readFileSync(path.join(out, "ts-module-lookup.json"), "utf8"));
    await harness.useScenario(scenario); // stored on the server, then played
    const search = tool({
      inputSchema: jsonSchema<{ query: string }>({ type: "object", properties: { query: { type: "string" } } }),
      execute: async () => ({ weather: "rain", degrees: 12 }),
    });
    const result = await generateText({
      model: createHarnessProvider({ run: harness })("test-llm"),
      system: "You are a research agent.",
      prompt: "ts-module-lookup",
      tools: { search, agent__final_report: tool({ inputSchema: jsonSchema({ type: "object" }) }) },
      stopWhen: stepCountIs(5),
    });
    expect(result.toolCalls[0].input).toMatchObject({ report_content: "# Bergen\n\nRain, 12 degrees." });
    expect((await harness.calls()).map((call) => call.answeredBy)).toEqual(["scenario", "scenario"]);
  });

  test("a module that exports no scenarios: exit 1 saying what to export", async () => {
    const folder = scratch();
    fs.writeFileSync(path.join(folder, "helpers.mjs"), "export const retries = 3;\n");

    const exported = await harnessweb("export-scenarios", path.join(folder, "helpers.mjs"), path.join(folder, "out"));

    expect(exported.code).toBe(1);
    expect(exported.stderr).toBe(
      `harnessweb export-scenarios: ${path.join(folder, "helpers.mjs")}: the module exports no scenarios: export ` +
        "listScenarioIds() and getScenario(id) (seed 000's registry), or the scenarios as `export const scenarios` " +
        "(a list, or an object by id) or as the default export\n",
    );
    expect(fs.existsSync(path.join(folder, "out"))).toBe(false);
  });

  test("a scenario without an id: exit 1 naming it, nothing written", async () => {
    const folder = scratch();
    const module = path.join(folder, "scenarios.ts");
    fs.writeFileSync(
      module,
      'const turns: { turn: number }[] = [];\nexport const scenarios = [{ id: "one", turns }, { description: "two", turns }];\n',
    );
    fs.symlinkSync(path.join(here, "..", "node_modules"), path.join(folder, "node_modules")); // the team's typescript

    const exported = await harnessweb("export-scenarios", module, path.join(folder, "out"));

    expect(exported).toMatchObject({ code: 1, stdout: "" });
    expect(exported.stderr).toBe(`harnessweb export-scenarios: ${module}: scenarios[1] has no id (a non-empty string; it has none)\n`);
    expect(fs.existsSync(path.join(folder, "out"))).toBe(false);
  });

  test("a .ts module where typescript is not installed: exit 1 saying to install it", async () => {
    const folder = scratch();
    fs.writeFileSync(path.join(folder, "scenarios.ts"), "export const scenarios = [];\n");

    const exported = await harnessweb("export-scenarios", path.join(folder, "scenarios.ts"), path.join(folder, "out"));

    expect(exported.code).toBe(1);
    expect(exported.stderr).toContain("typescript package, which is not installed where the module is: npm install --save-dev typescript");
  });
});
