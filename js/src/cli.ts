#!/usr/bin/env node
/**
 * The package's command line, `npx harnessweb COMMAND`:
 *
 * - `export-scenarios MODULE OUT_DIR`: the scenarios a TypeScript or JavaScript module exports (seed 000's
 *   `test-llm-scenarios.ts`), one JSON file each in OUT_DIR, for `harness check` and the server (`scenarios.ts`).
 *
 * Exit 0 when done, 1 with the reason on stderr when the module cannot be exported, 2 for a command line it does not
 * take.
 */

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { loadScenarioModule, writeScenarioFiles } from "./scenarios.js";

const USAGE = `usage: harnessweb export-scenarios MODULE OUT_DIR

  export-scenarios  write each scenario a .ts / .js module exports (seed 000's test-llm-scenarios.ts) as a JSON file
                    in OUT_DIR, which \`harness check OUT_DIR\` checks and \`harness serve --scenarios OUT_DIR\` plays`;

/** Run the command line `argv` (without node and the script); the exit status. */
export async function main(argv: string[], out = process.stdout, err = process.stderr): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "-h" || command === "--help" || command === "help") {
    out.write(USAGE + "\n");
    return 0;
  }
  if (command !== "export-scenarios") {
    err.write(`${command === undefined ? "harnessweb: a command is needed" : `harnessweb: unknown command ${JSON.stringify(command)}`}\n${USAGE}\n`);
    return 2;
  }
  if (rest.length !== 2 || rest.some((arg) => arg.startsWith("-"))) {
    err.write(`harnessweb export-scenarios takes a module and a folder, got ${JSON.stringify(rest)}\n${USAGE}\n`);
    return 2;
  }
  const [module, folder] = rest;
  try {
    const written = writeScenarioFiles(await loadScenarioModule(module), folder);
    for (const file of written) out.write(`${path.relative(process.cwd(), file) || file}\n`);
    err.write(`${written.length} scenario${written.length === 1 ? "" : "s"} exported from ${module} to ${folder}\n`);
    return 0;
  } catch (error) {
    // The module's own errors and the file system's (a folder that cannot be written) alike: said, never a stack.
    err.write(`harnessweb export-scenarios: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

// Run as the `harnessweb` bin (npm links it under another name, so compare the real paths).
const invoked = process.argv[1];
if (invoked && import.meta.url === pathToFileURL(fs.realpathSync(invoked)).href) {
  process.exitCode = await main(process.argv.slice(2));
}
