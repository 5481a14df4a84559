import { readFileSync } from "node:fs";
import { request } from "node:https";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

import { startHarness, type Harness } from "harnessweb";

/** A GET over HTTPS trusting only `ca` (node's fetch cannot be given a CA of its own): the status, or the error. */
function get(url: string, token: string, ca?: string): Promise<number | string> {
  return new Promise((resolve) => {
    const options = { headers: { Authorization: `Bearer ${token}` }, ...(ca ? { ca: readFileSync(ca) } : {}) };
    request(url, options, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    })
      .on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)))
      .end();
  });
}

describe("startHarness({ tls: true })", () => {
  let harness: Harness;
  const saved = { url: process.env.HARNESS_URL, token: process.env.HARNESS_TOKEN };
  beforeAll(async () => {
    delete process.env.HARNESS_URL; // a harness of this file's own, not the suite's shared one
    delete process.env.HARNESS_TOKEN;
    harness = await startHarness({ tls: true }); // HARNESS_PYTHON, as the suite's own
  });
  afterAll(async () => {
    await harness?.stop();
    if (saved.url !== undefined) process.env.HARNESS_URL = saved.url;
    if (saved.token !== undefined) process.env.HARNESS_TOKEN = saved.token;
  });

  it("serves HTTPS and passes on the CA that signed its certificate", async () => {
    expect(harness.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(harness.ca).toBeDefined();
    expect(readFileSync(harness.ca!, "utf8")).toContain("-----BEGIN CERTIFICATE-----");
    expect(await get(`${harness.url}/api/scenarios`, harness.token, harness.ca)).toBe(200);
    expect(await get(`${harness.url}/api/scenarios`, harness.token)).toMatch(/CERT|SELF_SIGNED|UNABLE_TO_VERIFY/);
  });

  it("a harness started without tls gives no CA", () => {
    expect(inject("harness").url).toMatch(/^http:\/\//);
    expect(inject("harness").ca).toBeUndefined();
  });
});
