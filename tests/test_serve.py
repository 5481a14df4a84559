"""``python -m harnessweb.serve`` (``make run``, the plugin's and the tests' daphne): Twisted on uvloop, and a listen
queue deep enough for a thousand clients connecting at once."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

from harnessweb.serve import LISTEN_BACKLOG, with_backlog
from tests.conftest import running_server


def listen_queue(port: int) -> int:
    """The listening socket's backlog as the kernel holds it (``ss``: Send-Q of a socket in LISTEN)."""
    assert shutil.which("ss"), "ss (iproute2) is needed to read the listen queue"
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    [line] = [line for line in out.splitlines() if line.startswith("LISTEN")]
    return int(line.split()[2])


def test_daphne_runs_on_uvloop_and_listens_with_a_deep_queue(tmp_path) -> None:
    with running_server(tmp_path, {"HARNESS_PACING": "off"}) as server:
        port = int(server.url.rsplit(":", 1)[1])
        assert listen_queue(port) == LISTEN_BACKLOG == 2048  # Twisted's own default is 50
        deadline = time.monotonic() + 10
        while "harnessweb.serve: daphne on" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "harnessweb.serve: daphne on uvloop.Loop" in server.output(), server.output()[-2000:]


def test_every_tcp_endpoint_gets_the_backlog_unless_it_names_its_own() -> None:
    assert with_backlog(["tcp:port=8000:interface=127.0.0.1", "unix:/tmp/s", "tcp:port=9:backlog=10"]) == [
        "tcp:port=8000:interface=127.0.0.1:backlog=2048",
        "unix:/tmp/s",
        "tcp:port=9:backlog=10",
    ]


def test_daphne_as_served_formats_no_twisted_access_line_for_a_request() -> None:
    """Twisted's factory formats a combined log line for every request into its own log, which daphne discards;
    the factory daphne builds here formats none (daphne's access log, redacted, is the one kept)."""
    script = """
from harnessweb import serve
serve.adapt_daphne()
from daphne import server
factory = server.HTTPFactory(None)
factory.startFactory()
def formatter(*args):
    raise AssertionError("a Twisted access line was formatted")
factory._logFormatter = formatter
factory.log(object())
print(type(factory).__name__)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "UnloggedHTTPFactory", out.stderr[-2000:]
