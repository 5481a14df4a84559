/**
 * Seed 001's judge over REST, as one test asks it: `POST /api/runs/{id}/judge` queues the server's judge on the
 * run's transcript (its calls, artifacts and trace logs) and `GET /api/judge/{id}?wait=` reads the job until its
 * verdict is there (`runs_app/judging/api.py`). The verdict is the run's stored one, in TypeScript's case. A server
 * whose judge has no key (unset, or seed 001's `test-api-key`) skips: the verdict's `state` is "skipped", its
 * `effective` "SKIPPED", with the reason, and it is stored in the run all the same.
 */

/** What `judge` takes: criteria (a list, or one per line), or the name of a criteria set saved on the server. */
export type JudgeCriteria = string | string[] | { criteriaSet: string };

export interface CriterionVerdict {
  position: number;
  criterion: string;
  /** The judge's PASS or FAIL. */
  verdict: string;
  /** A reviewer's override where given, else the judge's. */
  effective: string;
  reason: string;
}

/** A stored verdict on a run, as `GET /api/judge/{id}` answers it. */
export interface Verdict {
  id: number;
  runId: string;
  /** "judged", "skipped" (the judge was not asked: no key) or "judge_error" (the judge failed). */
  state: "judged" | "skipped" | "judge_error";
  /** The judge's PASS or FAIL; "" when it was skipped or failed. */
  overall: string;
  /** PASS, FAIL, ERROR (the judge failed) or SKIPPED. */
  effective: string;
  summary: string;
  criteria: CriterionVerdict[];
  judgeModel: string;
  inputTokens: number | null;
  outputTokens: number | null;
  promptHash: string;
  skippedReason: string;
  judgeError: string;
  /** The verdict in the admin's review queue. */
  reviewUrl: string;
  createdAt: string;
}

/** A judge job as the server answers it (snake_case). */
export interface JudgeJob {
  id: number;
  state: "queued" | "running" | "done";
  url: string;
  page_url: string;
  detail: string;
  verdict: VerdictRecord | null;
}

export interface VerdictRecord {
  id: number;
  run_id: string;
  state: Verdict["state"];
  overall: string;
  effective: string;
  summary: string;
  criteria: CriterionVerdict[];
  judge_model: string;
  input_tokens: number | null;
  output_tokens: number | null;
  prompt_hash: string;
  skipped_reason: string;
  judge_error: string;
  review_url: string;
  created_at: string;
}

/** The body `POST /api/runs/{id}/judge` takes. */
export function judgeBody(criteria: JudgeCriteria): { criteria: string | string[] } | { criteria_set: string } {
  if (typeof criteria === "string" || Array.isArray(criteria)) return { criteria };
  if (typeof criteria?.criteriaSet === "string") return { criteria_set: criteria.criteriaSet };
  throw new TypeError(
    `judge takes criteria (a list of strings, or one per line) or { criteriaSet: name }, not ${JSON.stringify(criteria)}`,
  );
}

/** A verdict as the server answers it, in TypeScript's case. */
export function verdictFromRecord(record: VerdictRecord): Verdict {
  return {
    id: record.id,
    runId: record.run_id,
    state: record.state,
    overall: record.overall,
    effective: record.effective,
    summary: record.summary,
    criteria: record.criteria,
    judgeModel: record.judge_model,
    inputTokens: record.input_tokens,
    outputTokens: record.output_tokens,
    promptHash: record.prompt_hash,
    skippedReason: record.skipped_reason,
    judgeError: record.judge_error,
    reviewUrl: record.review_url,
    createdAt: record.created_at,
  };
}
