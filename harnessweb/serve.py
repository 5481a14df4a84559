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

from daphne import http_protocol
from daphne.cli import CommandLineInterface


class RawBodyRequest(http_protocol.WebRequest):
    """daphne's request, with Twisted's parsing of form bodies turned off."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)


def main(argv: list[str] | None = None) -> None:
    # daphne's HTTPFactory.buildProtocol reads this module global for each connection: daphne offers no setting.
    http_protocol.WebRequest = RawBodyRequest
    CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
