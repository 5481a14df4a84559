"""``harness`` (and ``python -m harnessweb``): the package's command line.

``harness serve`` starts a clean harness server and prints one JSON line, ``{"url", "token", "pid"}``, so that a test
runner in any language can start it, read the line and stop it (``harnessweb/serving.py``); ``harness check PATH...``
checks scenario and cassette files offline (``harnessweb/engine/filecheck.py``), each error naming its file and line.

Only ``serve`` needs the server's packages (Django, Channels, daphne, ninja): they are imported inside it, so
``check`` works on the core install, and ``serve`` there says which extra to install.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence

from harnessweb.engine.filecheck import check_paths

SERVER_EXTRA = 'pip install "harnessweb[server]"'
SERVER_PACKAGES = ("django", "channels", "daphne", "ninja")
EXIT_NO_SERVER = 2


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {port}")
    return port


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="harness", description="A scenario harness for LLM-driven software.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="start a harness server and print one JSON line: its url, a judge token, its pid",
        description=(
            "Start the harness server (daphne). Once it answers, print one JSON line to stdout: "
            '{"url": ..., "token": ..., "pid": ...}; everything else goes to stderr. SIGTERM or Ctrl-C stops it.'
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="the port (default 8000; 0: a free one, printed)")
    serve.add_argument(
        "--fresh",
        action="store_true",
        help="a temporary SQLite database of its own (and the in-memory channel layer), removed when it stops; "
        "without it, DATABASE_URL or SQLITE_PATH, else db.sqlite3 in the current folder",
    )
    serve.add_argument(
        "--scenarios", action="extend", nargs="+", default=[], metavar="PATH", help="scenario files or folders to load"
    )
    serve.add_argument(
        "--cassettes", action="extend", nargs="+", default=[], metavar="DIR", help="folders of VCR cassettes to load"
    )
    serve.add_argument("--token-file", metavar="FILE", help="also write the token to FILE (mode 0600)")
    serve.add_argument(
        "--pacing", choices=("on", "off"), help="stream at the scenarios' pace, or as fast as possible (default on)"
    )
    serve.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS and WSS (a local CA and certificate made on first use; the JSON line names the CA file as "
        '"ca", for SSL_CERT_FILE): what google-genai\'s Live client needs',
    )
    serve.set_defaults(run=_serve)

    check = commands.add_parser(
        "check",
        help="check scenario and cassette files offline",
        description="Check scenario files (JSON or YAML) and VCR cassettes (JSON with interactions) offline: each "
        "error as FILE:LINE: message, exit 1 on any; else a one-line summary.",
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="files, or folders searched recursively")
    check.set_defaults(run=_check)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:  # Ctrl-C before the server serves: no traceback
        return 130


def _check(args: argparse.Namespace) -> int:
    report = check_paths(args.paths)
    for problem in report.problems:
        print(problem)
    print(f"harness check: {report.summary()}")
    return 1 if report.problems else 0


def _serve(args: argparse.Namespace) -> int:
    for name in SERVER_PACKAGES:
        if importlib.util.find_spec(name) is None:  # found, not imported: ninja reads Django's settings on import
            print(f"harness serve: the server needs {SERVER_EXTRA} ({name} is not installed)", file=sys.stderr)
            return EXIT_NO_SERVER
    from harnessweb import serving

    return serving.serve(
        host=args.host,
        port=args.port,
        fresh=args.fresh,
        scenarios=args.scenarios,
        cassettes=args.cassettes,
        token_file=args.token_file,
        pacing=args.pacing,
        tls=args.tls,
    )
