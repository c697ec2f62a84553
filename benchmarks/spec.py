"""The case format as the baselines understand it, in one place: evalstream's schema.

These are the rules of ``evalstream/schema.py`` (the truth; ``python -m benchmarks
check-evalstream`` compares the constants below with it), written out so that the baselines
do not import evalstream. Every baseline (msgspec, pydantic, stdlib json, jq) validates
exactly these rules, so that they do the same work and produce the same output:

* a line is one JSON object; empty or whitespace-only lines are skipped, not rejected;
* required ``id``, ``input`` and ``output``: ``input``/``output`` are text fields; ``id`` is
  1-``ID_CAP`` characters with no whitespace and no ``/`` (whitespace as Python's ``str``
  knows it, see ``CASE_ID_PY``);
* optional ``messages`` [{id, role, content}], ``context`` [{id, text}], ``policy`` (text),
  ``toolEvents`` [{id, name, status, input?, output?, error?}], ``metadata`` (any JSON
  object) and ``expected`` {rubric id: {status, source}}; every object but ``metadata``
  and ``expected`` is closed (unknown keys are rejected), every nested key without ``?``
  is required, and ``role``, ``status`` and ``source`` are enums (below);
* a message, passage or tool-event ``id`` is 1-``ID_CAP`` characters (any characters);
* a tool event's ``name`` is a text field and its ``error`` text or ``null``; its
  ``input``/``output`` may be any JSON value, and when that value is a string it is a text
  field (a string nested inside an object or list is not capped);
* a text field is a string of at most ``TEXT_CAP`` characters (code points); every list is
  at most ``LIST_CAP`` items; a rubric id (a key of ``expected``) is any string;
* numbers anywhere in the line must be finite doubles or integers of at most 4,300 digits:
  ``1e400``, ``NaN`` and ``Infinity`` are rejected, as msgspec (and so evalstream) does;
* an optional field that is ``null`` counts as absent and is left out of the state (this
  includes a tool event's ``input``/``output``/``error``); ``null`` *inside* those values is
  kept.

The judge state is evalstream's: the present fields under their state names, in
``STATE_NAMES`` order, nested keys in schema order. What evalstream's ``build`` does beyond
this (duplicate case and item ids, long lines, a UTF-8 BOM, token budgets, hashes and
exposure records) is not part of the baselines' job.
"""

from __future__ import annotations

from typing import Final

TEXT_CAP: Final = 200_000
LIST_CAP: Final = 500
ID_CAP: Final = 512

ROLES: Final = ("system", "user", "assistant", "tool")
TOOL_STATUSES: Final = ("success", "failure")
LABEL_STATUSES: Final = ("pass", "fail", "na")
LABEL_SOURCES: Final = ("synthetic", "human", "imported")
RUBRIC_IDS: Final = ("tool-backed-claims", "claim-support", "policy-compliance", "escalation")

# The case-id rule for each regex engine. Python's ``\s`` (evalstream uses msgspec, which uses
# ``re``) is the reference: it matches everything ``str.isspace`` does, which is Unicode's
# White_Space plus the separators U+001C-U+001F; Rust's ``regex`` (pydantic) and Oniguruma
# (jq) follow White_Space only, so those four are added there. Anchors: ``\A``/``\Z`` in
# Python (``$`` would let a trailing newline through), ``^``/``$`` in Rust (end of text),
# ``\A``/``\z`` in Oniguruma. Lengths are checked by each engine's own length cap.
CASE_ID_PY: Final = r"\A[^\s/]+\Z"
CASE_ID_RUST: Final = r"^[^\s\x1c-\x1f/]+$"
CASE_ID_ONIG: Final = r"\A[^\s\x1c-\x1f/]+\z"

# Case field -> judge-state name, in the order the state lists them.
STATE_NAMES: Final = {
    "input": "user_input",
    "output": "assistant_response",
    "messages": "conversation",
    "context": "reference_material",
    "policy": "policy",
    "toolEvents": "tool_events",
}

CASE_KEYS: Final = ("id", *STATE_NAMES, "metadata", "expected")
MESSAGE_KEYS: Final = ("id", "role", "content")
PASSAGE_KEYS: Final = ("id", "text")
TOOL_EVENT_KEYS: Final = ("id", "name", "status", "input", "output", "error")
LABEL_KEYS: Final = ("status", "source")
