"""The overview page: the home after log-in (figures, their queries, the page)."""
