import { harnessGlobalSetup } from "harnessweb";

// Starts `harness serve --fresh` with these scenarios (or uses HARNESS_URL / HARNESS_TOKEN), stops it at the end.
export default harnessGlobalSetup({
  scenarios: new URL("./scenarios", import.meta.url),
  // Seed 001's judge, Sonnet: it judges with HARNESS_JUDGE_API_KEY from the environment, and skips without one.
  env: { HARNESS_JUDGE_PROTOCOL: "anthropic", HARNESS_JUDGE_BASE_URL: "https://api.anthropic.com", HARNESS_JUDGE_MODEL: "claude-sonnet-4-5" },
});
