import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";

import { HarnessStartError, startHarness } from "harnessweb";

describe("startHarness", () => {
  const saved = { url: process.env.HARNESS_URL, token: process.env.HARNESS_TOKEN };
  beforeEach(() => {
    delete process.env.HARNESS_URL;
    delete process.env.HARNESS_TOKEN;
  });
  afterEach(() => {
    for (const [name, value] of [["HARNESS_URL", saved.url], ["HARNESS_TOKEN", saved.token]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it("says what to install when there is no server to start", async () => {
    const started = startHarness({ python: "/nonexistent/bin/python" });

    await expect(started).rejects.toBeInstanceOf(HarnessStartError);
    await expect(started).rejects.toThrow(/\/nonexistent\/bin\/python was not found[\s\S]*pip install "harnessweb\[server\]"/);
  });

  it("shows the server's stderr when it stops before serving", async () => {
    // node is no Python: it refuses `-m harnessweb` on stderr and exits.
    const started = startHarness({ python: process.execPath, timeoutMs: 20_000 });

    await expect(started).rejects.toThrow(/exited \(code \d+\) before it served[\s\S]*--- its stderr ---\n.*bad option: -m/);
  });

  it("reads the stderr to its end when the server exits before it is written", async () => {
    // A process the "server" started writes the reason after the server itself has exited (as a slow pipe would).
    const folder = mkdtempSync(path.join(tmpdir(), "harness-start-"));
    const python = path.join(folder, "python");
    writeFileSync(python, '#!/bin/sh\n(sleep 0.3; echo "no module named harnessweb" >&2) &\nexit 3\n');
    chmodSync(python, 0o755);

    try {
      await expect(startHarness({ python })).rejects.toThrow(
        /exited \(code 3\) before it served[\s\S]*--- its stderr ---\nno module named harnessweb$/,
      );
    } finally {
      rmSync(folder, { recursive: true });
    }
  });

  it("connects to HARNESS_URL with HARNESS_TOKEN instead of starting one", async () => {
    const { url, token } = inject("harness");
    process.env.HARNESS_URL = `${url}/`;
    process.env.HARNESS_TOKEN = token;

    const harness = await startHarness({ python: "/nonexistent/bin/python" }); // not started: shared

    expect(harness).toMatchObject({ url, token, shared: true, pid: null });
    await harness.stop(); // a shared server is left running
    expect((await fetch(`${url}/api/scenarios`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
  });

  it("refuses a shared server's wrong token, and one variable without the other", async () => {
    process.env.HARNESS_URL = inject("harness").url;
    process.env.HARNESS_TOKEN = "not-a-token";
    await expect(startHarness()).rejects.toThrow("refused HARNESS_TOKEN (401)");

    delete process.env.HARNESS_TOKEN;
    await expect(startHarness()).rejects.toThrow(/^HARNESS_TOKEN is not set: a shared harness needs both/);
  });
});
