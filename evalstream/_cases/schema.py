"""The case: msgspec Structs for the wire format, with every cap enforced at decode."""

import json
import re
from operator import attrgetter
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta, Struct

MAX_TEXT_CHARS = 200_000
MAX_ITEMS = 500
MAX_ID_CHARS = 512
ID_PATTERN = r"^[^\s/]+\Z"  # \Z: `$` would accept a final newline
# The one rule for the ids that name things across files (case ids, rubric ids: label keys,
# rubric files, judge states, verdicts), as sentences say it. Item ids (messages, passages,
# tool events) name things within one case: any text of 1 to MAX_ID_CHARS characters.
ID_RULE = f"non-empty, at most {MAX_ID_CHARS:,} characters, without whitespace or `/`"

Text = Annotated[str, Meta(max_length=MAX_TEXT_CHARS)]
CaseId = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)]
ItemId = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS)]
# A label's key names a rubric: the rubric-id rule, as verdicts' `rubric_id`.
RubricId = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)]
_ID_MATCH = re.compile(ID_PATTERN).match


def is_id(text: str) -> bool:
    """Whether ``text`` is a valid case or rubric id (``ID_RULE``, as ``CaseId`` and
    ``RubricId`` decode)."""
    return 0 < len(text) <= MAX_ID_CHARS and _ID_MATCH(text) is not None


Role = Literal["system", "user", "assistant", "tool"]
ToolStatus = Literal["success", "failure"]
LabelStatus = Literal["pass", "fail", "na"]
LabelSource = Literal["synthetic", "human", "imported"]
# In this order everywhere they are coded or counted (columns, report keys): never reorder.
LABEL_STATUSES: tuple[str, ...] = get_args(LabelStatus)
LABEL_SOURCES: tuple[str, ...] = get_args(LabelSource)
# Tool inputs and outputs are any JSON value; a string among them is still a text field.
ToolValue = Text | dict[str, Any] | list[Any] | int | float | bool | None

CASE_FIELDS = ("id", "input", "output", "messages", "context", "policy", "toolEvents",
               "metadata", "expected")
MESSAGE_FIELDS = ("id", "role", "content")
PASSAGE_FIELDS = ("id", "text")
TOOL_EVENT_FIELDS = ("id", "name", "status", "input", "output", "error")
LABEL_FIELDS = ("status", "source")


# gc=False: decoded cases hold no reference cycles, and msgspec then skips GC tracking.
class Message(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """One turn of the transcript."""

    id: ItemId
    role: Role
    content: Text


class Passage(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """One retrieved passage or piece of ground truth."""

    id: ItemId
    text: Text


class ToolEvent(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """One recorded tool call; ``input`` and ``output`` are any JSON value."""

    id: ItemId
    name: Text
    status: ToolStatus
    input: ToolValue = None
    output: ToolValue = None
    error: Text | None = None


class Label(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True):
    """A provisional expected verdict for one rubric, and where it came from."""

    status: LabelStatus
    source: LabelSource


class Case(Struct, forbid_unknown_fields=True, gc=False, omit_defaults=True,
           rename={"tool_events": "toolEvents"}):
    """One evaluation case (wire format camelCase: ``toolEvents``). ``None`` means absent."""

    id: CaseId
    input: Text
    output: Text
    messages: Annotated[list[Message], Meta(max_length=MAX_ITEMS)] | None = None
    context: Annotated[list[Passage], Meta(max_length=MAX_ITEMS)] | None = None
    policy: Text | None = None
    tool_events: Annotated[list[ToolEvent], Meta(max_length=MAX_ITEMS)] | None = None
    metadata: dict[str, Any] | None = None
    expected: Annotated[dict[RubricId, Label], Meta(max_length=MAX_ITEMS)] | None = None


# ``--allow-unknown-fields``: the same types, ignoring fields they do not know. Subclasses,
# so a lenient case is a ``Case`` too (msgspec fixes the unknown-field rule per class).
class _LenientMessage(Message, forbid_unknown_fields=False):
    pass


class _LenientPassage(Passage, forbid_unknown_fields=False):
    pass


class _LenientToolEvent(ToolEvent, forbid_unknown_fields=False):
    pass


class _LenientLabel(Label, forbid_unknown_fields=False):
    pass


class _LenientCase(Case, forbid_unknown_fields=False):
    # The item types narrowed to their lenient subclasses (lists are invariant for mypy).
    messages: Annotated[list[_LenientMessage], Meta(max_length=MAX_ITEMS)] | None = None  # type: ignore[assignment]
    context: Annotated[list[_LenientPassage], Meta(max_length=MAX_ITEMS)] | None = None  # type: ignore[assignment]
    tool_events: Annotated[list[_LenientToolEvent], Meta(max_length=MAX_ITEMS)] | None = None  # type: ignore[assignment]
    expected: Annotated[dict[RubricId, _LenientLabel], Meta(max_length=MAX_ITEMS)] | None = None  # type: ignore[assignment]


def decoder(allow_unknown_fields: bool = False) -> msgspec.json.Decoder[Case]:
    """A typed decoder for one case; build it once and reuse it."""
    return msgspec.json.Decoder(_LenientCase if allow_unknown_fields else Case)


def group_value(metadata: dict[str, Any] | None, path: tuple[str, ...]) -> str | None:
    """The metadata value at a dotted path as text (JSON for non-strings), None when absent:
    a case's group for ``--by`` (agree, and the filters of view)."""
    value: Any = metadata
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def duplicate_item_id(case: Case) -> tuple[str, str] | None:
    """The JSON path and value of the first repeated message, passage or tool-event id."""
    # Runs for every case: the set is built in C (measured 1.5 -> 1.15 us a case), and the
    # three lists are tested one after the other, not looped over as a tuple of pairs made
    # for each case (2.0 -> 1.25 us a case on `benchmarks generate` cases, 2026-12-05).
    items: list[Any] | None = case.messages
    if items and len(items) > 1 and len(set(map(_ID, items))) < len(items):
        return _first_repeat("messages", items)
    items = case.context
    if items and len(items) > 1 and len(set(map(_ID, items))) < len(items):
        return _first_repeat("context", items)
    items = case.tool_events
    if items and len(items) > 1 and len(set(map(_ID, items))) < len(items):
        return _first_repeat("toolEvents", items)
    return None


_ID = attrgetter("id")


def _first_repeat(field: str, items: list[Any]) -> tuple[str, str]:
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.id in seen:
            return f"$.{field}[{i}].id", item.id
        seen.add(item.id)
    raise AssertionError("no repeated id")  # only called when the ids repeat


# -- text nested in free-form values -----------------------------------------------------------
def long_nested_text(case: Case, limit: int = MAX_TEXT_CHARS) -> tuple[str, int, bool] | None:
    """The first string or key over ``limit`` characters inside tool events' ``input`` and
    ``output`` and in ``metadata`` (their JSON path, length, and whether it is a key), or
    None. These hold any JSON, so the decoder cannot cap their strings; the rule is the
    same as for every text field. Order: tool events by index (input, then output), then
    metadata, each depth first in the order of the line."""
    roots: list[tuple[Any, str]] = []
    for i, event in enumerate(case.tool_events or ()):
        for name in ("input", "output"):
            value = getattr(event, name)
            if isinstance(value, (dict, list)):
                roots.append((value, f"$.toolEvents[{i}].{name}"))
    if case.metadata:
        roots.append((case.metadata, "$.metadata"))
    for root, path in roots:
        # (value, its path, its key and the path of the object holding it, or None);
        # iterative: values may nest as deep as the parser allows.
        todo: list[tuple[Any, str, tuple[str, str] | None]] = [(root, path, None)]
        while todo:
            value, at, key = todo.pop()
            if key is not None and len(key[0]) > limit:
                return key[1], len(key[0]), True
            if isinstance(value, str):
                if len(value) > limit:
                    return at, len(value), False
            elif isinstance(value, dict):
                todo.extend((child, key_path(at, k), (k, at))
                            for k, child in reversed(list(value.items())))
            elif isinstance(value, list):
                todo.extend((value[i], f"{at}[{i}]", None) for i in range(len(value) - 1, -1, -1))
    return None


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def key_path(path: str, key: str) -> str:
    """``path`` + ``.key``, or ``["key"]`` when the key is not a plain name."""
    if _PLAIN_KEY.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
