"""``harness serve``: a clean harness in one command, for any test runner in any language.

In order: the scenario and cassette files checked offline (``engine/filecheck.py``: errors name file and line, nothing
is written); the port taken (``--port 0``: a free one; a taken port is an error saying so); with ``--fresh`` a
temporary SQLite database of its own and the in-memory channel layer, else the database the settings name; then, in a
short child process (``python -m harnessweb.serving``), migrations, the scenarios and cassettes loaded by
``load_scenarios`` and ``load_cassettes`` and a judge token issued (stored hashed, ``runs_app/tokens.py``); then daphne
in this process through ``harnessweb.serve`` (as ``make run``) on the socket already bound, and once the server
answers an authenticated API request, one JSON line on stdout: ``{"url": ..., "token": ..., "pid": ...}``. Everything
else (the commands' output, daphne's log) goes to stderr. With ``--tls`` it serves HTTPS and WSS on that port with a
certificate from a local CA made on first use (trustme, :func:`certificates`), and the line names the CA file (``ca``).

The database is prepared in a child because ``harnessweb.serve`` must choose the event loop before anything imports
daphne's server module, which setting Django up does (daphne is an installed app). This process imports no Django
before daphne starts, so the pid printed is the server's own.

SIGTERM or Ctrl-C stops daphne (Twisted's handlers); the recorder writes what is pending at interpreter exit, and
the fresh database is removed after it.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

from harnessweb import serve as daphne_serve
from harnessweb.engine.filecheck import check_paths

SETTINGS = "harnessweb.settings"
ANSWER_TIMEOUT_S = 60
# A fresh server's settings must not reach a shared database, Redis or catalog stamp the environment names.
SHARED_SETTINGS = ("DATABASE_URL", "REDIS_URL", "HARNESS_CATALOG_STAMP")


class ServeError(Exception):
    """The server cannot start; the message says why (and which file or port)."""


def serve(
    *,
    host: str,
    port: int,
    fresh: bool,
    scenarios: list[str],
    cassettes: list[str],
    token_file: str | None,
    pacing: str | None,
    tls: bool = False,
) -> int:
    """Start the server and serve until stopped; 0 once stopped, 1 (a message on stderr) when it cannot start."""
    announce_to, sys.stdout = sys.stdout, sys.stderr  # stdout holds the JSON line alone
    # Stopped before Twisted takes the signals over: exit (the fresh database is removed at exit), no traceback.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        _check_files(scenarios, cassettes)
        listener = _listen(host, port)
        certs = certificates(host) if tls else None
        if fresh:
            _fresh_database()
        elif not os.environ.get("DATABASE_URL") and not os.environ.get("SQLITE_PATH"):
            # The folder it is started in, as make run's db.sqlite3 in a checkout; never inside site-packages, where
            # the settings' own default would put it on an installed package.
            os.environ["SQLITE_PATH"] = str(Path.cwd() / "db.sqlite3")
        if pacing:
            os.environ["HARNESS_PACING"] = pacing
        os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS  # the harness's own, whatever project this runs beside
        token = _prepare_database(scenarios, cassettes)
        if token_file:
            _write_token(token_file, token)
    except (ServeError, OSError) as exc:
        print(f"harness serve: {exc}", file=sys.stderr)
        return 1
    url = _url(host, listener.getsockname()[1])
    ca = ""
    if certs is not None:  # HTTPS and WSS on the same port (google-genai opens Live over wss:// only)
        ca, server_pem = certs
        url = url.replace("http://", "https://", 1)
        interface, port = listener.getsockname()[:2]
        listener.close()  # released just before daphne binds it, as for an address that is not IPv4
        bind = ["-e", tls_endpoint(port, interface, server_pem)]
    else:
        bind = _bind_arguments(listener)
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    threading.Thread(target=_announce, args=(announce_to, url, token, deadline, ca), daemon=True).start()
    daphne_serve.main([*bind, "harnessweb.asgi:application"])
    return 0


def tls_endpoint(port: int, interface: str, server_pem: str) -> str:
    """daphne's ``ssl:`` endpoint string, each value quoted as Twisted's parser reads it: a ``:`` (a folder named
    ``a:b``, an IPv6 interface) or a ``\\`` in a value would otherwise split or escape it."""
    from twisted.internet.endpoints import quoteStringArgument

    values = {"port": str(port), "interface": interface, "privateKey": server_pem, "certKey": server_pem}
    return "ssl:" + ":".join(f"{name}={quoteStringArgument(value)}" for name, value in values.items())


def certificates(host: str) -> tuple[str, str]:
    """A local certificate authority and a certificate it issued for ``host`` (and localhost), generated on first
    use with trustme into ``HARNESS_TLS_DIR`` (default ``~/.cache/harnessweb/tls``): the CA file a client trusts
    (``SSL_CERT_FILE``) and the server's key and certificate chain."""
    try:
        import trustme  # the server extra's: only --tls needs it
    except ImportError:
        raise ServeError('--tls needs trustme: pip install "harnessweb[server]"') from None

    folder = Path(os.environ.get("HARNESS_TLS_DIR") or Path.home() / ".cache" / "harnessweb" / "tls")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca_file, ca_key = folder / "ca.pem", folder / "ca-key.pem"
    if not ca_file.exists() or not ca_key.exists():
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(ca_file))
        ca.private_key_pem.write_to_path(str(ca_key))
    else:
        ca = trustme.CA.from_pem(ca_file.read_bytes(), ca_key.read_bytes())
    names = sorted({"localhost", "127.0.0.1", "::1", host or "127.0.0.1"} - {"0.0.0.0", "::"})
    server_pem = folder / f"server-{host or 'default'}.pem".replace(":", "_")
    if not server_pem.exists():
        ca.issue_cert(*names).private_key_and_cert_chain_pem.write_to_path(str(server_pem))
    os.chmod(ca_key, 0o600)
    os.chmod(server_pem, 0o600)
    return str(ca_file), str(server_pem)


def _check_files(scenarios: list[str], cassettes: list[str]) -> None:
    problems = check_paths([*scenarios, *cassettes]).problems if scenarios or cassettes else []
    problems += [
        f"{d}: not a folder (--cassettes takes folders of cassettes)" for d in cassettes if not Path(d).is_dir()
    ]
    if problems:
        raise ServeError("nothing started, these files are not right:\n" + "\n".join(problems))


def _fresh_database() -> None:
    folder = Path(tempfile.mkdtemp(prefix="harness-serve-"))
    # Registered before the server starts, so that it runs after the recorder's own exit hook (last in, first out):
    # what is pending is written, then the database removed.
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for name in SHARED_SETTINGS:
        os.environ.pop(name, None)
    os.environ["SQLITE_PATH"] = str(folder / "harness.sqlite3")
    print(f"harness serve: a fresh database in {folder}, removed when the server stops", file=sys.stderr)


def _prepare_database(scenarios: list[str], cassettes: list[str]) -> str:
    """Migrate, load, issue the token, in a child process (its output on stderr); the token."""
    spec = json.dumps({"scenarios": scenarios, "cassettes": cassettes})
    # run() kills the child if this process is stopped meanwhile.
    done = subprocess.run([sys.executable, "-m", "harnessweb.serving", spec], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise ServeError(f"nothing started: the database could not be prepared (exit {done.returncode}, see above)")
    return done.stdout.strip()


def prepare(scenarios: list[str], cassettes: list[str]) -> int:
    """The child's work: the database migrated, the scenarios and cassettes loaded, a judge token issued and
    printed (alone on stdout); 1 with the reason on stderr when any step fails."""
    import django
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import CommandError, call_command
    from django.db import DatabaseError

    try:
        django.setup()
        call_command("migrate", "--noinput", verbosity=0)
        if scenarios:
            # The files the command line names are what this server is to play: a stored scenario that differs
            # becomes a new version (its history kept), unlike make run's examples, which never replace one.
            call_command("load_scenarios", *scenarios, "--replace", stdout=sys.stderr)
        for folder in cassettes:
            call_command("load_cassettes", folder, stdout=sys.stderr)
        from runs_app import tokens  # a model: after django.setup()

        # Judge scope (which includes write and read): whoever starts the server sets its judge (HARNESS_JUDGE_*),
        # so the suite that started it may queue that judge on its runs (POST /api/runs/{id}/judge).
        _, token = tokens.issue("harness serve", "judge")
    except (CommandError, DatabaseError, ImproperlyConfigured, OSError) as exc:
        print(f"harness serve: {exc}", file=sys.stderr)
        return 1
    print(token)
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port), bound here so that a taken port is an error that
    says so and ``--port 0`` has no race between choosing a port and binding it."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ServeError(f"cannot listen on {host!r}: {exc.strerror}") from None
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
        listener.listen(socket.SOMAXCONN)
    except OSError as exc:
        listener.close()
        reason = "the port is taken (another server listens there)" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise ServeError(f"cannot listen on {host}:{port}: {reason}") from None
    return listener


def _bind_arguments(listener: socket.socket) -> list[str]:
    """daphne's arguments for the bound socket: its file descriptor (daphne's ``fd:`` endpoint adopts IPv4 sockets
    only), else the same address, released just before daphne binds it."""
    if listener.family == socket.AF_INET:
        return ["--fd", str(listener.detach())]  # Twisted adopts the descriptor and closes it
    host, port = listener.getsockname()[:2]
    listener.close()
    return ["-b", host, "-p", str(port)]


def _url(host: str, port: int) -> str:
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _write_token(path: str, token: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        os.fchmod(file.fileno(), 0o600)  # a file that was there keeps its mode through os.open
        file.write(token)


def _announce(out: IO[str], url: str, token: str, deadline: float, ca: str = "") -> None:
    """Print the JSON line once the server answers an authenticated API request; stop it if it never does. Over TLS
    the line names the CA file (``ca``) that a client trusts."""
    handlers: list[Any] = [urllib.request.ProxyHandler({})]  # never through an HTTP proxy
    if ca:
        handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca)))
    opener = urllib.request.build_opener(*handlers)
    probe = urllib.request.Request(f"{url}/api/scenarios", headers={"Authorization": f"Bearer {token}"})
    while not _answers(opener, probe):
        if time.monotonic() > deadline:
            print(f"harness serve: the server did not answer within {ANSWER_TIMEOUT_S} s; stopping", file=sys.stderr)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        time.sleep(0.05)
    try:
        line = {"url": url, "token": token, "pid": os.getpid()} | ({"ca": ca} if ca else {})
        out.write(json.dumps(line) + "\n")
        out.flush()
    except OSError as exc:  # nobody reads stdout any more: the server serves all the same
        print(f"harness serve: could not print the JSON line ({exc})", file=sys.stderr)
    print(f"harness serve: serving on {url} (pid {os.getpid()}); SIGTERM or Ctrl-C stops it", file=sys.stderr)


def _answers(opener: Any, probe: urllib.request.Request) -> bool:
    try:
        with opener.open(probe, timeout=2) as response:
            return response.status == 200
    except OSError:  # refused, reset, or an error status (HTTPError): not serving yet
        return False


if __name__ == "__main__":
    given = json.loads(sys.argv[1])
    sys.exit(prepare(given["scenarios"], given["cassettes"]))
