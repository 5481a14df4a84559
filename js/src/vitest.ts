/**
 * vitest: each test gets a run of its own on the suite's harness (`harnessGlobalSetup` in `globalSetup` provides
 * it; else `HARNESS_URL` / `HARNESS_TOKEN`), with the environment its default clients read set for the test and put
 * back after it. Two ways: the `test` fixture (`test("...", async ({ harness }) => ...)`) or `useHarness()` in a
 * file or `describe` (plain `beforeEach` / `afterEach`).
 *
 * `process.env` belongs to the worker: tests of one file that run concurrently (`test.concurrent`) share it, so
 * give such tests' clients `harness.key` and `harness.headers` rather than relying on the environment.
 */

import { afterEach, beforeEach, inject, test as base } from "vitest";

import { HarnessError, HarnessRun } from "./run.js";
import type { Connection } from "./server.js";

declare module "vitest" {
  export interface ProvidedContext {
    harness: Connection;
  }
}

/** The suite's harness: what the global set-up provided, else `HARNESS_URL` and `HARNESS_TOKEN`. */
export function harnessConnection(): Connection {
  let provided: Connection | undefined;
  try {
    provided = inject("harness");
  } catch {
    provided = undefined; // not under vitest's runner
  }
  if (provided?.url && provided.token) return provided;
  const { HARNESS_URL: url, HARNESS_TOKEN: token } = process.env;
  if (url && token) return { url, token };
  throw new HarnessError(
    "No harness for this test: add a globalSetup file to vitest.config.ts that does " +
      "`export default harnessGlobalSetup({ scenarios: ... })` (from \"harnessweb\"), or set HARNESS_URL and HARNESS_TOKEN",
  );
}

/** `test` with a `harness` fixture: a run of the test's own, its environment set for the test. */
export const test = base.extend<{ harness: HarnessRun }>({
  harness: async ({}, use) => {
    const run = new HarnessRun(harnessConnection());
    const restore = run.applyEnv();
    try {
      await use(run);
    } finally {
      restore();
    }
  },
});

export const it = test;

/** A harness for each test of the file (or `describe`) it is called in: the object returned reaches the current
 * test's run. */
export function useHarness(): HarnessRun {
  let current: HarnessRun | null = null;
  let restore: (() => void) | null = null;
  beforeEach(() => {
    current = new HarnessRun(harnessConnection());
    restore = current.applyEnv();
  });
  afterEach(() => {
    restore?.();
    current = null;
    restore = null;
  });
  return new Proxy({} as HarnessRun, {
    get(_, name) {
      if (current === null) {
        throw new HarnessError(`harness.${String(name)} is only there inside a test (useHarness() gives each test a run)`);
      }
      const value = Reflect.get(current, name, current);
      return typeof value === "function" ? value.bind(current) : value;
    },
  });
}
