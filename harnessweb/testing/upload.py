"""``--harness-upload URL --harness-token T``: at the end of the session, each test that had a harness becomes a run on
that dashboard (source "pytest", named by its node id, its outcome and duration), with its calls as the run's
events, a trace log per ``harness.trace_log(text)`` and per turn (``--harness-trace-dir``, with its turn number, by
user turn when the test calls ``harness.end_turn()``, and outcome) and an artifact per ``harness.artifact(name,
content)``; the session's results go up as JUnit XML on a run of their own. A dashboard that is down or refuses
costs a warning line, never a failed test session."""

from __future__ import annotations

import datetime
import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from harnessweb.engine.redaction import redact_text
from harnessweb.testing.calls import call_out
from harnessweb.testing.harness import Harness
from harnessweb.testing.judging import verdict_out


@dataclass
class TestRecord:
    nodeid: str
    harness: Harness | None = None
    outcome: str = "passed"  # passed | failed | errored | skipped
    duration: float = 0.0
    start: float = 0.0
    stop: float = 0.0
    message: str = ""
    phases: list[str] = field(default_factory=list)


def skip_reason(report: Any) -> str:
    """Why a test was skipped: ``pytest.skip``'s reason (longrepr is ``(path, line, "Skipped: why")``), or an
    expected failure's."""
    if getattr(report, "wasxfail", None) is not None:
        return f"xfail: {report.wasxfail}" if report.wasxfail else "xfail"
    longrepr = report.longrepr
    return str(longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr or "")


def _instant(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()


def junit_xml(records: list[TestRecord]) -> bytes:
    """The session's results as JUnit XML (pytest's own shape: a testsuite of testcases)."""
    suite = ElementTree.Element(
        "testsuite",
        name="pytest",
        tests=str(len(records)),
        failures=str(sum(r.outcome == "failed" for r in records)),
        errors=str(sum(r.outcome == "errored" for r in records)),
        skipped=str(sum(r.outcome == "skipped" for r in records)),
        time=f"{sum(r.duration for r in records):.3f}",
    )
    for record in records:
        path, _, name = record.nodeid.rpartition("::")
        case = ElementTree.SubElement(
            suite, "testcase", classname=path.replace("/", ".").removesuffix(".py"), name=name or path,
            time=f"{record.duration:.3f}",
        )  # fmt: skip
        kind = {"failed": "failure", "errored": "error", "skipped": "skipped"}.get(record.outcome)
        if kind:
            ElementTree.SubElement(case, kind, message=record.message[:500]).text = record.message
    return ElementTree.tostring(suite, encoding="utf-8")


class Uploader:
    def __init__(self, url: str, token: str) -> None:
        import httpx2

        self.url = url.rstrip("/")
        self.client = httpx2.Client(
            base_url=self.url + "/api", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        self.session = uuid.uuid4().hex[:12]
        self.tests: dict[str, TestRecord] = {}
        self.problems: list[str] = []
        self.unreachable = httpx2.TransportError
        self.uploaded = 0

    def record(self, nodeid: str) -> TestRecord:
        return self.tests.setdefault(nodeid, TestRecord(nodeid))

    def report(self, report: Any) -> None:
        """One phase's report (setup, call, teardown): the test's outcome, duration and times."""
        record = self.record(report.nodeid)
        record.phases.append(report.when)
        record.duration += report.duration
        record.start = record.start or report.start
        record.stop = max(record.stop, report.stop)
        if report.failed:
            record.outcome = "failed" if report.when == "call" else "errored"
            record.message = str(report.longrepr)[-4000:]
        elif report.skipped and record.outcome == "passed":
            record.outcome = "skipped"
            record.message = skip_reason(report)

    def _post(self, path: str, **kw: Any) -> Any:
        response = self.client.post(path, **kw)
        if response.status_code >= 400:
            raise RuntimeError(f"POST {path} answered {response.status_code}: {response.text[:300]}")
        return response.json()

    def upload_tests(self) -> int:
        """Each test with a harness as a run; returns how many went up."""
        done = 0
        for record in self.tests.values():
            if record.harness is None:
                continue
            try:
                self._upload_test(record)
                done += 1
            except Exception as exc:  # a dashboard that is down must not fail the session
                self.problems.append(f"{record.nodeid}: {exc}")
                if isinstance(exc, self.unreachable):  # down: the other tests' uploads would fail alike
                    break
        return done

    def _upload_test(self, record: TestRecord) -> None:
        harness = record.harness
        assert harness is not None
        # The run's status says what became of the test: a skipped test is neither passed nor failed.
        status = {"passed": "passed", "skipped": "skipped", "failed": "failed"}.get(record.outcome, "errored")
        digest = hashlib.sha256(record.nodeid.encode()).hexdigest()[:16]
        run = self._post(
            "/runs",
            json={
                "name": record.nodeid[:200],
                "source": "pytest",
                "status": status,
                "status_reason": redact_text(record.message[:2000]) if status != "passed" else "",
                "external_id": f"pytest-{self.session}-{digest}",
                "started_at": _instant(record.start),
                "finished_at": _instant(record.stop or record.start),
            },
        )
        calls = harness.calls
        if calls:
            self._post(f"/runs/{run['id']}/calls", json={"calls": [call_out(c) for c in calls]})
        logs = [
            {"turn_number": i, "file_path": record.nodeid[:1000], "content": redact_text(text)}  # else refused
            for i, text in enumerate(harness.trace_logs, 1)
        ]
        logs += [log.as_upload() for log in harness.traces.logs] if harness.traces is not None else []  # per turn
        if logs and (refused := [r for r in self._post(f"/runs/{run['id']}/trace-logs", json=logs)["results"]
                                 if not r["accepted"]]):  # fmt: skip
            self.problems.append(f"{record.nodeid}: trace logs refused: {refused}")  # the rest still goes up
        for judged in harness.verdicts:  # harness.judge's, each a verdict of the run (in its review queue)
            self._post(f"/runs/{run['id']}/verdicts", json=verdict_out(judged))
        artifacts = [{"name": name, "content": redact_text(content)} for name, content in harness.artifacts.items()]
        if artifacts:  # a list answers 207: one refused is named, the others kept
            results = self._post(f"/runs/{run['id']}/artifacts", json=artifacts)["results"]
            refused = [(artifacts[r["index"]]["name"], r["errors"]) for r in results if not r["accepted"]]
            if refused:
                raise RuntimeError(f"artifacts refused: {refused}")

    def upload_junit(self, records: list[TestRecord]) -> None:
        try:
            run = self._post(
                "/runs",
                json={"name": f"pytest session {self.session}", "source": "pytest", "status": _session_status(records),
                      "external_id": f"pytest-{self.session}"},
            )  # fmt: skip
            self.client.post(
                f"/runs/{run['id']}/junit",
                params={"filename": "pytest.xml"},
                content=junit_xml(records),
                headers={"Content-Type": "application/xml"},
            ).raise_for_status()
        except Exception as exc:
            self.problems.append(f"JUnit: {exc}")


def _session_status(records: list[TestRecord]) -> str:
    if any(r.outcome == "errored" for r in records):
        return "errored"
    return "failed" if any(r.outcome == "failed" for r in records) else "passed"
