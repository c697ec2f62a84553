"""The case: msgspec Structs for the wire format, with every cap enforced at decode.

Two families of Structs share one definition: the strict one rejects unknown
fields, the lenient one (``--allow-unknown-fields``) ignores them. msgspec
fixes ``forbid_unknown_fields`` per class, hence the factory.
"""


from dataclasses import dataclass
from operator import attrgetter
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

MAX_TEXT_CHARS = 200_000
MAX_ITEMS = 500
MAX_ID_CHARS = 512
ID_PATTERN = r"^[^\s/]+\Z"  # \Z: `$` would accept a final newline

Text = Annotated[str, Meta(max_length=MAX_TEXT_CHARS)]
CaseId = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)]
ItemId = Annotated[str, Meta(min_length=1, max_length=MAX_ID_CHARS)]
Role = Literal["system", "user", "assistant", "tool"]
ToolStatus = Literal["success", "failure"]
LabelStatus = Literal["pass", "fail", "na"]
LabelSource = Literal["synthetic", "human", "imported"]
# Tool inputs and outputs are any JSON value; a string among them is still a text field.
ToolValue = Text | dict[str, Any] | list[Any] | int | float | bool | None

CASE_FIELDS = ("id", "input", "output", "messages", "context", "policy", "toolEvents",
               "metadata", "expected")
MESSAGE_FIELDS = ("id", "role", "content")
PASSAGE_FIELDS = ("id", "text")
TOOL_EVENT_FIELDS = ("id", "name", "status", "input", "output", "error")
LABEL_FIELDS = ("status", "source")


@dataclass(frozen=True)
class CaseTypes:
    """The Struct classes of one family (strict or lenient about unknown fields)."""

    case: type[Struct]
    message: type[Struct]
    passage: type[Struct]
    tool_event: type[Struct]
    label: type[Struct]


def _make_types(forbid_unknown: bool) -> CaseTypes:
    # gc=False: decoded cases hold no reference cycles, and msgspec then skips GC tracking.
    opts: dict[str, Any] = {"forbid_unknown_fields": forbid_unknown, "gc": False,
                            "omit_defaults": True}

    class Message(Struct, **opts):
        id: ItemId
        role: Role
        content: Text

    class Passage(Struct, **opts):
        id: ItemId
        text: Text

    class ToolEvent(Struct, **opts):
        id: ItemId
        name: Text
        status: ToolStatus
        input: ToolValue = None
        output: ToolValue = None
        error: Text | None = None

    class Label(Struct, **opts):
        status: LabelStatus
        source: LabelSource

    class Case(Struct, rename={"tool_events": "toolEvents"}, **opts):
        id: CaseId
        input: Text
        output: Text
        messages: Annotated[list[Message], Meta(max_length=MAX_ITEMS)] | None = None
        context: Annotated[list[Passage], Meta(max_length=MAX_ITEMS)] | None = None
        policy: Text | None = None
        tool_events: Annotated[list[ToolEvent], Meta(max_length=MAX_ITEMS)] | None = None
        metadata: dict[str, Any] | None = None
        expected: dict[str, Label] | None = None

    return CaseTypes(Case, Message, Passage, ToolEvent, Label)


STRICT = _make_types(forbid_unknown=True)
LENIENT = _make_types(forbid_unknown=False)


def case_types(allow_unknown_fields: bool) -> CaseTypes:
    """The Struct family for the given unknown-field policy."""
    return LENIENT if allow_unknown_fields else STRICT


def decoder(allow_unknown_fields: bool = False) -> msgspec.json.Decoder[Any]:
    """A typed decoder for one case; build it once and reuse it."""
    return msgspec.json.Decoder(case_types(allow_unknown_fields).case)


def duplicate_item_id(case: Any) -> tuple[str, str] | None:
    """The JSON path and value of the first repeated message, passage or tool-event id."""
    # Runs for every case: the set is built in C (measured 1.5 -> 1.15 us a case).
    for field, items in (("messages", case.messages), ("context", case.context),
                         ("toolEvents", case.tool_events)):
        if items and len(items) > 1 and len(set(map(_ID, items))) < len(items):
            return _first_repeat(field, items)
    return None


_ID = attrgetter("id")


def _first_repeat(field: str, items: list[Any]) -> tuple[str, str]:
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.id in seen:
            return f"$.{field}[{i}].id", item.id
        seen.add(item.id)
    raise AssertionError("no repeated id")  # only called when the ids repeat
