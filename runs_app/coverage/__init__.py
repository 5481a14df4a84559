"""Provider test-obligation coverage: the report, the grid page with its evidence, and the coverage admin."""
