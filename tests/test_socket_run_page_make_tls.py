"""`make run TLS=1`: the server `make run` starts, serving HTTPS and WSS with the certificate of the local CA that
`harness serve --tls` makes, the CA's file printed for the clients to trust. The recipe's serving step is run as
make writes it (``make -n``), so the test follows the Makefile; the examples' migration before it is left out."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, wait_for

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def status(url: str, context: ssl.SSLContext) -> int | str:
    try:
        with urllib.request.urlopen(url, context=context, timeout=3) as response:
            return response.status
    except urllib.error.URLError as exc:
        return type(exc.reason).__name__


def test_make_run_tls_serves_https_with_the_printed_ca(tmp_path: Path) -> None:
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HARNESS_TLS_DIR": str(tmp_path / "tls"), "SQLITE_PATH": str(tmp_path / "db")}
    planned = subprocess.run(
        ["make", "-n", "run", "TLS=1", f"PORT={port}"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    serving = planned[planned.index("files=") :]  # the recipe's TLS step: the certificate, then the server
    server = subprocess.Popen(
        ["sh", "-c", serving], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        printed = server.stdout.readline() if server.stdout else ""
        ca = tmp_path / "tls" / "ca.pem"
        assert printed.strip() == f"TLS: the CA to trust is {ca} (SSL_CERT_FILE={ca})"
        url = f"https://127.0.0.1:{port}/login/"
        trusted = ssl.create_default_context(cafile=str(ca))
        assert wait_for(lambda: status(url, trusted) == 200, timeout=30, message="the https server")
        assert status(url, ssl.create_default_context()) == "SSLCertVerificationError"
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the shell and the server it started
        server.wait(10)
