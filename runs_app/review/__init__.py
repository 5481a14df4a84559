"""Reviewing judge verdicts: the rules (effective verdicts, overrides, undo), the verdict admin and review queue."""
