"""The LLM judge on the server (seed 001): transcripts of stored runs, saved criteria, batches, the judge's pages and
API, verdicts stored for review. Its pure half (prompt, verdict parsing, transcript of events, the call) is the core's
:mod:`harnessweb.judging`."""
