"""Scenario files stored in the database: what ``load_scenarios`` and ``restore_examples`` write.

A scenario missing from the database is created; one stored as the file says is left alone; one stored differently
(edited in the dashboard, the API or the admin since it was loaded, loaded from another file, or its file changed
since: nothing tells these apart) is kept as it is and said so, unless the caller asks to replace it: then the
file's becomes a new version and the stored one stays in the history. So re-running ``make run`` never undoes what
somebody saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harnessweb.engine import schemas
from scenarios_app.models import Scenario, ScenarioVersion

# The examples `make run` loads; `manage.py restore_examples` takes them back.
EXAMPLES = Path(__file__).resolve().parent / "examples"


@dataclass(frozen=True)
class Stored:
    """What happened to one scenario of a file: ``outcome`` is created, updated, unchanged or kept (it differs
    from the file and was left as stored); ``reason`` says why a kept one was kept and how to take the file's."""

    scenario_id: str
    path: Path
    outcome: str
    reason: str = ""

    def line(self) -> str:
        line = f"{self.outcome:<9}  {self.scenario_id}  ({self.path})"
        return f"{line}: {self.reason}" if self.reason else line


def is_example(path: Path) -> bool:
    """Whether ``path`` is one of the shipped example files."""
    return path.resolve().is_relative_to(EXAMPLES)


def how_to_replace(scenario_id: str, path: Path) -> str:
    """The command that writes the file's scenario over a stored one that differs."""
    if is_example(path):
        return f"manage.py restore_examples {scenario_id}"
    return f"manage.py load_scenarios --replace {path}"


def _last_saved(row: Scenario) -> str:
    version = ScenarioVersion.objects.filter(scenario=row).select_related("saved_by").order_by("-number").first()
    if version is None:
        return f"saved {row.updated_at:%Y-%m-%d %H:%M}"
    who = f" by {version.saved_by.get_username()}" if version.saved_by else ""
    return f"v{version.number}, saved {version.saved_at:%Y-%m-%d %H:%M}{who}"


def store(
    loaded: Sequence[tuple[Path, schemas.Scenario]], *, replace: bool = False, note: str = "loaded from {path}"
) -> list[Stored]:
    """Store each file's scenario; call inside a transaction (the caller's: all or nothing).

    ``replace`` writes the file's over a stored scenario that differs (a new version, the old one kept in the
    history); without it such a scenario is ``kept``. ``note`` is the new version's note (``{path}`` filled in).
    """
    results = []
    for path, scenario in loaded:
        row = Scenario.objects.select_for_update().filter(id=scenario.id).first()
        if row is not None and not replace and row.data != scenario.canonical():
            reason = (
                f"the stored scenario ({_last_saved(row)}) differs from this file and was kept; "
                f"take the file's with: {how_to_replace(scenario.id, path)}"
            )
            results.append(Stored(scenario.id, path, "kept", reason))
            continue
        _, outcome = Scenario.upsert(scenario, note=note.format(path=path))
        results.append(Stored(scenario.id, path, outcome))
    return results
