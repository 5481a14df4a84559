"""The runs list and a run's page, rendered from the database and kept live over WebSockets."""
