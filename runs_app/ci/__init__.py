"""The CI REST API: runs, trace logs, judge verdicts, JUnit results and VCR cassettes uploaded by CI jobs."""
