"""The server's key checks in-process: what a call on a provider's wire carries besides its body (:class:`OnWire`:
the route :meth:`Harness.exchange <harnessweb.testing.harness.Harness.exchange>` resolved, whose provider reads the
key, its headers, Gemini's ``?key=``, and the request id its errors carry, as the server's do), the refusal when keys
must arrive and did not (:class:`KeyRefused`), and a call's key checked in the server's order (:func:`checked`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harnessweb.engine import respond, routes
from harnessweb.engine.exchange import ChatRequest, Decision, Failure
from harnessweb.engine.playback import check_key
from harnessweb.engine.schemas import Scenario
from harnessweb.testing import calls as history


@dataclass(frozen=True)
class OnWire:
    """A call that came on a provider's wire (the ``llm`` boundary has none: no key travels there)."""

    route: routes.Route
    headers: Mapping[str, str]
    query_key: str = ""
    request_id: str = ""

    def refusal(self, required: bool, scenario: Scenario | None) -> respond.KeyRefusal | None:
        """The provider's refusal when keys must arrive (``required``, the request's ``X-Harness-Require-Key``, the
        scenario's ``require_key``) and this call's did not, carrying the call's request id; None otherwise."""
        return respond.key_refusal(self.route, self.headers, self.query_key, required, scenario, self.request_id)


class KeyRefused(Exception):
    """Keys must arrive and this request's did not: the provider's own refusal (``respond.KeyRefusal``)."""

    def __init__(self, refusal: respond.KeyRefusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def checked(
    harness: Any,
    call: history.Call,
    decision: Decision,
    failure: Failure | None,
    request: ChatRequest,
    wire: OnWire | None,
) -> tuple[Decision, Failure | None]:
    """The server's checks of a call's key, in its order, once its scenario is known: keys that must arrive (raises
    :class:`KeyRefused`, the refusal on the call), then the key expected of every call (the validation failure in
    place of the answer, its problem on the call). A call at the ``llm`` boundary (``wire`` None) goes through."""
    if wire is None:
        return decision, failure
    scenario = harness._catalog.by_id.get(decision.scenario_id)
    refused = wire.refusal(harness.options.require_key, scenario)
    if refused is not None:
        call.error = {"status": refused.status, "kind": "rejected", "message": refused.message}
        raise KeyRefused(refused)
    checked = check_key(decision, request, harness.answers.expect_key, harness.options.signature_key)
    call.problem = checked.problem
    return checked, (failure if checked is decision else None)
