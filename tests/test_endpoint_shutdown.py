"""A server that is told to stop (SIGTERM, as a process manager or Ctrl-C does) writes every event still queued
before it exits, under daphne and uvicorn alike; what a client had acknowledged was written before that already."""

from __future__ import annotations

import signal
import time
import uuid

import httpx2
import pytest

from runs_app.models import RunEvent
from tests.conftest import start_server


@pytest.mark.parametrize("server", ["daphne", "uvicorn"])
def test_it_writes_what_is_queued_when_told_to_stop(server: str, tmp_path, transactional_db) -> None:
    # Batches gathered for ten minutes: nothing is written unless a response waits for it, or the server stops.
    live = start_server(tmp_path, {"HARNESS_RECORDER_FLUSH_MS": "600000", "HARNESS_PACING": "on"}, server)
    run = uuid.uuid4()
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a long paced answer"}]}
    headers = {"authorization": "Bearer k", "x-harness-run": str(run)}
    try:
        with (
            httpx2.Client(timeout=10) as client,
            client.stream("POST", f"{live.url}/v1/chat/completions", json=body, headers=headers) as response,
        ):
            next(response.iter_bytes())  # the first chunk, then the client hangs up mid-stream
        time.sleep(0.3)  # the server's next paced chunk finds the client gone
        assert not RunEvent.objects.filter(run_id=run).exists()  # still queued
        live.process.send_signal(signal.SIGTERM)
        assert live.process.wait(15) is not None
    finally:
        if live.process.poll() is None:
            live.process.kill()
    kinds = list(RunEvent.objects.filter(run_id=run).order_by("seq").values_list("kind", flat=True))
    assert kinds[:2] == ["request", "match"] and "client_disconnected" in kinds, (kinds, live.output()[-2000:])


@pytest.mark.parametrize("server", ["daphne", "uvicorn"])
def test_it_loses_nothing_acknowledged_when_killed(server: str, tmp_path, transactional_db) -> None:
    """SIGKILL leaves no time to write anything: every response a client had received whole was written before its
    last byte went out."""
    live = start_server(tmp_path, {"HARNESS_RECORDER_FLUSH_MS": "600000", "HARNESS_PACING": "off"}, server)
    run = uuid.uuid4()
    headers = {"authorization": "Bearer k", "x-harness-run": str(run)}
    try:
        with httpx2.Client(timeout=10) as client:
            for n in range(10):
                body = {"model": "m", "stream": n % 2 == 0, "messages": [{"role": "user", "content": f"q{n}"}]}
                assert client.post(f"{live.url}/v1/chat/completions", json=body, headers=headers).status_code == 200
        live.process.send_signal(signal.SIGKILL)
        live.process.wait(15)
    finally:
        if live.process.poll() is None:
            live.process.kill()
    responses = RunEvent.objects.filter(run_id=run, kind="response").count()
    assert responses == 10
