"""The LLM judge (seed 001): prompt and verdict parsing, the call, transcripts of runs, saved criteria, batches."""
