"""Judging through the providers' batch APIs: ``prepare`` request files and a manifest,
``submit`` them, follow their ``status``, ``collect`` the results into verdicts.

Modules: ``formats`` (the result-line envelope and outcome; each provider's request and
result lines are in its module, ``evalstream._judge.providers``), ``manifest`` (the
folder's SQLite map from ``custom_id`` back to judge states, and what submit learned),
``prepare`` (states -> request files split at the providers' limits), ``results`` (result
files read through the one read loop), ``collect`` (results -> the answer store -> verdicts),
``client`` (calls to the files and batches endpoints, over aiohttp), ``remote`` (submit and
status, through the provider's endpoints), ``report`` (the reports). Requests come from
``judge.request`` and answers are read by the provider's ``parse``, exactly as in a live run:
a request's ``custom_id`` is its store key, so a batch answer and a live answer to the same
request are one stored answer.
"""
