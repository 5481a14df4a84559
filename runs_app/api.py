"""The runs_app REST router: runs, trace logs, judge verdicts, JUnit results, cassettes and coverage."""

from ninja import Router

router = Router()
