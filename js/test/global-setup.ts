import { harnessGlobalSetup } from "harnessweb";

// Starts `harness serve --fresh` with these scenarios (or uses HARNESS_URL / HARNESS_TOKEN), stops it at the end.
export default harnessGlobalSetup({ scenarios: new URL("./scenarios", import.meta.url) });
