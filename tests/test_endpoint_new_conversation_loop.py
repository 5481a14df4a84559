"""A request that starts a conversation asks whether the conversation has a stored run on the event loop's own
SQLite connection (``loop_sqlite.may_have_run_of``): a new conversation, each test's first call, does not wait for
asgiref's thread; one that another process (or an earlier server) stored is read and joined as before."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import sync_to_async

from runs_app.endpoint import loop_sqlite, recorder
from runs_app.endpoint.recorder import Recorder
from tests.conftest import make_run

pytestmark = pytest.mark.django_db(transaction=True)


def count_thread_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = recorder._load_latest_for_key

    def load(key: str) -> object:
        read.append(threading.current_thread().name)
        return real(key)

    monkeypatch.setattr(recorder, "_load_latest_for_key", load)
    return read


async def test_a_new_conversation_is_known_new_without_django_s_thread(monkeypatch) -> None:
    read = count_thread_reads(monkeypatch)
    first = await Recorder().resolve(None, "a-new-conversation", 1, "openai")
    assert read == [] and not first.stored and first.conversation_key == "a-new-conversation"
    assert loop_sqlite.writer().thread == threading.get_ident()


async def test_a_conversation_stored_elsewhere_is_read_on_django_s_thread_and_joined(monkeypatch) -> None:
    read = count_thread_reads(monkeypatch)
    stored = await sync_to_async(make_run)(conversation_key="stored-elsewhere", turns_served=[1])
    joined = await Recorder().resolve(None, "stored-elsewhere", 2, "openai")
    assert joined.id == stored.id and joined.stored and len(read) == 1
    # A CI run with the same key is not the endpoint's: the conversation starts its own.
    await sync_to_async(make_run)(conversation_key="a-ci-key", source="ci", mode="ci", protocol="")
    assert not (await Recorder().resolve(None, "a-ci-key", 1, "openai")).stored and len(read) == 1
