"""Scenarios: the model, the pure engine and wire protocols that play them, their storage, loaders and editor."""
