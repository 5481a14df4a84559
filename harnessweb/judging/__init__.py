"""The LLM judge's pure half (seed 001's judge module), with no Django: its vocabulary, the transcript formatter,
the prompt and the verdict read back (``verdicts``), a run's events and uploaded conversation as it reads them
(``transcript``), and its call to a model (``client``). The pytest plugin's ``harness.judge`` and the server's judge
(``runs_app.judging``: saved criteria, batches, stored verdicts) both run on it.
"""
