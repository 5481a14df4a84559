/**
 * A harness server for a test suite: `startHarness` starts `harness serve --fresh` (the Python package's one-command
 * server: its own temporary database, a free port, the scenarios and cassettes given, a write token) and waits for
 * the one JSON line it prints; or, when `HARNESS_URL` and `HARNESS_TOKEN` are set, connects to that shared server.
 * `harnessGlobalSetup` is the same as a vitest `globalSetup` that hands the connection to every worker. With `tls`
 * it serves HTTPS and WSS (`harness serve --tls`) and the connection carries `ca`, the local certificate authority's
 * file a client must trust (`NODE_EXTRA_CA_CERTS` for node's own clients, `SSL_CERT_FILE` for Python's).
 */

import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** What a test needs to reach a harness: its base URL and a write token for its REST API. */
export interface Connection {
  url: string;
  token: string;
  /** The CA file that signed the server's certificate, when it serves HTTPS (`tls`). */
  ca?: string;
}

export interface StartOptions {
  /** Scenario files or folders to load (paths, or `file:` URLs such as `new URL("./scenarios", import.meta.url)`). */
  scenarios?: PathLike | PathLike[];
  /** Folders of VCR cassettes to load. */
  cassettes?: PathLike | PathLike[];
  /** The port to listen on; 0 (the default) takes a free one. */
  port?: number;
  /** A Python with the package installed: started as `python -m harnessweb` (else `HARNESS_PYTHON`, else `harness`). */
  python?: string;
  /** A virtualenv with the package installed: its `bin/python`. */
  venv?: string;
  /** How long to wait for the server's line, in milliseconds (default 60 000). */
  timeoutMs?: number;
  /** More environment for the server (`HARNESS_PACING`, `HARNESS_REQUIRE_KEY`, its judge's `HARNESS_JUDGE_*`, ...). */
  env?: Record<string, string>;
  /** Serve HTTPS and WSS (`harness serve --tls`: a certificate from a local CA made on first use, in
   * `HARNESS_TLS_DIR`), as Gemini Live's client needs; the CA's file is the harness's `ca`. */
  tls?: boolean;
}

export type PathLike = string | URL;

/** A harness the suite can use: started here (`stop` ends it and removes its database) or shared (`stop` does nothing). */
export interface Harness extends Connection {
  pid: number | null;
  shared: boolean;
  stop(): Promise<void>;
}

export const SERVER_INSTALL = 'pip install "harnessweb[server]"';
const STDERR_KEPT = 8000;

export class HarnessStartError extends Error {
  override name = "HarnessStartError";
}

/** Start a clean harness (or connect to `HARNESS_URL` / `HARNESS_TOKEN`); resolves once it answers. */
export async function startHarness(options: StartOptions = {}): Promise<Harness> {
  const env = process.env;
  if (env.HARNESS_URL || env.HARNESS_TOKEN) {
    return connectShared(env.HARNESS_URL ?? "", env.HARNESS_TOKEN ?? "");
  }
  const [command, ...prefix] = serverCommand(options);
  const args = [...prefix, "serve", "--fresh", "--port", String(options.port ?? 0)];
  for (const folder of list(options.scenarios)) args.push("--scenarios", filePath(folder));
  for (const folder of list(options.cassettes)) args.push("--cassettes", filePath(folder));
  if (options.tls) args.push("--tls");
  const child = spawn(command, args, {
    env: { ...env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const shown = [command, ...args].join(" ");
  const line = await firstLine(child, shown, options.timeoutMs ?? 60_000);
  let parsed: { url?: unknown; token?: unknown; pid?: unknown; ca?: unknown };
  try {
    parsed = JSON.parse(line);
  } catch {
    child.kill("SIGTERM");
    throw new HarnessStartError(`${shown} printed ${JSON.stringify(line.slice(0, 200))}, not its JSON line {url, token, pid}`);
  }
  if (typeof parsed.url !== "string" || typeof parsed.token !== "string") {
    child.kill("SIGTERM");
    throw new HarnessStartError(`${shown} printed a line without url and token: ${line.slice(0, 200)}`);
  }
  const killOnExit = () => child.kill("SIGTERM");
  process.once("exit", killOnExit); // a suite that dies leaves no server behind
  return {
    url: parsed.url.replace(/\/$/, ""),
    token: parsed.token,
    pid: typeof parsed.pid === "number" ? parsed.pid : (child.pid ?? null),
    ...(typeof parsed.ca === "string" ? { ca: parsed.ca } : {}),
    shared: false,
    stop: async () => {
      process.removeListener("exit", killOnExit);
      await stopChild(child);
    },
  };
}

/** A vitest `globalSetup`: starts the harness, provides `{url, token}` to the workers (`inject("harness")`), and
 * stops it after the run. `export default harnessGlobalSetup({ scenarios: ... })` in the set-up file. */
export function harnessGlobalSetup(options: StartOptions = {}) {
  return async (project: { provide: (key: "harness", value: Connection) => void }): Promise<() => Promise<void>> => {
    const harness = await startHarness(options);
    const { url, token, ca } = harness;
    project.provide("harness", ca === undefined ? { url, token } : { url, token, ca });
    return () => harness.stop();
  };
}

function serverCommand(options: StartOptions): string[] {
  if (options.python) return [options.python, "-m", "harnessweb"];
  if (options.venv) return [path.join(options.venv, "bin", "python"), "-m", "harnessweb"];
  if (process.env.HARNESS_PYTHON) return [process.env.HARNESS_PYTHON, "-m", "harnessweb"];
  return ["harness"];
}

function list(value: PathLike | PathLike[] | undefined): PathLike[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

function filePath(value: PathLike): string {
  return value instanceof URL || value.startsWith("file:") ? fileURLToPath(value) : path.resolve(value);
}

function firstLine(child: ChildProcess, shown: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    let failed = false;
    const fail = (why: string) => {
      if (failed) return;
      failed = true;
      clearTimeout(timer);
      child.kill("SIGTERM");
      const tail = err.trim() ? `\n--- its stderr ---\n${err.trim()}` : "";
      reject(
        new HarnessStartError(
          `${why}\nThe harness server comes with the Python package's server extra: ${SERVER_INSTALL} ` +
            "(then `harness` is on PATH), or point HARNESS_PYTHON (or the python / venv option) at a Python that " +
            `has it; or set HARNESS_URL and HARNESS_TOKEN to use a running one.${tail}`,
        ),
      );
    };
    const timer = setTimeout(() => fail(`${shown} did not print its JSON line within ${timeoutMs} ms.`), timeoutMs);
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      err = (err + chunk).slice(-STDERR_KEPT);
    });
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const end = out.indexOf("\n");
      if (end >= 0) {
        clearTimeout(timer);
        child.stdout?.removeAllListeners("data");
        child.stdout?.resume(); // nothing more is read from stdout: keep it flowing
        resolve(out.slice(0, end).trim());
      }
    });
    child.once("error", (error: NodeJS.ErrnoException) => {
      const program = shown.split(" ")[0];
      const where = program === "harness" ? "`harness` was not found on PATH" : `${program} was not found`;
      const why = error.code === "ENOENT" ? where : String(error);
      fail(`Could not start the harness server (${why}).`);
    });
    child.once("exit", (code, signal) => {
      if (out.includes("\n")) return;
      const why = `${shown} exited (${signal ?? `code ${code}`}) before it served.`;
      // `exit` can come before the last of stderr is read, and stderr says why: read it to its end first (a process
      // the server started may hold the pipe open; it gets a second).
      const stderr = child.stderr;
      if (!stderr || stderr.closed) return fail(why);
      const held = setTimeout(() => fail(why), 1000);
      stderr.once("close", () => {
        clearTimeout(held);
        fail(why);
      });
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const hard = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.once("exit", () => {
      clearTimeout(hard);
      resolve();
    });
    child.kill("SIGTERM"); // the server writes what it has queued and removes its temporary database
  });
}

async function connectShared(url: string, token: string): Promise<Harness> {
  const missing = [!url && "HARNESS_URL", !token && "HARNESS_TOKEN"].filter(Boolean);
  if (missing.length) {
    throw new HarnessStartError(
      `${missing.join(" and ")} is not set: a shared harness needs both (its URL and a write token from ` +
        "`manage.py create_api_token`); unset both to start a harness of the suite's own.",
    );
  }
  const base = url.replace(/\/$/, "");
  let status: number;
  try {
    status = (await fetch(`${base}/api/scenarios`, { headers: { Authorization: `Bearer ${token}` } })).status;
  } catch (error) {
    throw new HarnessStartError(`The harness at HARNESS_URL=${base} did not answer: ${String(error)}`);
  }
  if (status === 401 || status === 403) {
    throw new HarnessStartError(`The harness at HARNESS_URL=${base} refused HARNESS_TOKEN (${status})`);
  }
  if (status !== 200) {
    throw new HarnessStartError(`The harness at HARNESS_URL=${base} answered ${status} for /api/scenarios`);
  }
  return { url: base, token, pid: null, shared: true, stop: async () => {} };
}
