/**
 * The scenario harness from node and TypeScript. `startHarness` starts a clean harness for a suite (or connects to a
 * shared one); `HarnessRun` is one test's run on it. The vitest fixture and `useHarness()` are in `harnessweb/vitest`.
 */

export { harnessGlobalSetup, HarnessStartError, SERVER_INSTALL, startHarness } from "./server.js";
export type { Connection, Harness, PathLike, StartOptions } from "./server.js";
export {
  FAILURE_KINDS,
  fingerprint,
  HarnessError,
  HarnessRun,
  RUN_HEADER,
  RUN_KEY_PREFIX,
  runEnv,
} from "./run.js";
export type { FailureKind, JudgedVerdict, ResponseSpec, RunOptions, ScenarioSpec, StoredArtifact } from "./run.js";
export type { CriterionVerdict, JudgeCriteria, Verdict } from "./judge.js";
export type { TraceOutcome, TurnLog } from "./tracelogs.js";
export { loadScenarioModule, ScenarioModuleError, writeScenarioFiles } from "./scenarios.js";
export type { ScenarioDefinition, ScenarioStepResponse, ScenarioTurn, ToolCallSpec } from "./scenarios.js";
export { AssertionError, assertCalledWith, callFromRecord, differences } from "./calls.js";
export type { Call, CallError, CallMessage, CallRecord, RunCalls, Wanted } from "./calls.js";
export { createHarnessProvider, GENERATE_PATH, HarnessCallError, PROVIDER_NAME, streamParts } from "./provider.js";
export type {
  HarnessCallOptions,
  HarnessContent,
  HarnessLanguageModelV2,
  HarnessLanguageModelV3,
  HarnessLanguageModelV4,
  HarnessModelSettings,
  HarnessProvider,
  HarnessProviderOptions,
  HarnessReasoningLevel,
  HarnessSpecificationVersion,
  HarnessStreamPart,
  HarnessStreamPartV3,
  HarnessStreamPartV4,
} from "./provider-spec.js";
