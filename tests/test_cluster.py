"""Several workers behind one address, on PostgreSQL and Redis (``make serve-cluster``): real uvicorn worker processes
against the test database and the local Redis. Run by ``make test``'s PostgreSQL pass (marker ``cluster``)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import socket
import threading
import time
import uuid
from io import StringIO

import httpx2
import pytest
from django.core.management import CommandError, call_command

from runs_app.models import RunEvent
from tests.conftest import free_port, make_scenario, running_server, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.django_db(transaction=True)]
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture
def workers(tmp_path):
    """Two single-worker servers (as two hosts would run them) and one of two workers on one port."""
    env = {"REDIS_URL": REDIS_URL, "HARNESS_PACING": "off"}
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(running_server(tmp_path, env, "uvicorn")),
            stack.enter_context(running_server(tmp_path, env, "uvicorn")),
            stack.enter_context(running_server(tmp_path, env, "uvicorn", ["--workers", "2"])),
        ]


def chat(url: str, content: str | list[dict], headers: dict[str, str], **body) -> httpx2.Response:
    messages = [{"role": "user", "content": content}] if isinstance(content, str) else content
    return httpx2.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": messages, **body},
                       headers=headers, timeout=20)  # fmt: skip


def test_it_refuses_to_start_without_its_database_or_its_redis(monkeypatch) -> None:
    monkeypatch.setenv("REDIS_URL", REDIS_URL)
    out = StringIO()
    call_command("check_cluster", stdout=out)
    assert out.getvalue().startswith("Cluster ready: PostgreSQL ")
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(CommandError, match=r"REDIS_URL: Redis does not answer at redis://127\.0\.0\.1:\d+/0"):
        call_command("check_cluster")
    monkeypatch.delenv("REDIS_URL")
    with pytest.raises(CommandError, match="REDIS_URL is not set"):
        call_command("check_cluster")
    monkeypatch.delenv("DATABASE_URL")
    with pytest.raises(CommandError, match="DATABASE_URL is not set"):
        call_command("check_cluster")


def test_it_injects_exactly_n_failures_across_workers_and_numbers_every_event_once(workers) -> None:
    pair = workers[2]
    make_scenario("flaky-shared", [{"turn": 1, "failures_before_success": 7, "failure_status": "server_error",
                                    "response": {"kind": "text", "assistant_text": "Fine."}}])  # fmt: skip
    run = str(uuid.uuid4())
    headers = {"authorization": "Bearer k", "x-harness-run": run}
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda _: chat(pair.url, "flaky-shared", headers).status_code, range(50)))
    assert sorted(statuses) == [200] * 43 + [500] * 7
    seqs = list(RunEvent.objects.filter(run_id=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))  # both workers appended to one run: no gap, no duplicate
    assert RunEvent.objects.filter(run_id=run, kind="response").count() == 50


def test_it_joins_turns_served_by_two_workers_into_one_run(workers) -> None:
    a, b = workers[0], workers[1]
    make_scenario("two-hosts", [{"turn": 1, "response": {"kind": "text", "assistant_text": "First."}},
                                {"turn": 2, "response": {"kind": "text", "assistant_text": "Second."}}])  # fmt: skip
    headers = {"authorization": f"Bearer {uuid.uuid4().hex}"}
    first = chat(a.url, "two-hosts", headers)
    history = [{"role": "user", "content": "two-hosts"}, {"role": "assistant", "content": "First."},
               {"role": "user", "content": "and then?"}]  # fmt: skip
    second = chat(b.url, history, headers)
    assert second.json()["choices"][0]["message"]["content"] == "Second."
    assert first.headers["x-harness-run"] == second.headers["x-harness-run"]
    kinds = RunEvent.objects.filter(run_id=first.headers["x-harness-run"]).order_by("seq")
    assert [(e.seq, e.turn) for e in kinds if e.kind == "response"] == [(4, 1), (8, 2)]


def test_it_reaches_every_worker_with_a_scenario_change_at_once(workers) -> None:
    a, b = workers[0], workers[1]
    headers = {"authorization": "Bearer k"}
    before = chat(b.url, "late-scenario", headers).json()["choices"][0]["message"]["content"]
    assert before.endswith("late-scenario")  # the lorem: no such scenario yet
    make_scenario("late-scenario", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Now I exist."}}])
    after = chat(b.url, "late-scenario", headers).json()["choices"][0]["message"]["content"]
    assert after == "Now I exist."
    assert chat(a.url, "late-scenario", headers).json()["choices"][0]["message"]["content"] == "Now I exist."


def test_it_shows_a_watcher_on_one_worker_what_another_worker_serves(workers) -> None:
    from django.test import Client
    from websockets.sync.client import connect

    from tests.conftest import make_user

    a, b = workers[0], workers[1]
    client = Client()
    client.force_login(make_user("watcher"))
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    run = str(uuid.uuid4())
    headers = {"authorization": "Bearer k", "x-harness-run": run}
    assert chat(b.url, "first question", headers).status_code == 200  # the run exists, served by worker B
    socket_url = a.url.replace("http://", "ws://") + f"/ws/runs/{run}/"
    with connect(socket_url, additional_headers={"Origin": a.url, "Cookie": cookie}, open_timeout=10) as socket:
        history = [{"role": "user", "content": "first question"}, {"role": "assistant", "content": "x"},
                   {"role": "user", "content": "a question worker B answers while A watches"}]  # fmt: skip
        assert chat(b.url, history, headers).status_code == 200
        received = ""
        while "a question worker B answers while A watches" not in received:  # the request's event, on A's page
            received += socket.recv(timeout=10)
    assert 'id="turn-2"' in received


def test_it_loses_nothing_acknowledged_when_one_worker_is_killed_mid_load(workers) -> None:
    a, b = workers[0], workers[1]

    def one(i: int) -> str | None:
        run = str(uuid.uuid4())
        try:
            answer = chat((a, b)[i % 2].url, f"question {i}", {"authorization": "Bearer k", "x-harness-run": run},
                          stream=True)  # fmt: skip
        except httpx2.HTTPError:
            return None  # worker A is gone
        return run if answer.status_code == 200 and answer.content.endswith(b"data: [DONE]\n\n") else None

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(one, i) for i in range(300)]
        time.sleep(0.5)
        a.process.kill()
        acknowledged = [run for run in (f.result() for f in futures) if run]
    assert 150 <= len(acknowledged) < 300  # B served its half and more; A's later requests failed
    recorded = set(RunEvent.objects.filter(kind="response", run_id__in=acknowledged).values_list("run_id", flat=True))
    assert recorded == {uuid.UUID(run) for run in acknowledged}


class Outage:
    """A TCP proxy in front of PostgreSQL that can be cut: connections dropped and new ones refused, for a while."""

    def __init__(self, target_port: int) -> None:
        self.port, self.target = free_port(), target_port
        self.open = threading.Event()
        self.links: list[socket.socket] = []
        self.open.set()
        threading.Thread(target=self._serve, daemon=True).start()
        wait_for(lambda: hasattr(self, "listener"), message="the proxy listening")

    def _serve(self) -> None:
        while True:
            self.open.wait()
            self.listener = socket.create_server(("127.0.0.1", self.port), reuse_port=True)
            with self.listener, contextlib.suppress(OSError):  # cut() closes the listener: accept raises
                while True:
                    client, _ = self.listener.accept()
                    upstream = socket.create_connection(("127.0.0.1", self.target))
                    self.links += [client, upstream]
                    for src, dst in ((client, upstream), (upstream, client)):
                        threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.open.clear()
        with contextlib.suppress(OSError):  # wakes the blocked accept (a close alone would not, on Linux)
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()  # new connections refused at once
        for link in self.links:
            with contextlib.suppress(OSError):
                link.shutdown(socket.SHUT_RDWR)
        self.links = []

    def restore(self) -> None:
        self.open.set()


def test_it_keeps_answering_while_postgresql_is_unreachable_and_records_when_it_is_back(tmp_path) -> None:
    from django.db import connection

    db = connection.settings_dict
    outage = Outage(int(db.get("PORT") or 5432))
    url = f"postgres://{db.get('USER') or 'postgres'}@127.0.0.1:{outage.port}/{db['NAME']}"
    env = {"REDIS_URL": REDIS_URL, "HARNESS_PACING": "off", "DATABASE_URL": url}
    with running_server(tmp_path, env, "uvicorn") as server:
        runs = [str(uuid.uuid4()) for _ in range(30)]

        def ask(run: str) -> int:
            return chat(server.url, "during an outage", {"authorization": "Bearer k", "x-harness-run": run}).status_code

        assert [ask(run) for run in runs[:10]] == [200] * 10
        outage.cut()
        started = time.monotonic()
        assert [ask(run) for run in runs[10:20]] == [200] * 10  # answered, without the database
        assert time.monotonic() - started < 8  # one wait for the first failed write at most, then none

        def recorded(which: list[str]) -> int:
            return RunEvent.objects.filter(kind="response", run_id__in=which).count()

        assert recorded(runs[10:20]) == 0, server.output()[-3000:]  # held in the server's buffer meanwhile
        outage.restore()
        assert [ask(run) for run in runs[20:]] == [200] * 10
        wait_for(lambda: recorded(runs) == 30, timeout=20, message="every response recorded after the outage")
