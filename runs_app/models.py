"""The runs, events, CI uploads (trace logs, verdicts, JUnit, cassettes), API tokens and provider obligations."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import models
from uuid_utils.compat import uuid7

from harnessweb.engine import vcr


class RunQuerySet(models.QuerySet["Run"]):
    def filtered(
        self,
        *,
        scenario: str = "",
        status: str = "",
        protocol: str = "",
        source: str = "",
        day: dt.date | None = None,
        since: dt.datetime | None = None,
        test: str = "",
        fingerprint: str = "",
        conversation: str = "",
    ) -> RunQuerySet:
        """Runs matching every filter given (blank ones filter nothing): the runs list, the API and the admin.
        ``test``: part of a CI or pytest run's test name; ``fingerprint``: an API key's (never the key) that one of
        the run's requests presented, looked up in the request events' JSON by an ``EXISTS`` on the run's events."""
        runs = self
        exact: dict[str, Any] = {"scenario_id": scenario, "status": status, "protocol": protocol, "source": source}
        exact["conversation_key"] = conversation.strip()  # a conversation's key, as the endpoint recorded it
        runs = runs.filter(**{name: value for name, value in exact.items() if value})
        if test:
            runs = runs.filter(name__icontains=test)
        if fingerprint:
            keyed = RunEvent.objects.filter(run=models.OuterRef("pk"), kind="request")
            runs = runs.filter(models.Exists(keyed.filter(data__key__fingerprint=fingerprint.strip().lower())))
        if day is not None:
            runs = runs.filter(started_at__date=day)
        if since is not None:
            runs = runs.filter(started_at__gte=since)
        return runs


class Run(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        PASSED = "passed"
        FAILED = "failed"
        ERRORED = "errored"
        SKIPPED = "skipped"  # a CI or pytest run whose test was skipped: CI's word, never the endpoint's
        ABANDONED = "abandoned"  # no request came for HARNESS_RUN_IDLE_S before its last turn (runs_app/closing.py)

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)  # time first: migration 0018
    # Not a foreign key: a run outlives the scenario it played, and lorem/instruction runs have none.
    scenario_id = models.CharField(max_length=100, blank=True, default="", db_index=True)
    mode = models.CharField(max_length=20, default="scenario")  # scenario | instruction | lorem
    protocol = models.CharField(max_length=20)  # openai | anthropic
    source = models.CharField(max_length=20, default="endpoint")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING, db_index=True)
    status_reason = models.TextField(blank=True, default="")
    conversation_key = models.CharField(max_length=64, blank=True, default="", db_index=True)
    turns_served = models.JSONField(default=list)
    # Closed to its conversation: a request of it starts a new run (one naming this run still continues it).
    closed = models.BooleanField(
        default=False, help_text="It reached its end, or no request came for a while: its conversation starts anew."
    )
    # CI runs (source "ci") carry what the build knows about itself.
    name = models.CharField(max_length=200, blank=True)
    commit = models.CharField(max_length=64, blank=True, db_index=True)
    branch = models.CharField(max_length=200, blank=True)
    build_url = models.URLField(max_length=500, blank=True)
    external_id = models.CharField(max_length=200, null=True, blank=True)  # unique when given: Meta
    started_at = models.DateTimeField(db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    pinned = models.BooleanField(default=False, help_text="Kept by prune_runs, whatever its age.")

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at"]
        # Every index is a page of the database's log on each run written: protocol and source (a handful of values)
        # filter the list as it walks started_at's index, and the endpoint's runs (no external_id) stay out of the
        # unique one. tests/benchmarks/README.md, "The run table's indexes".
        constraints = [
            models.UniqueConstraint(
                fields=["external_id"], condition=models.Q(external_id__isnull=False), name="run_external_id_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.scenario_id or self.mode} {self.id}"


class RunEvent(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_index=False)  # (run, seq)'s
    seq = models.PositiveIntegerField()
    timestamp = models.DateTimeField()
    kind = models.CharField(max_length=40)
    turn = models.PositiveIntegerField(null=True, blank=True)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.kind}"


class AttemptCounter(models.Model):
    """Simulated failures served per (run, turn, provider): the one write a request may wait on. ``protocol`` holds
    the engine's ``Decision.counter`` (the protocol, then a digest of the scenario and of what the turn's failure
    scope tells providers apart by)."""

    run_id = models.UUIDField()
    turn = models.PositiveIntegerField()
    protocol = models.CharField(max_length=20)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run_id", "turn", "protocol"], name="attempt_counter_unique_key")
        ]


class KeptAnswer(models.Model):
    """An answer a client may refer back to by its id (the Responses API's ``previous_response_id`` and
    ``GET /v1/responses/{id}``, an Anthropic message thread's ``previous_message_id``): the conversation up to and
    including it, and the response object as sent.

    Written before the answer is sent, so a client that continues at once always finds it, from any worker. The
    id comes from the conversation, so the same conversation replayed writes the same row again.
    """

    id = models.CharField(primary_key=True, max_length=100)
    protocol = models.CharField(max_length=20)
    # {"system": str, "tools": [name, …], "messages": [[role, text], …]}, this answer last.
    conversation = models.JSONField(default=dict)
    response = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.id


class RunScript(models.Model):
    """What the requests of one named run (``X-Harness-Run``) get before any scenario: answers and failure kinds
    configured by a test (the pytest plugin's server mode, or any client through the API), each counting its uses,
    and the scenario to play. Read and counted in one transaction per request, so every worker serves an answer
    once."""

    run_id = models.UUIDField(primary_key=True)
    scenario = models.CharField(max_length=100, blank=True, default="")
    # harnessweb.engine.configured.Answers.to_data(): {"answers": [...], "errors": [...]}, with "used" counts.
    script = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return str(self.run_id)


# -- CI uploads ------------------------------------------------------------------------------------------------------


class ApiToken(models.Model):
    """A bearer token for the REST API. Only its SHA-256 digest is stored; the token is shown once."""

    class Scope(models.TextChoices):
        READ = "read"
        WRITE = "write"
        # Queues the judge (POST /api/runs/{id}/judge), which calls a paid model; includes write (and read), so
        # that one token serves a CI job: judge ⊃ write ⊃ read (harnessweb.apikit.SCOPE_RANK).
        JUDGE = "judge"

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, to recognise it.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(max_length=5, choices=Scope.choices, default=Scope.READ)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.scope})"


class TraceLog(models.Model):
    """One turn's trace log file, as the e2e harness collects it (TurnLog: turn number, file path, content)."""

    class Outcome(models.TextChoices):  # the file's footer (harnessweb/engine/trace_outcome.py); blank: none
        SUCCESS = "success"
        FAILED = "failed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="trace_logs")
    turn_number = models.PositiveIntegerField()
    file_path = models.CharField(max_length=1000)
    content = models.TextField()
    outcome = models.CharField(max_length=7, choices=Outcome.choices, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "turn_number", "id"]

    def __str__(self) -> str:
        return f"turn {self.turn_number}: {self.file_path}"


class Verdict(models.TextChoices):
    PASS = "PASS"
    FAIL = "FAIL"


# The effective verdict of a judge that failed: neither PASS nor FAIL, never counted as a FAIL.
JUDGE_ERROR = "ERROR"
# The effective verdict of a judge that was not asked (no key, or a placeholder one): neither PASS, FAIL nor an error.
JUDGE_SKIPPED = "SKIPPED"


class ReviewState(models.TextChoices):
    UNREVIEWED = "unreviewed"  # nobody has looked yet
    REVIEWED = "reviewed"  # accepted as judged
    OVERRIDDEN = "overridden"  # a reviewer's verdict is in force


class VerdictQuerySet(models.QuerySet["JudgeVerdict"]):
    """The review rules of :mod:`runs_app.review.rules` in SQL, for filters, the API and the review queue."""

    def with_review_facts(self) -> VerdictQuerySet:
        """Annotate the two facts the effective verdict needs from the criteria."""
        criteria = VerdictCriterion.objects.filter(verdict=models.OuterRef("pk"))
        return self.annotate(
            has_criterion_override=models.Exists(criteria.exclude(override_verdict="")),
            has_effective_fail=models.Exists(
                criteria.filter(
                    models.Q(override_verdict=Verdict.FAIL) | models.Q(override_verdict="", judge_verdict=Verdict.FAIL)
                )
            ),
        )

    def effective(self, value: str) -> VerdictQuerySet:
        """Verdicts whose effective overall is ``value`` (PASS, FAIL or ERROR), as ``effective_overall`` says."""
        no_overall = models.Q(override_overall="")
        derived = no_overall & models.Q(has_criterion_override=True)
        as_judged = no_overall & models.Q(has_criterion_override=False)
        if value == JUDGE_ERROR:
            return self.with_review_facts().filter(as_judged & _JUDGE_FAILED)
        if value == JUDGE_SKIPPED:
            return self.with_review_facts().filter(as_judged & _JUDGE_SKIPPED)
        derived_value = models.Q(has_effective_fail=(value == Verdict.FAIL))
        matches = (
            models.Q(override_overall=value)
            | (derived & derived_value)
            | (as_judged & ~_JUDGE_FAILED & models.Q(overall=value))
        )
        return self.with_review_facts().filter(matches)

    def judge_failed(self, errored: bool = True) -> VerdictQuerySet:
        """Verdicts whose judge failed (or, with ``errored=False``, answered)."""
        return self.filter(_JUDGE_FAILED) if errored else self.exclude(_JUDGE_FAILED)

    def in_state(self, state: str) -> VerdictQuerySet:
        """Verdicts in a review state (see ``review_state``)."""
        queryset = self.with_review_facts()
        if state == ReviewState.OVERRIDDEN:
            return queryset.filter(_OVERRIDDEN)
        return queryset.exclude(_OVERRIDDEN).filter(reviewed_at__isnull=(state == ReviewState.UNREVIEWED))

    def review_queue(self) -> VerdictQuerySet:
        """Unreviewed verdicts whose effective overall is FAIL, in queue order (oldest first)."""
        return self.in_state(ReviewState.UNREVIEWED).effective(Verdict.FAIL).order_by(*QUEUE_ORDER)

    def after(self, anchor: JudgeVerdict, inclusive: bool = False) -> VerdictQuerySet:
        """Verdicts after ``anchor`` in queue order (``anchor`` itself too when ``inclusive``)."""
        same = {"id__gte" if inclusive else "id__gt": anchor.pk}
        return self.filter(models.Q(created_at__gt=anchor.created_at) | models.Q(created_at=anchor.created_at, **same))

    def before(self, anchor: JudgeVerdict) -> VerdictQuerySet:
        """Verdicts before ``anchor`` in queue order."""
        return self.filter(
            models.Q(created_at__lt=anchor.created_at) | models.Q(created_at=anchor.created_at, id__lt=anchor.pk)
        )


QUEUE_ORDER = ("created_at", "id")
_JUDGE_SKIPPED = models.Q(judge_error="") & ~models.Q(skipped_reason="")
_JUDGE_FAILED = ~models.Q(judge_error="") | (models.Q(overall="") & models.Q(skipped_reason=""))
_OVERRIDDEN = ~models.Q(override_overall="") | models.Q(has_criterion_override=True)


class JudgeVerdict(models.Model):
    """An LLM judge's verdict on a run, plus a reviewer's overrides. The judge's own answer is never changed."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="verdicts")
    overall = models.CharField(max_length=4, choices=Verdict.choices, blank=True)  # blank when the judge failed
    summary = models.TextField(blank=True)
    judge_model = models.CharField(max_length=200, blank=True)
    prompt_hash = models.CharField(max_length=128, blank=True)
    raw_output = models.TextField(blank=True)
    judge_error = models.TextField(blank=True, help_text="Set when the judge itself failed: never counted as FAIL.")
    # The judge's call as made (runs_app/judging): the exact prompt, the tokens its answer's usage reported.
    prompt = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    skipped_reason = models.TextField(
        blank=True, help_text="Set when the judge was not asked (no key, a placeholder one): neither FAIL nor an error."
    )
    override_overall = models.CharField(max_length=4, choices=Verdict.choices, blank=True)
    override_reason = models.TextField(blank=True)
    reviewed_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = VerdictQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"verdict {self.pk} on {self.run_id}"


class VerdictCriterion(models.Model):
    verdict = models.ForeignKey(JudgeVerdict, on_delete=models.CASCADE, related_name="criteria")
    position = models.PositiveIntegerField()
    criterion = models.TextField()
    judge_verdict = models.CharField(max_length=4, choices=Verdict.choices)
    reason = models.TextField(blank=True)
    override_verdict = models.CharField(max_length=4, choices=Verdict.choices, blank=True)
    override_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["verdict", "position"]
        constraints = [models.UniqueConstraint(fields=["verdict", "position"], name="criterion_unique_position")]

    def __str__(self) -> str:
        return self.criterion[:80]


class VerdictAudit(models.Model):
    """One reviewer change to a verdict: who, when, what it was before and after; undoing is a change too."""

    verdict = models.ForeignKey(JudgeVerdict, on_delete=models.CASCADE, related_name="audit")
    user = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True)
    target = models.CharField(max_length=40)  # "overall", "criterion:<position>" or "review" (accepted as is)
    before = models.JSONField(default=dict)  # {"verdict", "reason"} (+ "reviewed_by", "reviewed_at"): see review.py
    after = models.JSONField(default=dict)
    reason = models.TextField(blank=True)
    undoes = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="undone_by")

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.target} {self.before.get('verdict') or '-'} → {self.after.get('verdict') or '-'}"


class JUnitReport(models.Model):
    """One uploaded JUnit XML file; the same bytes uploaded twice to a run are stored once."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="junit_reports")
    digest = models.CharField(max_length=64)
    filename = models.CharField(max_length=300, blank=True)
    tests = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    uploaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-uploaded_at"]
        constraints = [models.UniqueConstraint(fields=["run", "digest"], name="junit_unique_per_run")]

    def __str__(self) -> str:
        return self.filename or self.digest[:12]


class TestCaseResult(models.Model):
    class Outcome(models.TextChoices):
        PASSED = "passed"
        FAILED = "failed"
        ERROR = "error"
        SKIPPED = "skipped"
        FLAKY = "flaky"  # failed, then passed on a rerun (nextest flakyFailure)

    report = models.ForeignKey(JUnitReport, on_delete=models.CASCADE, related_name="cases")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="test_cases")
    suite = models.CharField(max_length=500, blank=True)
    name = models.CharField(max_length=1000)
    classname = models.CharField(max_length=1000, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, db_index=True)
    message = models.TextField(blank=True)
    properties = models.JSONField(default=dict)
    # From the properties when given; coverage falls back to name patterns.
    provider = models.CharField(max_length=100, blank=True, db_index=True)
    tier = models.CharField(max_length=20, blank=True, db_index=True)
    scenario = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["report", "id"]

    def __str__(self) -> str:
        return f"{self.classname}::{self.name}" if self.classname else self.name


class CassetteQuerySet(models.QuerySet["Cassette"]):
    def newest(self, name: str) -> Cassette | None:
        """The stored cassette a request naming ``name`` (with or without ``.json``) replays: the newest, by upload
        time then id. One query for the endpoint's replay and ``load_cassettes``' comparison, as ``--replace``
        relies on the newest being the one replayed."""
        return self.filter(name__in=vcr.cassette_names(name)).order_by("-uploaded_at", "-id").first()


class Cassette(models.Model):
    """A VCR cassette as uploaded, kept byte for byte."""

    name = models.CharField(max_length=300)
    provider = models.CharField(max_length=100, db_index=True)
    scenario = models.CharField(max_length=200, db_index=True)
    content = models.BinaryField()
    digest = models.CharField(max_length=64, unique=True)
    size = models.PositiveIntegerField()
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="cassettes")
    commit = models.CharField(max_length=64, blank=True)
    uploaded_at = models.DateTimeField(auto_now_add=True)

    objects = CassetteQuerySet.as_manager()

    class Meta:
        ordering = ["provider", "scenario", "-uploaded_at"]

    def __str__(self) -> str:
        return self.name


# -- a run's uploaded conversation and artifacts (runs_app/ci/models.py), the judge's criteria sets and batches
# (runs_app/judging/models.py) and the provider test obligations (runs_app/coverage/models.py): defined beside what
# uses them, registered here ------------------------------------------------------------------------------------

from runs_app.batches.models import Batch, StoredFile  # noqa: E402, F401
from runs_app.ci.models import Artifact, RunMessage  # noqa: E402, F401
from runs_app.coverage.models import (  # noqa: E402, F401
    CASSETTES_OBLIGATION,
    NATIVE_SCENARIOS,
    PRESET_SCENARIOS,
    TIERS,
    Provider,
    TierRule,
    Waiver,
)
from runs_app.judging.models import CriteriaSet, JudgeBatch  # noqa: E402, F401
from runs_app.pricing.models import ModelPrice  # noqa: E402, F401
