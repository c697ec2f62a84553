"""Asking an LLM judge: one request builder and one answer parser (shared by the live runner
and, later, batch files), an answer store that never pays twice, rate limits, the live runner.

Modules: ``request`` (the request body for a judge state, and its store key), ``answer`` (a
provider's response to ``{status, reason}`` or an unscored cause), ``inputs`` (build's
output read through the one read loop), ``store`` (answers in SQLite, keyed by the request),
``tokens`` (exact counts of a request's text), ``limits`` (token buckets, adaptive
concurrency), ``transport`` (HTTP with the one retry layer), ``live`` (the two-pass runner),
``dryrun`` (what a run would send and cost), ``report`` (the run report). ``request`` and
``answer`` know nothing of HTTP, so batch files can reuse them.
"""
