"""Management commands of scenarios_app."""
