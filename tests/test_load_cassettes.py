"""A folder of cassettes on the server: ``manage.py load_cassettes DIR`` (all or nothing, a bad file named with its
error, idempotent by name, a file that differs from the stored cassette of its name kept out unless ``--replace``)
and ``POST /api/cassettes`` with several files (a 207 with a result per file); what they store replays through the
official SDK by ``X-Harness-Cassette``."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import httpx2
import pytest
from django.core.management import CommandError, call_command

from runs_app.ci import cassette_uploads
from runs_app.endpoint import cassette_replay
from runs_app.models import Cassette, CassetteQuerySet
from tests.conftest import VCR_DIR, make_token, vcr_fixture

FILES = ("openai_simple_text.json", "anthropic_simple_text.json", "gemini_simple_text.json")


def folder_of(tmp_path: Path, *names: str) -> Path:
    """A folder as a team keeps it: the fixtures (secrets redacted, as a recorder writes them) and the manifest."""
    folder = tmp_path / "vcr"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes(vcr_fixture(name))
    (folder / "anthropic_manifest.json").write_bytes((VCR_DIR / "anthropic_manifest.json").read_bytes())
    (folder / "README.md").write_text("not a cassette")
    return folder


def load(folder: Path, *args: str) -> str:
    out = StringIO()
    call_command("load_cassettes", str(folder), *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_it_loads_a_folder_once_by_name(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, *FILES)
    first = load(folder)
    assert "3 stored, 0 unchanged" in first
    assert "anthropic_manifest.json: left out (no interactions: not a cassette)" in first
    stored = {row.name: bytes(row.content) for row in Cassette.objects.all()}
    assert stored == {name: vcr_fixture(name) for name in FILES}
    assert Cassette.objects.get(name="openai_simple_text.json").provider == "openai"

    again = load(folder)
    assert "0 stored, 3 unchanged" in again and Cassette.objects.count() == 3


@pytest.mark.django_db
def test_it_never_silently_replaces_a_stored_cassette_that_differs(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, "openai_simple_text.json")
    load(folder)
    changed = json.loads(vcr_fixture("openai_simple_text.json"))
    changed["recorded_at"] = "2026-03-01T00:00:00.000Z"
    (folder / "openai_simple_text.json").write_text(json.dumps(changed, indent=2))

    kept = load(folder)
    assert "openai_simple_text.json: differs from the stored one" in kept and "--replace" in kept
    assert Cassette.objects.count() == 1

    replaced = load(folder, "--replace")
    assert "1 stored" in replaced and Cassette.objects.count() == 2
    newest = Cassette.objects.filter(name="openai_simple_text.json").order_by("-uploaded_at", "-id").first()
    assert json.loads(bytes(newest.content))["recorded_at"] == "2026-03-01T00:00:00.000Z"

    (folder / "openai_simple_text.json").write_bytes(vcr_fixture("openai_simple_text.json"))
    back = load(folder, "--replace")  # the first version again: the newest of its name once more
    assert "again, the newest of its name" in back and Cassette.objects.count() == 2
    newest = Cassette.objects.filter(name="openai_simple_text.json").order_by("-uploaded_at", "-id").first()
    assert bytes(newest.content) == vcr_fixture("openai_simple_text.json")


@pytest.mark.django_db
def test_it_stores_nothing_when_a_file_is_bad_naming_each(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, *FILES)
    (folder / "openai_broken.json").write_text('{"version": "1.0", "interactions": [{"request": {}}]}')
    (folder / "openai_not_json.json").write_text("{nope")
    with pytest.raises(CommandError) as caught:
        load(folder)
    message = str(caught.value)
    assert "Nothing stored: 2 file(s)" in message
    assert "openai_broken.json: Field required (at interactions.0.request.method)" in message
    assert "openai_not_json.json: Malformed JSON" in message
    assert Cassette.objects.count() == 0


@pytest.mark.django_db
def test_it_refuses_a_folder_whose_cassettes_hold_a_secret(tmp_path: Path) -> None:
    folder = tmp_path / "raw"
    folder.mkdir()
    for name in ("openai_simple_text.json", "gemini_simple_text.json"):
        (folder / name).write_bytes((VCR_DIR / name).read_bytes())  # Gemini's records ?key=test-key as it is
    with pytest.raises(CommandError, match="gemini_simple_text.json: gemini_simple_text.json: query parameter key"):
        load(folder)
    assert Cassette.objects.count() == 0


def test_it_refuses_what_is_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="is not a folder"):
        load(tmp_path / "missing")


# -- on a live server, through the SDK ------------------------------------------------------------------------------


def test_a_loaded_folder_replays_through_the_sdk(harness_server, oai, transactional_db, tmp_path: Path) -> None:
    load(folder_of(tmp_path, *FILES))
    stream = oai.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True,
        extra_headers={"X-Harness-Cassette": "openai_simple_text"},
    )  # fmt: skip
    chunks = list(stream)
    assert chunks[0].id == "chatcmpl-vcr001"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "pong"


def test_posting_several_files_answers_a_result_for_each(harness_server, transactional_db) -> None:
    broken = b'{"version": "1.0", "interactions": []}'
    files = [("file", (name, vcr_fixture(name), "application/json")) for name in FILES[:2]]
    files.append(("file", ("openai_broken.json", broken, "application/json")))
    response = httpx2.post(
        f"{harness_server.url}/api/cassettes", files=files, data={"commit": "abc123"},
        headers={"Authorization": f"Bearer {make_token()}"}, timeout=20,
    )  # fmt: skip
    assert response.status_code == 207, response.text
    body = response.json()
    assert (body["accepted"], body["rejected"]) == (2, 1)
    results = body["results"]
    assert [r["accepted"] for r in results] == [True, True, False]
    assert results[2]["errors"][0]["field"].startswith("file.2.interactions")
    assert {row.name: row.commit for row in Cassette.objects.all()} == {FILES[0]: "abc123", FILES[1]: "abc123"}

    again = httpx2.post(
        f"{harness_server.url}/api/cassettes", files=files[:2], headers={"Authorization": f"Bearer {make_token()}"},
        timeout=20,
    )  # fmt: skip
    assert [r["duplicate"] for r in again.json()["results"]] == [True, True]  # idempotent: the same bytes


def test_several_files_take_no_single_name(harness_server, transactional_db) -> None:
    files = [("file", (name, vcr_fixture(name), "application/json")) for name in FILES[:2]]
    response = httpx2.post(
        f"{harness_server.url}/api/cassettes", files=files, params={"name": "one.json"},
        headers={"Authorization": f"Bearer {make_token()}"}, timeout=20,
    )  # fmt: skip
    assert response.status_code == 422
    assert "leave them out with several files" in response.text and Cassette.objects.count() == 0


@pytest.mark.django_db
def test_the_newest_of_a_name_is_the_one_replayed_and_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    """One rule for "the stored cassette of that name": the endpoint replays it and load_cassettes compares against
    it (``--replace`` relies on the two being the same row), with or without ``.json``, ties broken by id."""
    data = vcr_fixture("openai_simple_text.json")
    older = Cassette.objects.create(name="openai_x.json", content=b"{}", digest="a" * 64, size=2)
    newer = Cassette.objects.create(name="openai_x", content=data, digest="b" * 64, size=len(data))
    Cassette.objects.create(name="openai_y.json", content=b"{}", digest="c" * 64, size=2)
    Cassette.objects.filter(pk=older.pk).update(uploaded_at=newer.uploaded_at)  # the same instant: the id decides
    assert Cassette.objects.newest("openai_x.json") == newer
    assert Cassette.objects.newest(" openai_x ") == newer
    assert Cassette.objects.newest("openai_z") is None

    # Both sides ask that one rule: whatever it answers is what is replayed and what a file is compared with.
    monkeypatch.setattr(CassetteQuerySet, "newest", lambda self, name: older)
    replayed = cassette_replay.load("openai_x")
    assert isinstance(replayed, str) and f"Cassette 'openai_x.json' (#{older.pk}) is stored but" in replayed
    outcome, said = cassette_uploads.load(cassette_uploads.check_file("openai_x.json", data), replace=False)
    assert (outcome, f"(#{older.pk}," in said) == ("kept", True), said
