/**
 * Scenarios kept in TypeScript, as seed 000 keeps them (`test-llm-scenarios.ts`: a module of `ScenarioDefinition`s
 * behind `listScenarioIds()` and `getScenario(id)`), exported as JSON files, one per scenario, that `harness check`
 * and the server's loader read as they are (the scenario schema takes seed 000's camelCase names:
 * `harnessweb/engine/schemas.py`). The module is imported as it is: a `.js` / `.mjs` one directly, a `.ts` / `.mts`
 * one after the team's own `typescript` package (found from the module's folder; no runtime dependency here)
 * transpiles it to a temporary `.mjs` beside it. What the module exports is checked before anything is written: no
 * scenarios, a scenario without an id, two with one id, a value JSON cannot hold are errors naming the scenario and
 * the field. Nothing of the scenario schema is checked here: `harness check` does that, naming the file and line.
 */

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** Seed 000's tool call: the tool's name, its arguments, its call id (`call-<n>` by default). */
export interface ToolCallSpec {
  toolName: string;
  arguments?: Record<string, unknown>;
  callId?: string;
  assistantText?: string;
}

/** What a turn answers (seed 000's `ScenarioStepResponse`); the harness's own fields are taken too. */
export type ScenarioStepResponse =
  | { kind: "tool-call"; toolCalls: ToolCallSpec[]; assistantText?: string; [field: string]: unknown }
  | { kind: "final-report"; reportContent: string; reportFormat?: string; status?: string; [field: string]: unknown }
  | { kind: "text"; assistantText: string; [field: string]: unknown };

/** Seed 000's `ScenarioTurn`. */
export interface ScenarioTurn {
  turn: number;
  response: ScenarioStepResponse;
  expectedTools?: string[];
  allowMissingTools?: boolean;
  expectedTemperature?: number;
  expectedTopP?: number;
  expectedReasoning?: "enabled" | "disabled";
  failuresBeforeSuccess?: number;
  failureThrows?: boolean;
  failureStatus?: string;
  failureMessage?: string;
  failureRetryable?: boolean;
  failureRetryAfterMs?: number;
  failureError?: Record<string, unknown>;
  [field: string]: unknown;
}

/** Seed 000's `ScenarioDefinition`. */
export interface ScenarioDefinition {
  id: string;
  description?: string;
  turns: ScenarioTurn[];
  systemPromptMustInclude?: string[];
  [field: string]: unknown;
}

export class ScenarioModuleError extends Error {
  override name = "ScenarioModuleError";
}

const HOW =
  "export listScenarioIds() and getScenario(id) (seed 000's registry), or the scenarios as `export const scenarios` " +
  "(a list, or an object by id) or as the default export";

/** The scenarios a module exports, in its order, each with where it came from (for error messages). */
export async function loadScenarioModule(file: string): Promise<ScenarioDefinition[]> {
  const resolved = path.resolve(file);
  if (!fs.existsSync(resolved)) throw new ScenarioModuleError(`${file}: no such file`);
  const exported = await importModule(resolved);
  const found = collect(exported);
  if (found === null) throw new ScenarioModuleError(`${file}: the module exports no scenarios: ${HOW}`);
  if (found.length === 0) throw new ScenarioModuleError(`${file}: the module's scenarios are empty`);
  const seen = new Map<string, string>();
  return found.map(([where, scenario]) => {
    if (scenario === null || typeof scenario !== "object" || Array.isArray(scenario)) {
      throw new ScenarioModuleError(`${file}: ${where} is not a scenario object (got ${kindOf(scenario)})`);
    }
    const id = (scenario as { id?: unknown }).id;
    if (typeof id !== "string" || id.trim() === "") {
      const got = id === undefined ? "it has none" : `got ${JSON.stringify(id) ?? kindOf(id)}`;
      throw new ScenarioModuleError(`${file}: ${where} has no id (a non-empty string; ${got})`);
    }
    if (seen.has(id)) throw new ScenarioModuleError(`${file}: ${where} has the id ${JSON.stringify(id)} of ${seen.get(id)}`);
    seen.set(id, where);
    const problem = notJson(scenario, "");
    if (problem) throw new ScenarioModuleError(`${file}: scenario ${JSON.stringify(id)}: ${problem}`);
    return scenario as ScenarioDefinition;
  });
}

/** The file name a scenario is written to: its id, with what a file name cannot hold as "_". */
export function fileNameFor(id: string): string {
  const safe = id.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[._]+/, "");
  return `${safe || "scenario"}.json`;
}

/** Write one JSON file per scenario into `folder` (made if missing); the paths written, in the module's order. */
export function writeScenarioFiles(scenarios: ScenarioDefinition[], folder: string): string[] {
  const names = new Map<string, string>();
  for (const { id } of scenarios) {
    const name = fileNameFor(id);
    const other = names.get(name);
    if (other !== undefined) {
      throw new ScenarioModuleError(
        `the scenarios ${JSON.stringify(other)} and ${JSON.stringify(id)} would both be written to ${name}`,
      );
    }
    names.set(name, id);
  }
  fs.mkdirSync(folder, { recursive: true });
  return scenarios.map((scenario) => {
    const target = path.join(folder, fileNameFor(scenario.id));
    fs.writeFileSync(target, JSON.stringify(scenario, null, 2) + "\n");
    return target;
  });
}

// -- loading the module ------------------------------------------------------------------------------------------

async function importModule(file: string): Promise<Record<string, unknown>> {
  const extension = path.extname(file).toLowerCase();
  if ([".js", ".mjs", ".cjs"].includes(extension)) return importing(file, file);
  if (![".ts", ".mts", ".cts"].includes(extension)) {
    throw new ScenarioModuleError(`${file}: not a scenario module (a .ts, .mts, .js or .mjs file)`);
  }
  const ts = await typescriptFor(file);
  const output = ts.transpileModule(fs.readFileSync(file, "utf8"), {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
  });
  const syntax = (output.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (syntax.length > 0) {
    const shown = syntax.map((d) => {
      const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
      const at = where ? `${file}:${where.line + 1}:${where.character + 1}` : file;
      return `${at}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
    });
    throw new ScenarioModuleError(shown.join("\n"));
  }
  // Beside the module, so that what it imports resolves as it would from the module itself.
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString("hex")}.mjs`);
  fs.writeFileSync(temporary, output.outputText);
  try {
    return await importing(temporary, file);
  } finally {
    fs.rmSync(temporary, { force: true });
  }
}

async function importing(target: string, shown: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(target).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ScenarioModuleError(`${shown}: the module could not be loaded: ${(error as Error)?.message ?? error}`);
  }
}

type TypeScript = typeof import("typescript");

/** The `typescript` package the module's own project has. */
async function typescriptFor(file: string): Promise<TypeScript> {
  let found: string;
  try {
    found = createRequire(path.join(path.dirname(file), "noop.js")).resolve("typescript");
  } catch {
    throw new ScenarioModuleError(
      `${file}: a .ts module is transpiled by your project's own typescript package, which is not installed ` +
        "where the module is: npm install --save-dev typescript (or export the scenarios from a .js / .mjs module)",
    );
  }
  const loaded = (await import(pathToFileURL(found).href)) as TypeScript & { default?: TypeScript };
  return loaded.default ?? loaded;
}

// -- what the module exports -------------------------------------------------------------------------------------

/** The scenarios with where each came from, or null when the module exports none in a shape known here. */
function collect(exported: Record<string, unknown>): [string, unknown][] | null {
  const list = exported.listScenarioIds;
  const get = exported.getScenario;
  if (typeof list === "function" && typeof get === "function") {
    const ids = list();
    if (!Array.isArray(ids)) throw new ScenarioModuleError(`listScenarioIds() returned ${kindOf(ids)}, not a list of ids`);
    return ids.map((id) => [`getScenario(${JSON.stringify(id)})`, withId(get(id), id)]);
  }
  for (const name of ["scenarios", "default"]) {
    const value = exported[name];
    const shown = name === "default" ? "the default export" : "scenarios";
    if (Array.isArray(value)) return value.map((scenario, index) => [`${shown}[${index}]`, scenario]);
    if (value !== null && typeof value === "object") {
      return Object.entries(value).map(([key, scenario]) => [`${shown}[${JSON.stringify(key)}]`, scenario]);
    }
  }
  return null;
}

/** `getScenario(id)`'s answer: a scenario for another id, or none, is said so. */
function withId(scenario: unknown, id: unknown): unknown {
  if (scenario === undefined || scenario === null) {
    throw new ScenarioModuleError(`listScenarioIds() lists ${JSON.stringify(id)}, but getScenario gives ${scenario} for it`);
  }
  const own = (scenario as { id?: unknown }).id;
  if (typeof own === "string" && own !== id) {
    throw new ScenarioModuleError(`getScenario(${JSON.stringify(id)}) gives the scenario ${JSON.stringify(own)}`);
  }
  return scenario;
}

/** Where a value JSON cannot hold as it is lies (`turns[0].response.toolCalls[1].arguments: a function`), or "". */
function notJson(value: unknown, at: string): string {
  const where = at || "the scenario";
  if (value === null || typeof value === "string" || typeof value === "boolean") return "";
  if (typeof value === "number") return Number.isFinite(value) ? "" : `${where}: ${value} is not a JSON number`;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const problem = notJson(value[index], `${at}[${index}]`);
      if (problem) return problem;
    }
    return "";
  }
  if (typeof value === "object") {
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      return `${where}: a ${prototype?.constructor?.name ?? "class instance"}, not a plain object JSON can hold`;
    }
    for (const [key, member] of Object.entries(value)) {
      if (member === undefined) continue; // left out, as JSON.stringify leaves it
      const problem = notJson(member, at ? `${at}.${key}` : key);
      if (problem) return problem;
    }
    return "";
  }
  return `${where}: ${kindOf(value)}, which JSON cannot hold`;
}

function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}
