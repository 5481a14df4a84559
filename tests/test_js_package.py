"""The npm package for TypeScript teams (js/): `npm test --prefix js` builds it with its types (tsc) and runs its
vitest proof (js/test/: a global set-up that starts `harness serve --fresh` through this virtualenv's Python, the
node `openai` and `@anthropic-ai/sdk` clients built from the environment alone, setResponse / setError / scenarios,
the calls read back, per-test runs under parallel workers; the AI SDK test provider under AI SDK 5's, 6's and 7's
generateText and streamText; seed 001's flow: trace logs per turn, artifacts, the judge over REST, skipped without a
key; seed 000's scenario module exported by `npx harnessweb export-scenarios`, checked by `harness check`, played).
vitest's JSON report says how many tests passed.

Without `node` on the machine the node test is not collected (as tests/test_clients_node.py); the README's "From
TypeScript" page is checked against the proof's own files either way."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JS = ROOT / "js"
NODE = shutil.which("node")
NPM = shutil.which("npm")
# Every test of js/test/*.test.ts: a test added there is counted here too.
EXPECTED_TESTS = {
    "ai-sdk-v5.test.ts": 8,
    "ai-sdk-v6.test.ts": 5,
    "ai-sdk-v7.test.ts": 9,
    "anthropic.test.ts": 6,
    "chaos.test.ts": 3,
    "export-scenarios.test.ts": 4,
    "isolation-a.test.ts": 1,
    "isolation-b.test.ts": 1,
    "mcp.test.ts": 2,
    "openai.test.ts": 9,
    "research-agent.test.ts": 1,
    "seed-001.test.ts": 2,
    "start.test.ts": 5,
    "tls.test.ts": 2,
    "weather.test.ts": 1,
}
# The modules tsc builds to JavaScript and declarations.
BUILT_MODULES = (
    "index", "server", "run", "calls", "vitest", "provider", "provider-spec", "judge", "tracelogs", "scenarios", "cli"
)  # fmt: skip
# The README's "From TypeScript" code blocks are these files, whole.
README_FILES = [
    "vitest.config.ts",
    "global-setup.ts",
    "scenarios/weather.json",
    "weather.test.ts",
    "scenarios/grocery-list.json",
    "seed-001.test.ts",
    "scenarios/test-llm-scenarios.ts",
    "scenarios/seed-000.json",
    "research-agent.test.ts",
]


def test_the_readme_page_shows_the_files_the_proof_runs() -> None:
    section = (ROOT / "docs" / "typescript.md").read_text()
    blocks = re.findall(r"```(?:ts|json)\n(.*?)```", section, re.S)
    assert blocks == [(JS / "test" / name).read_text() for name in README_FILES]


def npm_ci_if_needed() -> None:
    installed = JS / "node_modules" / ".package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= (JS / "package-lock.json").stat().st_mtime:
        return
    done = subprocess.run(
        [NPM or "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"npm ci in js/ failed:\n{done.stderr}"


if NODE is None or NPM is None:
    warnings.warn(
        "node is not installed: the npm package's tests (tests/test_js_package.py) are not collected", stacklevel=1
    )
else:

    def test_the_package_builds_with_its_types_and_its_vitest_suite_passes(tmp_path: Path) -> None:
        npm_ci_if_needed()
        report = tmp_path / "vitest.json"
        # A suite of its own, and seed 001's judge skipping: a judge key in the shell would call a paid model.
        env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_URL", "HARNESS_TOKEN")}
        env = {k: v for k, v in env.items() if not k.startswith("HARNESS_JUDGE_")}
        env["HARNESS_PYTHON"] = sys.executable  # the global set-up starts `python -m harnessweb serve --fresh`
        done = subprocess.run(
            [NPM or "npm", "test", "--", "--reporter=json", f"--outputFile={report}"],
            cwd=JS,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert report.exists(), f"npm test wrote no report:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        result = json.loads(report.read_text())
        failed = [
            f"{Path(f['name']).name} > {t['fullName']}: {' '.join(t['failureMessages'])[:2000]}"
            for f in result["testResults"]
            for t in f["assertionResults"]
            if t["status"] != "passed"
        ]
        assert not failed, "\n".join(failed)
        assert done.returncode == 0, done.stderr[-4000:]
        counts = {Path(f["name"]).name: len(f["assertionResults"]) for f in result["testResults"]}
        assert counts == EXPECTED_TESTS
        assert result["numPassedTests"] == sum(EXPECTED_TESTS.values()) == result["numTotalTests"]
        for module in BUILT_MODULES:
            assert (JS / "dist" / f"{module}.js").is_file() and (JS / "dist" / f"{module}.d.ts").is_file()
