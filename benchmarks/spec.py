"""The case format as the baselines understand it, in one place.

Every baseline (msgspec, pydantic, stdlib json, jq) validates exactly these rules, so that
they do the same work and produce the same output on the same input:

* a line is one JSON object; empty or whitespace-only lines are skipped, not rejected;
* required ``id`` (a slug: ``[A-Za-z0-9][A-Za-z0-9_-]*``), ``input`` and ``output`` (strings);
* optional ``messages`` [{id, role, content}], ``context`` [{id, text}], ``policy`` (string),
  ``toolEvents`` [{id, name, status, input?, output?, error?}], ``metadata``
  {scenario?, split?} and ``expected`` {rubric id: {status, source}}; every object is closed
  (unknown keys are rejected) and every listed nested key without ``?`` is required;
* ``input``/``output`` of a tool event may be any JSON value and are not inspected;
* every string field is at most ``STR_CAP`` characters (code points), every list at most
  ``LIST_CAP`` items;
* an optional field that is ``null`` counts as absent and is left out of the state (this
  includes a tool event's ``input``/``output``); ``null`` *inside* those values is kept.
"""

from __future__ import annotations

from typing import Final

STR_CAP: Final = 200_000
LIST_CAP: Final = 500

ROLES: Final = ("system", "user", "assistant", "tool")
TOOL_STATUSES: Final = ("success", "failure")
LABEL_STATUSES: Final = ("pass", "fail", "na")
LABEL_SOURCES: Final = ("synthetic", "human", "imported")
RUBRIC_IDS: Final = ("booking-claim", "claim-support", "policy-compliance", "escalation")

# The same slug rule for each regex engine: Python's ``re`` (``$`` would accept a trailing
# newline, hence ``\A``/``\Z``), Rust's ``regex`` used by pydantic (``$`` is end of text) and
# Oniguruma used by jq (``\z``).
SLUG_CHARS: Final = r"[A-Za-z0-9][A-Za-z0-9_-]*"
SLUG_PY: Final = rf"\A{SLUG_CHARS}\Z"
SLUG_RUST: Final = rf"^{SLUG_CHARS}$"
SLUG_ONIG: Final = rf"\A{SLUG_CHARS}\z"

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
