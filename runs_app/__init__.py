"""Runs: the fake provider endpoint that plays scenarios and records each conversation, the runs pages, the CI
API, verdict review and provider coverage."""
