"""Asking an LLM judge: one request builder and one answer parser (shared by the live runner
and batch files), the providers, an answer store that never pays twice, rate limits, the live
runner.

Modules: ``answer`` (the checks of an answer: ``{status, reason}`` or an unscored cause),
``providers`` (one module per provider behind ``providers.base.Provider``, and the registry:
what differs between providers' APIs, from the body's shape to the batch endpoints),
``request`` (the request body for a judge state, and its store key), ``inputs`` (build's
output read through the one read loop), ``store`` (answers in SQLite, keyed by the request),
``tokens`` (exact counts of a request's text), ``limits`` (token buckets, adaptive
concurrency), ``transport`` (HTTP with the one retry layer), ``live`` (the two-pass runner),
``dryrun`` (what a run would send and cost), ``report`` (the run report). ``request``,
``answer`` and the providers' bodies and answers know nothing of HTTP, so batch files reuse
them.
"""
