"""``python -m harnessweb.serve``: daphne's own command line (the same arguments), with request bodies left to the app,
on uvloop and with a deep listen queue.

Every daphne we start goes through here: ``make run``, the pytest plugin's server mode and the tests' servers.

Twisted's ``Request.requestReceived`` parses the body of a POST sent with a form content type into ``request.args``
before daphne hands the request to the app, and when a ``multipart/form-data`` body does not parse (a JSON body
sent with that content type) it answers a bare, empty 400 itself (``twisted/web/http.py``, the
``_MultiPartParseException`` branch): the app never sees the request, so the client gets no error in its
protocol's format. daphne never reads ``request.args`` (the app reads the raw body), so the parsing only costs
memory and refuses requests; Twisted's ``parsePOSTFormSubmission=False`` turns it off, and the app answers such a
request itself, as it does under uvicorn, which never parses bodies.

daphne runs Twisted on an asyncio loop it creates when ``daphne.server`` is imported (``asyncio.new_event_loop()``,
then ``asyncioreactor.install``). With uvloop's policy set first that loop is uvloop's (as uvicorn's is): each of
a stream's frames costs the loop about half as much, which is what keeps 1,000 paced streams on time when they
start at once (tests/benchmarks/README.md, *Pacing under load*). The ``server`` extra installs uvloop (not on
Windows, where it is the standard loop, as before).

Twisted listens with a backlog of 50, and daphne's ``-b``/``-p`` build an endpoint string without one: 1,000
clients connecting at once overflow it, and every dropped connection waits for the client's SYN to be sent again
(1 s, 3 s, 7 s ...). Every TCP endpoint built from ``-b``/``-p`` (or daphne's default) gets ``LISTEN_BACKLOG``
instead, uvicorn's figure; an endpoint string given with ``-e`` is taken as written.

Twisted buffers every write until the loop's next turn; ``write_at_once`` sends a frame when nothing waits before
it, as uvicorn does (one loop turn and two ``epoll_ctl`` less a frame). Twisted also formats an access log line of
its own for every request, which daphne sends nowhere: ``UnloggedHTTPFactory`` does not.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from daphne import access, http_protocol

from harnessweb.engine.redaction import redact_url

LISTEN_BACKLOG = 2048


class RawBodyRequest(http_protocol.WebRequest):
    """daphne's request, with Twisted's parsing of form bodies turned off."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)


class UnloggedHTTPFactory(http_protocol.HTTPFactory):
    """daphne's HTTP factory without Twisted's access log: Twisted formats a combined log line for every request and
    writes it to its own log, which daphne sends nowhere (``-v 1``) or to the standard logging (``-v 2``), its
    path unredacted (a Gemini ``?key=``). The access log is daphne's (``--access-log``: ``RedactedAccessLog``);
    formatting the line was about half of Twisted's ``Request.finish`` under cProfile."""

    def log(self, request: Any) -> None:
        pass


class RedactedAccessLog(access.AccessLogGenerator):
    """daphne's access log, with the key-bearing query parameters of each path redacted (Gemini's ``?key=``): the
    log is kept, the key is not."""

    def __call__(self, protocol: Any, action: Any, details: dict[str, Any]) -> None:
        if isinstance(details.get("path"), str):
            details = {**details, "path": redact_url(details["path"])}
        super().__call__(protocol, action, details)


def with_backlog(endpoints: list[str], backlog: int = LISTEN_BACKLOG) -> list[str]:
    """daphne's endpoint strings, each TCP one given a listen backlog (unless it names its own)."""
    return [f"{e}:backlog={backlog}" if e.startswith("tcp:") and ":backlog=" not in e else e for e in endpoints]


def use_uvloop() -> bool:
    """Make the loops asyncio creates from now on uvloop's, when it is installed; before ``daphne.server`` is
    imported, so that the loop it hands Twisted's reactor is one of them. False when uvloop is missing, or the
    reactor was installed already (something imported daphne's server first): the loop stays the one it has, and
    the start-up line says which."""
    if "daphne.server" in sys.modules or "twisted.internet.reactor" in sys.modules:
        return False
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


def write_at_once() -> None:
    """Twisted's TCP connections send what they are given at once when nothing waits in their buffer, as uvicorn
    does, instead of buffering it and registering the socket with the loop to send it on the next turn.

    ``FileDescriptor.write`` only buffers and calls ``startWriting`` (an ``epoll_ctl``); the bytes leave when the
    loop next reports the socket writable (``doWrite``, then ``stopWriting``: another ``epoll_ctl``). With 1,000
    paced streams that is a loop turn, two system calls and Twisted's dispatch for every frame, about half of what a
    frame cost daphne's loop (tests/benchmarks/README.md, *Why daphne falls behind*). What the socket does not take
    (a full send buffer, an error) is buffered as before, and the loop sends it, or reports the error, as before.

    Twisted 26's HTTP channel writes headers and chunks with ``writeSequence``, which this leaves buffered: sent at
    once too, paced streams' first frames left early and the drift measured from them grew (tests/benchmarks/
    README.md, *Tried and not kept: a sequence of writes sent at once*)."""
    from twisted.internet import tcp

    buffered = tcp.Connection.write

    def write(self: tcp.Connection, data: bytes) -> None:
        if (
            type(data) is bytes
            and data
            and self.connected
            and not self._writeDisconnected
            and not self._tempDataLen
            and len(self.dataBuffer) == self.offset  # (nothing waiting: the order of the bytes is kept)
            and not getattr(self, "TLS", False)
        ):
            sent = self.writeSomeData(data)
            if not isinstance(sent, int):  # (the connection is lost: the buffered path reports it)
                sent = 0
            if sent == len(data):
                return
            data = data[sent:]
        buffered(self, data)

    tcp.Connection.write = write  # type: ignore[method-assign]


def adapt_daphne() -> None:
    """daphne as this module serves it: on uvloop when it can, Twisted writing at once, bodies left to the app, no
    Twisted access log, the redacted access log, close reasons sent and the deep listen queue."""
    use_uvloop()
    from daphne import cli, server  # (daphne.server installs the reactor on a new loop)

    write_at_once()

    # daphne's HTTPFactory.buildProtocol reads this module global for each connection: daphne offers no setting.
    http_protocol.WebRequest = RawBodyRequest
    server.HTTPFactory = UnloggedHTTPFactory  # (what daphne's Server.run builds its factory with)
    cli.AccessLogGenerator = RedactedAccessLog  # (what daphne's command line builds its access log with)
    from harnessweb import daphne_ws  # (after daphne.server: it installs the reactor)

    daphne_ws.install()  # a websocket.close's reason reaches the client, as under uvicorn
    build = cli.build_endpoint_description_strings
    cli.build_endpoint_description_strings = lambda **kwargs: with_backlog(build(**kwargs))


def main(argv: list[str] | None = None) -> None:
    adapt_daphne()
    from daphne import cli
    from twisted.internet import reactor

    loop = reactor._asyncioEventloop  # type: ignore[attr-defined]  (the loop daphne handed the reactor)
    # The log's configuration is the app's (warnings up): this start-up line goes to stderr itself, once serving.
    said = f"harnessweb.serve: daphne on {type(loop).__module__}.{type(loop).__name__}"
    reactor.callWhenRunning(lambda: print(said, file=sys.stderr, flush=True))
    cli.CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
