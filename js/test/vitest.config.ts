import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    dir: "test",
    globalSetup: ["test/global-setup.ts"], // one clean harness for the whole run
    maxWorkers: 2, // test files run side by side, each test in a run of its own
    testTimeout: 30_000,
    hookTimeout: 90_000,
    chaiConfig: { truncateThreshold: 0 }, // a failure shows the whole message it got, not its first 40 characters
  },
});
