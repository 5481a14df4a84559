"""The pure core, with no Django: the scenario schema and files, the engine that plays scenarios, the wire
protocols and the route table of the fake endpoints.

It lives inside the ``harnessweb`` package so that the pytest plugin, installed into another project's virtualenv,
carries it without claiming a generic top-level name there, and runs it in-process with no Django settings.
"""
