"""Management commands of runs_app."""
