"""One rule for what an htmx request gets (harnessweb/htmx.py), on every page that answers partials."""

from __future__ import annotations

import pytest
from django.http import HttpRequest
from django.test import RequestFactory
from django_htmx.middleware import HtmxMiddleware

from harnessweb.htmx import HTMX_HEADERS, wants_partial
from tests.conftest import make_scenario

SWAP = {"HX-Request": "true"}


def htmx_request(**headers: str) -> HttpRequest:
    request = RequestFactory().get("/", headers=headers)
    HtmxMiddleware(lambda r: None)(request)
    return request


@pytest.mark.parametrize(
    ("headers", "partial"),
    [
        ({}, False),
        (SWAP, True),
        ({**SWAP, "HX-Boosted": "true"}, False),
        ({**SWAP, "HX-History-Restore-Request": "true"}, False),
    ],
)
def test_it_gives_the_partial_to_a_swap_only(headers: dict[str, str], partial: bool) -> None:
    assert wants_partial(htmx_request(**headers)) is partial


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/runs/", "/scenarios/"])
def test_it_gives_a_boosted_link_the_whole_page_and_varies_on_every_htmx_header(admin_client, path: str) -> None:
    make_scenario("boosted")
    swap = admin_client.get(path, headers=SWAP)
    boosted = admin_client.get(path, headers={**SWAP, "HX-Boosted": "true"})

    assert b"<html" not in swap.content
    assert b"<html" in boosted.content
    for response in (swap, boosted):
        assert all(header in response["Vary"] for header in HTMX_HEADERS)


@pytest.mark.django_db
def test_it_varies_the_version_diff_on_the_htmx_headers(admin_client) -> None:
    make_scenario("diffed")
    make_scenario("diffed", description="changed")
    response = admin_client.get("/scenarios/diffed/versions/1/diff/", headers=SWAP)

    assert response.status_code == 200
    assert response.templates[0].name == "scenarios_app/diff.html"
    assert all(header in response["Vary"] for header in HTMX_HEADERS)
