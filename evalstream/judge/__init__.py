"""Asking an LLM judge: one request builder and one answer parser (shared by the live runner
and, later, batch files), an answer store that never pays twice, rate limits, the live runner.

Modules: ``request`` (the request body for a judge state), ``answer`` (a provider's response
to ``{status, reason}`` or an unscored cause), ``store`` (answers in SQLite, keyed by the
request), ``tokens`` (exact counts of a request's text), ``limits`` (token buckets, adaptive
concurrency), ``inputs`` (the judge states and exact verdicts of a ``build`` output),
``transport`` (HTTP and retries), ``live`` (the two-pass runner), ``report`` (the run report).
The first two know nothing of HTTP, so batch files can reuse them.
"""
