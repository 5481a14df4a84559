"""Server mode: the same harness API over the real app (started by the plugin, or at ``--harness-url``). The SDK
clients reach the server over the network and name this test's run (``X-Harness-Run``); on the session's own server
the test's run is also the one requests naming no run belong to (``PUT /api/current-run``, cleared by ``leave`` at
the test's end), so a program given only the URL lands in the history; configured answers, failure kinds and the
scenario become the run's script (``PUT /api/runs/{id}/script``); the call history is read back as the server
builds it from the run's recorded events (``GET /api/runs/{id}/calls``), readable the moment a response ends."""

from __future__ import annotations

import datetime
from typing import Any

from harnessweb.engine.configured import Answers
from harnessweb.engine.routes import RUN_HEADER, RUN_KEY_PREFIX
from harnessweb.testing import calls as history
from harnessweb.testing import mcp_local
from harnessweb.testing.activation import VARIABLE
from harnessweb.testing.harness import Harness, HarnessError
from harnessweb.testing.server import Server

# What a test in server mode does to replay a cassette: the server's own (uploaded or loaded), named per request.
IN_SERVER_MODE = (
    "in server mode store the cassette on the server (POST /api/cassettes, manage.py load_cassettes DIR) and name it "
    "with the X-Harness-Cassette header (default_headers= on the client)"
)


class RemoteHarness(Harness):
    """A :class:`Harness` whose clients talk to a real server. See the README, "Use it from pytest"."""

    server: Server

    def attach(self, server: Server) -> RemoteHarness:
        """Serve this test from ``server`` from now on (what it configured so far goes with it)."""
        import httpx2

        self.server = server
        self.base_url = server.url
        self._api = httpx2.Client(
            base_url=server.url + "/api", headers={"Authorization": f"Bearer {server.token}"}, timeout=30
        )
        self._forgotten: set[tuple[str, str]] = set()
        self._artifacts_sent: dict[str, str] = {}
        self._scenario_pushed = ""
        server.serving(self._api, self.run_id)  # the session's own server: requests naming no run are this test's
        if self.traces is not None:  # the calls are served out of sight: turns by their start times
            self.traces.timed = True
        answers = self.answers
        if answers.answers or answers.errors or self._scenario or answers.expect_key or answers.chaos:
            self._push()
        return self

    def use_cassette(self, name: str | None) -> None:
        if name is not None:
            raise HarnessError(f"use_cassette({name!r}) is in-process only; {IN_SERVER_MODE}")

    def mcp_url(self, name: str) -> str:
        """The server's MCP server ``name``: on the session's own server its calls join this test's run (on a shared
        one, give the MCP client the header ``X-Harness-Run``, the test's ``run_id``)."""
        return f"{self.base_url}/mcp/{name}"

    def mcp_problems(self) -> list[str]:
        """What failed the test's run in its MCP servers on the server (and in-process, for URLs taken before)."""
        response = self._api.get(f"/runs/{self.run_id}")
        if response.status_code != 200:  # (404: no request named the run)
            return super().mcp_problems()
        run = response.json()
        scenario = self._catalog.by_id.get(run["scenario_id"])
        return super().mcp_problems() + mcp_local.run_problems(run["events"], scenario.mcp if scenario else None)

    def leave(self) -> None:
        """The test's end (the plugin's teardown): requests naming no run are no longer this test's."""
        self.server.serving(self._api, None)

    # -- clients: over the network, naming the run ---------------------------------------------------------------

    def http_client(self, *, asynchronous: bool = False, library_name: str = "httpx2", **kw: Any) -> Any:
        from harnessweb.testing.transport import library

        lib = library(library_name)
        kw.setdefault("headers", {RUN_HEADER: str(self.run_id)})
        return (lib.AsyncClient if asynchronous else lib.Client)(**kw)

    def _sdk_arguments(self, kw: dict[str, Any], prefix: str, *, asynchronous: bool) -> dict[str, Any]:
        kw.setdefault("api_key", RUN_KEY_PREFIX + str(self.run_id))
        kw.setdefault("base_url", self.base_url + prefix)
        kw["default_headers"] = {RUN_HEADER: str(self.run_id), **kw.get("default_headers", {})}
        return kw

    def genai_client(self, **kw: Any) -> Any:
        from google import genai
        from google.genai import types

        kw.setdefault("api_key", RUN_KEY_PREFIX + str(self.run_id))
        kw.setdefault("http_options", types.HttpOptions(base_url=self.base_url, headers={RUN_HEADER: str(self.run_id)}))
        return genai.Client(**kw)

    def env(self) -> dict[str, str]:
        """Environment for a program this test starts (a CLI, a node script): its default SDK clients reach the
        server and land in this test's run, named by their API key (what a shared server needs; on the session's
        own server a request naming no run is this test's anyway)."""
        key = RUN_KEY_PREFIX + str(self.run_id)
        return {
            VARIABLE: f"{self.base_url}?run={self.run_id}",  # llm models too, where the package is installed
            "OPENAI_BASE_URL": self.base_url + "/v1",
            "OPENAI_API_KEY": key,
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": key,
            "GOOGLE_GEMINI_BASE_URL": self.base_url,
            "GEMINI_API_KEY": key,
        }

    # -- configuring: the run's script ---------------------------------------------------------------------------

    def set_response(self, **kw: Any) -> None:
        super().set_response(**kw)
        self._push()

    def expect_key(self, key: str | None, place: str | None = None) -> str | None:
        fingerprint = super().expect_key(key, place)
        self._push()  # the run's script carries it: the server checks every request of the run
        return fingerprint

    def chaos(self, seed: int = 0, **rates: float) -> None:
        super().chaos(seed, **rates)
        self._push(chaos_from_zero=True)  # the server numbers the run's requests (scripts.take)

    def set_error(self, error: str | BaseException, times: int | str = 1, model: str | None = None) -> None:
        if isinstance(error, BaseException):
            raise HarnessError(
                f"set_error({error!r}): an exception cannot cross the wire to the server; in server mode give a "
                "failure kind (rate_limit, timeout, network_error, invalid_response, model_error)"
            )
        super().set_error(error, times, model)
        self._push()

    def use_scenario(self, scenario: Any) -> Any:
        chosen = super().use_scenario(scenario)
        if not isinstance(scenario, str):  # given whole: the server must hold it too
            body = chosen.model_dump(mode="json", exclude_defaults=True)
            response = self._api.put(f"/scenarios/{chosen.id}", json=body)
            if response.status_code >= 400:
                raise HarnessError(f"use_scenario: the server refused the scenario: {response.text}")
        self._push()
        return chosen

    def artifact(self, name: str, content: str | bytes) -> None:
        super().artifact(name, content)
        self.send_artifacts()

    def send_artifacts(self) -> None:
        """POST the artifacts the test's run does not have yet; before the test's first call the run does not exist
        yet, and they wait for the next artifact or the test's end."""
        for name, content in self.artifacts.items():
            if self._artifacts_sent.get(name) == content:
                continue
            response = self._api.post(f"/runs/{self.run_id}/artifacts", json={"name": name, "content": content})
            if response.status_code == 404:
                return
            self._artifacts_sent[name] = content  # refused, it is not tried again at the test's end
            if response.status_code >= 400:
                refusal = f"({response.status_code}): {response.text[:500]}"
                raise HarnessError(f"the server refused the artifact {name!r} {refusal}")

    def send_verdict(self, judged: Any) -> None:
        """The verdict onto the test's run (its review queue); a test that made no call yet has no run to hold it."""
        from harnessweb.testing.judging import verdict_out

        response = self._api.post(f"/runs/{self.run_id}/verdicts", json=verdict_out(judged))
        if response.status_code >= 400 and response.status_code != 404:
            raise HarnessError(f"the server refused the verdict ({response.status_code}): {response.text[:500]}")

    @property
    def turn_logs(self) -> list[Any]:
        if self.traces is None or self.traces.stopped or self.traces.user_turns:  # user turns need no call times
            return super().turn_logs
        return self.traces.collect([c.timestamp for c in self.calls])  # turns by the calls' start times

    def send_turn_logs(self, logs: list[Any]) -> None:
        """At the test's end, the trace logs onto the test's run (none when it made no call: no run)."""
        response = self._api.post(f"/runs/{self.run_id}/trace-logs", json=[log.as_upload() for log in logs])
        status = response.status_code
        refused = [r for r in response.json()["results"] if not r["accepted"]] if status == 207 else []
        if refused or (status >= 400 and status != 404):
            raise HarnessError(f"the server refused trace logs ({status}): {refused or response.text[:500]}")

    def reset(self) -> None:
        self._forgotten.update(self._key(c) for c in self.calls)
        super().reset()
        self._api.delete(f"/runs/{self.run_id}/script")

    def _push(self, chaos_from_zero: bool = False) -> None:
        current = self._api.get(f"/runs/{self.run_id}/script")
        if current.status_code == 200:  # keep the server's counts: entries are only ever appended
            served = Answers.from_data(current.json())
            if not chaos_from_zero:
                self.answers.chaos_used = served.chaos_used
            for mine, theirs in zip(self.answers.answers, served.answers, strict=False):
                mine.used = max(mine.used, theirs.used)  # seed 002's set() spends a replaced answer here
            for mine, theirs in zip(self.answers.errors, served.errors, strict=False):
                mine.used = theirs.used
        script = {**self.answers.to_data(), "scenario": self._scenario or ""}
        response = self._api.put(f"/runs/{self.run_id}/script", json=script)
        if response.status_code != 200:
            raise HarnessError(f"the server refused this test's script: {response.text}")

    # -- the history: the run's events, then what the llm boundary answered in this process ---------------------

    @staticmethod
    def _key(call: history.Call) -> tuple[str, str]:
        return (call.timestamp, call.path)

    @property
    def calls(self) -> list[history.Call]:
        response = self._api.get(f"/runs/{self.run_id}/calls")
        if response.status_code == 404:  # no request named the run yet
            remote: list[history.Call] = []
        elif response.status_code != 200:
            raise HarnessError(f"could not read this test's calls from the server: {response.text}")
        else:
            remote = [history.Call.from_record(record) for record in response.json()["calls"]]
        merged = [c for c in remote if self._key(c) not in self._forgotten] + self._calls
        return sorted(merged, key=lambda c: datetime.datetime.fromisoformat(c.timestamp))

    def forget(self, calls: list[history.Call]) -> None:
        self._forgotten.update(self._key(c) for c in calls)
        super().forget(calls)

    def strict_problems(self) -> list[str]:
        current = self._api.get(f"/runs/{self.run_id}/script")
        if current.status_code == 200:
            self.answers = Answers.from_data(current.json())
        return super().strict_problems()


def switch(harness: Harness, server: Server) -> str:
    """Put ``harness`` in server mode on ``server`` (what it configured so far goes with it); its URL."""
    if harness.cassette:  # never silently dropped: the server would answer from its engine instead
        raise HarnessError(f"use_cassette({harness.cassette!r}) is in-process only; {IN_SERVER_MODE}")
    if not isinstance(harness, RemoteHarness):
        harness.__class__ = RemoteHarness
        harness.attach(server)  # type: ignore[attr-defined]
    return harness.base_url


def serve(harness: Harness, folder: str | None = None) -> str:
    """Outside pytest: start a server of its own for ``harness`` (stopped when the process exits)."""
    import atexit
    import tempfile
    from pathlib import Path

    from harnessweb.testing.server import start

    server = start(Path(folder or tempfile.mkdtemp(prefix="harness-")), [])
    atexit.register(server.stop)
    return switch(harness, server)
