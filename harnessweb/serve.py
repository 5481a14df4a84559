"""``python -m harnessweb.serve``: daphne's own command line (the same arguments), with request bodies left to the app.

Every daphne we start goes through here: ``make run``, the pytest plugin's server mode and the tests' servers.

Twisted's ``Request.requestReceived`` parses the body of a POST sent with a form content type into ``request.args``
before daphne hands the request to the app, and when a ``multipart/form-data`` body does not parse (a JSON body
sent with that content type) it answers a bare, empty 400 itself (``twisted/web/http.py``, the
``_MultiPartParseException`` branch): the app never sees the request, so the client gets no error in its
protocol's format. daphne never reads ``request.args`` (the app reads the raw body), so the parsing only costs
memory and refuses requests; Twisted's ``parsePOSTFormSubmission=False`` turns it off, and the app answers such a
request itself, as it does under uvicorn, which never parses bodies.
"""

from __future__ import annotations

import sys
from typing import Any

from daphne import access, cli, http_protocol
from daphne.cli import CommandLineInterface

from harnessweb.engine.redaction import redact_url


class RawBodyRequest(http_protocol.WebRequest):
    """daphne's request, with Twisted's parsing of form bodies turned off."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)


class RedactedAccessLog(access.AccessLogGenerator):
    """daphne's access log, with the key-bearing query parameters of each path redacted (Gemini's ``?key=``): the
    log is kept, the key is not."""

    def __call__(self, protocol: Any, action: Any, details: dict[str, Any]) -> None:
        if isinstance(details.get("path"), str):
            details = {**details, "path": redact_url(details["path"])}
        super().__call__(protocol, action, details)


def main(argv: list[str] | None = None) -> None:
    # daphne's HTTPFactory.buildProtocol reads this module global for each connection: daphne offers no setting.
    http_protocol.WebRequest = RawBodyRequest
    cli.AccessLogGenerator = RedactedAccessLog  # (what daphne's command line builds its access log with)
    CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
