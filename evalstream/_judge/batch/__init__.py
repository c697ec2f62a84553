"""Judging through the providers' batch APIs: ``prepare`` request files and a manifest,
``submit`` them, follow their ``status``, ``collect`` the results into verdicts.

Modules: ``formats`` (OpenAI / Anthropic request lines and result lines), ``manifest`` (the
folder's SQLite map from ``custom_id`` back to judge states, and what submit learned),
``prepare`` (states -> request files split at the providers' limits), ``results`` (result
files read through the one read loop), ``collect`` (results -> the answer store -> verdicts),
``client`` (the files and batches endpoints, over aiohttp), ``remote`` (submit and status),
``report`` (the reports). Requests come from ``judge.request`` and answers are read by
``judge.answer``, exactly as in a live run: a request's ``custom_id`` is its store key, so a
batch answer and a live answer to the same request are one stored answer.
"""
