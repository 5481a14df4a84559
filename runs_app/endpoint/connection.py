"""The connection under a fake provider's response, beyond what ASGI says: the consumer cuts it halfway through a
response to simulate a network error. ASGI has no message for that, so it reaches into the server's transport.
"""

from __future__ import annotations

from typing import Any


def close_connection(send: Any) -> None:
    """Close the TCP connection under a response that is not finished: the client sees a dropped connection.

    ASGI has no message for this, so it reaches the server's transport: daphne's ``send`` is
    ``partial(server.handle_reply, request)``, uvicorn's is a method of its request cycle. Both transports flush
    what was written before closing, so the client gets the partial body, then the cut.
    """
    transport = getattr(getattr(send, "__self__", None), "transport", None)  # uvicorn
    if transport is None:  # daphne
        request = send.args[0] if getattr(send, "args", None) else None
        transport = getattr(getattr(request, "channel", None), "transport", None)
    if transport is None:
        raise RuntimeError("This ASGI server does not let the harness drop a connection")
    if hasattr(transport, "loseConnection"):
        transport.loseConnection()
    else:
        transport.close()
