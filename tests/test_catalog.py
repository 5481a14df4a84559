"""The catalog cache: served from memory while the stamp file stands still, reloaded when any change moves it."""

import pytest

from scenarios_app import catalog
from scenarios_app.models import Scenario
from tests.conftest import make_scenario


@pytest.mark.django_db(transaction=True)
def test_it_serves_from_memory_until_a_committed_change_moves_the_stamp():
    make_scenario("cached-one")
    first = catalog.current_catalog()
    assert "cached-one" in first.by_id
    assert catalog.cached_catalog() is first
    make_scenario("cached-two")
    assert catalog.cached_catalog() is None  # the save moved the stamp
    assert "cached-two" in catalog.current_catalog().by_id
    Scenario.objects.filter(id="cached-one").delete()  # a queryset delete moves it too
    assert catalog.cached_catalog() is None
    assert "cached-one" not in catalog.current_catalog().by_id


@pytest.mark.django_db(transaction=True)
def test_it_asks_the_database_every_time_when_the_stamp_is_off(settings):
    settings.HARNESS_CATALOG_STAMP = "off"
    make_scenario("unstamped")
    assert "unstamped" in catalog.current_catalog().by_id
    assert catalog.cached_catalog() is None


@pytest.mark.django_db(transaction=True)
def test_it_moves_the_stamp_only_once_the_transaction_commits():
    from django.db import transaction

    catalog.current_catalog()
    with transaction.atomic():
        make_scenario("uncommitted")
        assert catalog.cached_catalog() is not None  # other processes cannot see the row yet
    assert catalog.cached_catalog() is None


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_stamp_in_redis_for_workers_that_share_no_disk(settings, monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    settings.HARNESS_CATALOG_STAMP = ""  # REDIS_URL alone puts the stamp in Redis
    assert catalog.stamp_path() is None and catalog.redis_stamp() is not None
    make_scenario("in-redis")
    first = catalog.current_catalog()
    assert catalog.cached_catalog() is first
    # Another worker, on another host, saves a scenario: its own Redis client moves the counter.
    other = catalog.RedisStamp("redis://127.0.0.1:6379/0", catalog.redis_stamp().key)
    other.move()
    assert catalog.cached_catalog() is None
    assert catalog.current_catalog() is first  # the scenarios did not change: the same catalog, now current again
    assert catalog.cached_catalog() is first


@pytest.mark.django_db(transaction=True)
def test_it_asks_the_database_when_redis_does_not_answer(settings, monkeypatch):
    from tests.conftest import free_port

    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    settings.HARNESS_CATALOG_STAMP = "redis"
    make_scenario("no-redis")
    assert "no-redis" in catalog.current_catalog().by_id
    assert catalog.cached_catalog() is None  # no stamp to trust: every request asks the database
