"""Run against run (/runs/<a>/diff/<b>/), the run page's "Compare with…" control, and a missing system prompt
fragment diffed against what the prompt says in its place."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.utils import timezone

from runs_app.models import RunEvent
from tests.conftest import make_scenario
from tests.live_views_helpers import make_events, make_played_run, make_request, make_response

pytestmark = pytest.mark.django_db


def played(system: str, answer: str = "It is sunny in Paris.", **fields):
    run = make_played_run(**fields)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "weather in Paris?"}]
    make_events(run, make_request(1, messages, temperature=0.2), make_response(1, text=answer))
    return run


def test_it_sends_anonymous_visitors_to_log_in(client):
    a, b = played("x"), played("y")
    for path in (f"/runs/{a.id}/diff/{b.id}/", f"/runs/{a.id}/compare/?with={b.id}"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_it_shows_two_runs_side_by_side_with_the_changed_words_marked(admin_client):
    a = played("You are a weather assistant.", status="passed")
    b = played("You are a travel assistant.", answer="It is rainy in Paris.", status="failed")
    html = admin_client.get(f"/runs/{a.id}/diff/{b.id}/").content.decode()
    assert "different scenarios" not in html
    assert "2 differences" in html
    assert "You are a <del>weather</del> assistant." in html
    assert "You are a <ins>travel</ins> assistant." in html
    assert "It is <del>sunny</del> in Paris." in html and "It is <ins>rainy</ins> in Paris." in html
    # What did not change is shown, unmarked.
    assert '<tr class="same"><th scope="row">Parameter temperature</th>' in html
    assert '<tr class="same"><th scope="row">Message 1 (user)</th>' in html


def test_it_escapes_hostile_text_in_both_sides(admin_client):
    a = played("Be nice.")
    b = played("Be nice. <script>alert('x')</script>", answer="<img src=x onerror=alert(1)>")
    html = admin_client.get(f"/runs/{a.id}/diff/{b.id}/").content.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;</ins>" in html
    assert "&lt;img" in html and "<img" not in html


def test_it_still_diffs_runs_of_different_scenarios_but_says_so(admin_client):
    a = played("You are a weather assistant.", scenario_id="weather")
    b = played("You are a weather assistant.", scenario_id="travel")
    response = admin_client.get(f"/runs/{a.id}/diff/{b.id}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "These runs played different scenarios (weather and travel)" in html
    assert "The requests and answers are the same." in html


def test_it_shows_a_turn_only_one_run_reached(admin_client):
    a = played("S")
    b = played("S")
    kind, turn, data = make_request(2)
    RunEvent.objects.create(run=b, seq=10, timestamp=b.started_at, kind=kind, turn=turn, data=data)
    html = admin_client.get(f"/runs/{a.id}/diff/{b.id}/").content.decode()
    assert 'Turn 2 <small class="muted">only in B</small>' in html


def test_it_answers_404_for_an_unknown_run(admin_client):
    a = played("S")
    assert admin_client.get(f"/runs/{a.id}/diff/{uuid.uuid4()}/").status_code == 404
    assert admin_client.get(f"/runs/{uuid.uuid4()}/diff/{a.id}/").status_code == 404


def test_it_sends_the_compare_form_to_the_diff_page(admin_client):
    a, b = played("x"), played("y")
    response = admin_client.get(f"/runs/{a.id}/compare/?with={b.id}")
    assert response.status_code == 302 and response["Location"] == f"/runs/{a.id}/diff/{b.id}/"
    # Not a run id: back to the run's page rather than an error.
    response = admin_client.get(f"/runs/{a.id}/compare/?with=nonsense")
    assert response.status_code == 302 and response["Location"] == f"/runs/{a.id}/"


def test_it_offers_the_last_passing_run_of_the_scenario_on_the_run_page(admin_client):
    now = timezone.now()
    older_pass = played("S", status="passed", started_at=now - dt.timedelta(minutes=9))
    newer_pass = played("S", status="passed", started_at=now - dt.timedelta(minutes=5))
    played("S", status="passed", scenario_id="other", started_at=now - dt.timedelta(minutes=1))
    failed = played("S", status="failed", started_at=now - dt.timedelta(minutes=2))
    html = admin_client.get(f"/runs/{failed.id}/").content.decode()
    assert f'href="/runs/{newer_pass.id}/diff/{failed.id}/">Diff against the last passing run' in html
    form = html[html.index('class="compare-with"') : html.index("</form>", html.index('class="compare-with"'))]
    assert f'value="{newer_pass.id}"' in form and f'value="{older_pass.id}"' in form
    assert f'value="{failed.id}"' not in form and "other" not in form


def test_it_offers_no_last_passing_run_when_there_is_none(admin_client):
    failed = played("S", status="failed")
    html = admin_client.get(f"/runs/{failed.id}/").content.decode()
    # No other run of the scenario: nothing to compare with, so no "Compare with" at all.
    assert "compare-with" not in html and "Diff against the last passing run" not in html


def test_it_diffs_a_missing_system_prompt_fragment_against_what_the_prompt_says(admin_client):
    make_scenario("weather", system_prompt_must_include=["You are a weather assistant"])
    run = played("Be brief. You are a <b>travel</b> assistant.", started_at=timezone.now() + dt.timedelta(seconds=1))
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    table = html[html.index('id="turn-1-expectations"') : html.index('id="turn-1-events"')]
    assert '<tr class="expect-diff">' in table
    assert "You are a <del>weather</del> assistant" in table
    assert "You are a <ins>&lt;b&gt;travel&lt;/b&gt;</ins> assistant" in table
