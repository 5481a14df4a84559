"""Template filters of runs_app."""
