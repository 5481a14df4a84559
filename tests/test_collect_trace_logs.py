"""``manage.py collect_trace_logs RUN DIR [--turn N]``: a folder's trace log files (seed 001's layout, in path order)
as a run's turns with their footers' outcomes; collecting again stores nothing twice; a secret, a binary or
unreadable file, an unknown run or a missing or empty folder is a CommandError with nothing written."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from harnessweb.engine.redaction import fingerprint
from runs_app.models import TraceLog
from tests.conftest import make_ci_run, make_trace_log

pytestmark = pytest.mark.django_db

SECRET = "sk-ant-api03-Zr8vT9mWcR2pL8sKdN5fHj7gYb4uEa6zQo1iVt0wxyzB"


def seed_logs(folder: Path) -> list[Path]:
    """Three turns over two days, written as seed 001's TraceLogger does, plus a hidden file a writer left."""
    files = {
        "2026-11-24/23-59-58_req-a.log": "turn one\nSUCCESS\n",
        "2026-11-24/23-59-59_req-b.log": "turn two\ntool failed\n--- FAILED: timeout ---\n",
        "2026-11-25/00-00-03_req-c.log": "turn three, no footer",
        "2026-11-25/.00-00-04_req-d.log.tmp": "half written",
    }
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content)
    return [(folder / name).resolve() for name in list(files)[:3]]


def collect(*args: str) -> str:
    out = StringIO()
    call_command("collect_trace_logs", *args, stdout=out)
    return out.getvalue()


def stored(run: object) -> list[tuple[int, str, str]]:
    return list(
        TraceLog.objects.filter(run=run).order_by("turn_number").values_list("turn_number", "file_path", "outcome")
    )


def test_it_stores_the_files_in_path_order_as_turns_with_their_outcomes(tmp_path: Path) -> None:
    run = make_ci_run()
    files = seed_logs(tmp_path)

    out = collect(str(run.id), str(tmp_path))

    assert stored(run) == [(1, str(files[0]), "success"), (2, str(files[1]), "failed"), (3, str(files[2]), "")]
    assert TraceLog.objects.get(run=run, turn_number=3).content == "turn three, no footer"
    assert "3 trace log(s) stored, 0 refreshed, 0 unchanged" in out


def test_collecting_again_stores_nothing_twice_and_refreshes_what_changed(tmp_path: Path) -> None:
    run = make_ci_run()
    files = seed_logs(tmp_path)
    collect(str(run.id), str(tmp_path))
    assert "0 trace log(s) stored, 0 refreshed, 3 unchanged" in collect(str(run.id), str(tmp_path))

    files[2].write_text("turn three, no footer\nSUCCESS\n")  # finished since
    (tmp_path / "2026-11-25" / "00-01-00_req-e.log").write_text("turn four\nFAILED\n")  # a later turn
    out = collect(str(run.id), str(tmp_path))

    assert "1 trace log(s) stored, 1 refreshed, 2 unchanged" in out
    assert [(turn, outcome) for turn, _, outcome in stored(run)] == [
        (1, "success"),
        (2, "failed"),
        (3, "success"),
        (4, "failed"),
    ]
    assert TraceLog.objects.filter(run=run).count() == 4


def test_turn_places_a_folder_after_the_run_s_turns_and_the_run_may_be_named_by_its_external_id(
    tmp_path: Path,
) -> None:
    run = make_ci_run(external_id="gh-123-e2e")
    make_trace_log(run, turn_number=1, file_path="uploaded.log", content="SUCCESS")
    (tmp_path / "10-00-05_r2.log").write_text("second\nFAILED")

    collect("gh-123-e2e", str(tmp_path), "--turn", "2")

    assert [(turn, outcome) for turn, _, outcome in stored(run)] == [(1, ""), (2, "failed")]


def test_a_turn_held_by_another_file_stops_it_with_nothing_written(tmp_path: Path) -> None:
    run = make_ci_run()
    make_trace_log(run, turn_number=2, file_path="/elsewhere/turn2.log")
    seed_logs(tmp_path)

    with pytest.raises(CommandError, match=r"turn 2 of run .* already holds /elsewhere/turn2.log.*--turn"):
        collect(str(run.id), str(tmp_path))

    assert [turn for turn, _, _ in stored(run)] == [2]


def test_a_log_holding_a_secret_is_refused_naming_file_and_line_and_nothing_is_stored(tmp_path: Path) -> None:
    run = make_ci_run()
    seed_logs(tmp_path)
    leaky = tmp_path / "2026-11-25" / "00-00-09_req-x.log"
    leaky.write_text(f"start\ncalled with key {SECRET}\nSUCCESS\n")

    with pytest.raises(CommandError) as caught:
        collect(str(run.id), str(tmp_path))

    message = str(caught.value)
    assert str(leaky.resolve()) in message and "line 2" in message and "Nothing was stored" in message
    assert SECRET not in message
    assert not TraceLog.objects.filter(run=run).exists()


def test_a_secret_in_a_file_s_path_is_stored_redacted(tmp_path: Path) -> None:
    run = make_ci_run()
    folder = tmp_path / SECRET
    folder.mkdir()
    (folder / "a.log").write_text("SUCCESS")

    collect(str(run.id), str(folder))

    path = TraceLog.objects.get(run=run).file_path
    assert SECRET not in path and f"[REDACTED:{fingerprint(SECRET)}]" in path


def test_a_binary_file_is_refused(tmp_path: Path) -> None:
    run = make_ci_run()
    seed_logs(tmp_path)
    (tmp_path / "2026-11-25" / "core.bin").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")

    with pytest.raises(CommandError, match=r"core.bin: not a text file \(not UTF-8 at byte 0\)"):
        collect(str(run.id), str(tmp_path))
    assert not TraceLog.objects.exists()


def test_a_file_with_nul_bytes_is_refused(tmp_path: Path) -> None:
    run = make_ci_run()
    (tmp_path / "a.log").write_bytes(b"text\x00more")

    with pytest.raises(CommandError, match=r"a.log: not a text file \(it holds NUL bytes\)"):
        collect(str(run.id), str(tmp_path))


def test_an_unreadable_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_ci_run()
    seed_logs(tmp_path)
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "23-59-59_req-b.log":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)

    with pytest.raises(CommandError, match=r"23-59-59_req-b.log: cannot be read \(Permission denied\)"):
        collect(str(run.id), str(tmp_path))
    assert not TraceLog.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["00000000-0000-0000-0000-000000000000", "."], "RUN '00000000-0000-0000-0000-000000000000': no run has"),
        (["no-such-run", "."], "RUN 'no-such-run': no run has this id or external id"),
    ],
)
def test_an_unknown_run_is_refused(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        collect(*args)


def test_a_missing_or_empty_folder_is_refused(tmp_path: Path) -> None:
    run = make_ci_run()
    with pytest.raises(CommandError, match=r"/missing: no such folder\. Nothing was stored"):
        collect(str(run.id), str(tmp_path / "missing"))
    (tmp_path / "empty" / "2026-11-24").mkdir(parents=True)
    (tmp_path / "empty" / ".hidden.log").write_text("SUCCESS")
    with pytest.raises(CommandError, match=r"/empty: holds no trace log files"):
        collect(str(run.id), str(tmp_path / "empty"))


def test_a_turn_below_one_is_refused(tmp_path: Path) -> None:
    run = make_ci_run()
    with pytest.raises(CommandError, match="--turn must be 1 or more, not 0"):
        collect(str(run.id), str(tmp_path), "--turn", "0")
