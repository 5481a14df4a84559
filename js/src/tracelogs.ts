/**
 * Seed 001's trace logs per turn: the application under test writes one file per turn into its trace folder
 * (`TRACE_LOG_DIR`, seed 001's `{YYYY-MM-DD}/{HH-mm-ss}_{requestId}.log`; folders at any depth are read), and a test
 * collects the turn's file after each message. `TraceFolder` is that folder as one test sees it: the files there
 * when the test began are never taken, and each collection takes the newest file that appeared since the previous
 * one (the older new ones are passed over and named in `skipped`), as the pytest plugin's `harness.end_turn()` does
 * (`harnessweb/testing/tracelogs.py`).
 *
 * A log's outcome is not read here: the run it is uploaded to reads its `SUCCESS` / `FAILED` footer with the same
 * function as the plugin (`harnessweb/engine/trace_outcome.py`) and answers it, so both read a footer alike.
 */

import fs from "node:fs";
import path from "node:path";

/** Seed 001's TurnLog, plus the outcome its footer says: "success", "failed", or "" when it has none. */
export interface TurnLog {
  turnNumber: number;
  filePath: string;
  content: string;
  outcome: TraceOutcome;
}

export type TraceOutcome = "success" | "failed" | "";

/** Every regular file under `folder`, at any depth, hidden files and folders (a name starting with ".") left out:
 * writers that replace a file atomically write those first. */
export function filesUnder(folder: string): string[] {
  const found: string[] = [];
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(folder, { withFileTypes: true });
  } catch {
    return found; // not there (yet): no files
  }
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue;
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) found.push(...filesUnder(full));
    else if (entry.isFile()) found.push(full);
  }
  return found;
}

/** A trace log's text: UTF-8 with undecodable bytes replaced, NUL characters too (no database stores them): a test
 * never fails on its application's log. */
export function readLog(file: string): string {
  return fs.readFileSync(file).toString("utf8").replaceAll("\x00", "\ufffd");
}

/** One test's view of a trace folder (see the module's docstring). */
export class TraceFolder {
  readonly folder: string;
  /** Files that appeared but were not a turn's log: older than the newest of their collection. */
  readonly skipped: string[] = [];
  private readonly seen: Set<string>;

  constructor(folder: string) {
    this.folder = path.resolve(folder);
    this.seen = new Set(filesUnder(this.folder)); // there before the test: never taken
  }

  /** The newest file that appeared since the previous collection, and its text; null when none appeared. */
  next(): { filePath: string; content: string } | null {
    const fresh = filesUnder(this.folder)
      .filter((file) => !this.seen.has(file))
      .map((file) => ({ file, modified: fs.statSync(file, { bigint: true }).mtimeNs }));
    if (fresh.length === 0) return null;
    // Oldest first, by modification time then path: the newest is the turn's log.
    fresh.sort((a, b) => (a.modified !== b.modified ? (a.modified < b.modified ? -1 : 1) : a.file < b.file ? -1 : 1));
    for (const { file } of fresh) this.seen.add(file);
    const newest = fresh.pop()!.file;
    this.skipped.push(...fresh.map(({ file }) => file));
    return { filePath: newest, content: readLog(newest) };
  }
}
