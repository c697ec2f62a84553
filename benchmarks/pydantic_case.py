"""The case format (see ``benchmarks.spec``) as pydantic v2 models, for the pydantic baseline.

Kept apart from ``baselines`` so that the other baselines do not pay pydantic's import time.
Fields carry the judge-state name as their serialisation alias, so an output line is one
``Row(case_id=..., state=case).model_dump_json(by_alias=True, exclude_none=True,
exclude=ROW_EXCLUDE)``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

from benchmarks.spec import CASE_ID_RUST, ID_CAP, LIST_CAP, TEXT_CAP

Text = Annotated[str, Field(max_length=TEXT_CAP)]
CaseId = Annotated[str, Field(min_length=1, max_length=ID_CAP, pattern=CASE_ID_RUST)]
ItemId = Annotated[str, Field(min_length=1, max_length=ID_CAP)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
# Any JSON value. Not `Any`: pydantic's JSON parser accepts NaN, Infinity and 1e400 (as inf)
# and would write them as null, where msgspec rejects the line; a float has to say it is finite
# at every depth. Nested strings are not capped.
Json = TypeAliasType("Json", "Union[dict[str, Json], list[Json], str, int, Finite, bool, None]")
# A tool event's input/output: any JSON value, but a string is a text field.
ToolValue = Text | dict[str, Json] | list[Json] | int | Finite | bool | None


class _Closed(BaseModel):
    """Base of every model: unknown keys are errors and nothing is coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Message(_Closed):
    id: ItemId
    role: Literal["system", "user", "assistant", "tool"]
    content: Text


class Passage(_Closed):
    id: ItemId
    text: Text


class ToolEvent(_Closed):
    id: ItemId
    name: Text
    status: Literal["success", "failure"]
    input: ToolValue = None
    output: ToolValue = None
    error: Text | None = None


class Label(_Closed):
    status: Literal["pass", "fail", "na"]
    source: Literal["synthetic", "human", "imported"]


class Case(_Closed):
    id: CaseId
    input: Text = Field(serialization_alias="user_input")
    output: Text = Field(serialization_alias="assistant_response")
    messages: Annotated[list[Message], Field(max_length=LIST_CAP)] | None = Field(
        None, serialization_alias="conversation"
    )
    context: Annotated[list[Passage], Field(max_length=LIST_CAP)] | None = Field(
        None, serialization_alias="reference_material"
    )
    policy: Text | None = None
    # Named as in the JSON, not `tool_events` with an alias: pydantic ignores (rather than
    # forbids) a key that spells a field's Python name, so `"tool_events": [...]` would pass.
    toolEvents: Annotated[list[ToolEvent], Field(max_length=LIST_CAP)] | None = Field(
        None, serialization_alias="tool_events"
    )
    metadata: dict[str, Json] | None = None
    expected: dict[str, Label] | None = None


class Row(BaseModel):
    """One output line: the case id and the case, of which only the state fields are dumped."""

    case_id: str
    state: Case


ROW_EXCLUDE = {"state": {"id", "metadata", "expected"}}
