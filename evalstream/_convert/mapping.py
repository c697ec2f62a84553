"""``--map``, ``--set``, ``--values``: from a table's columns to case fields, typed and checked.

``--map input=question,output=answer,context=passages,metadata.task=task`` assigns columns
to case fields; ``--set expected.claim-support.source=human`` assigns a constant;
``--values expected.claim-support.status=yes:fail,no:pass`` rewrites a mapped column's
values. Every item is checked before any row is read, and an error names the item.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from evalstream._cases import schema
from evalstream._convert import chat, depth
from evalstream._convert.rows import (
    ID_SLOT,
    OWN_ID,
    Built,
    CasePath,
    Notes,
    RowProblem,
    own_id,
    type_word,
)
from evalstream.errors import UsageError

TEXT_FIELDS = ("input", "output", "policy")
LIST_FIELDS = ("context", "messages", "toolEvents")
TARGETS = ("input", "output", "policy", "context", "messages", "toolEvents", "metadata",
           "metadata.KEY", "expected.RUBRIC.status", "expected.RUBRIC.source")
_SPLIT = re.compile(r"(?<!\\),")
# metadata.KEY.KEY...: each key a level of the case, kept far below what convert reads (depth)
MAX_METADATA_KEYS = 32


@dataclass(frozen=True)
class Field:
    """A case field a column or constant goes to: ``("metadata", "a", "b")``,
    ``("expected", "claim-support", "status")``, ``("input",)``."""

    parts: tuple[str, ...]

    def __str__(self) -> str:
        return ".".join(self.parts)

    @property
    def path(self) -> str:
        """The field as a case JSON path, as rejects write it."""
        out = "$"
        for p in self.parts:
            out += f".{p}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) else f'["{p}"]'
        return out


class Step(NamedTuple):
    """One assignment, prepared once for the per-row loop: a column (or a constant) to a
    field, with its value rewrites and the names a reject uses."""

    field: Field
    head: str
    column: str  # the column, or "--set FIELD" for a constant
    constant: bool
    value: Any  # the constant
    table: dict[str, str | None] | None
    name: str  # "metadata.a.b"
    path: str  # "$.metadata.a.b"
    # How ``build`` does the step: the usual ones inline (a Python call a step was a third of
    # a table row's build), the rest by ``_assign``: TEXT a column to input, output or policy
    # as it is; KEY a value to one metadata key; LABEL a label's status or source; CONTEXT
    # passages; OTHER the rest.
    kind: int


TEXT, KEY, LABEL, CONTEXT, OTHER = range(5)


def _kind(f: Field, rewritten: bool) -> int:
    head = f.parts[0]
    if head in TEXT_FIELDS:
        return OTHER if rewritten else TEXT
    if head == "metadata" and len(f.parts) == 2:
        return KEY
    return LABEL if head == "expected" else CONTEXT if head == "context" else OTHER


@dataclass
class Mapping:
    """Where each case field comes from: columns, constants, value rewrites, the id."""

    columns: dict[Field, str] = field(default_factory=dict)
    constants: dict[Field, str] = field(default_factory=dict)
    values: dict[Field, dict[str, str | None]] = field(default_factory=dict)
    id_from: str | None = None
    parse_json: tuple[str, ...] = ()
    keep_unmapped: bool = False
    _steps: list[Step] | None = field(default=None, repr=False, compare=False)
    _ordered: bool = field(default=False, repr=False, compare=False)
    # The origin of each field the inline steps fill: the same for every row (the column a
    # step reads, whatever its value), so one dict serves every row when no step adds
    # origins of its own (``_shared``); else each row starts from a copy (``steps``).
    _origin: dict[CasePath, str] = field(default_factory=dict, repr=False, compare=False)
    _shared: bool = field(default=False, repr=False, compare=False)

    def used_columns(self) -> list[str]:
        """Every column the mapping reads, in the order given."""
        cols = list(dict.fromkeys([*self.columns.values(), *self.parse_json]))
        id_columns = template_columns(self.id_from) if self.id_from and "{" in self.id_from \
            else [self.id_from] if self.id_from else []
        cols += [c for c in id_columns if c not in cols]
        return cols

    def steps(self) -> list[Step]:
        """The assignments in order: columns first, then constants (computed once)."""
        if self._steps is None:
            self._steps = [Step(f, f.parts[0], c, False, None, self.values.get(f), str(f), f.path,
                                _kind(f, f in self.values)) for f, c in self.columns.items()]
            self._steps += [Step(f, f.parts[0], f"--set {f}", True, v, None, str(f), f.path,
                                 _kind(f, True) if f.parts[0] != "context" else OTHER)
                            for f, v in self.constants.items()]
            # The steps fill a case's fields in wire order when those they set directly
            # (metadata and labels come last) come in that order and none reads a chat
            # (which may fill input, output and tool events too): then a case needs no
            # reordering.
            heads = [s.head for s in self._steps if s.head not in ("metadata", "expected")]
            self._ordered = "messages" not in heads and heads == sorted(heads, key=_WIRE.index)
            for s in self._steps:
                if s.kind != OTHER:
                    self._origin[(s.head,) if s.kind in (TEXT, CONTEXT) else s.field.parts] = \
                        s.column
            self._shared = not self.keep_unmapped and all(s.kind != OTHER for s in self._steps)
        return self._steps

    @property
    def in_wire_order(self) -> bool:
        """Whether the steps fill every case in wire order (``steps``)."""
        self.steps()
        return self._ordered

    def describe(self) -> dict[str, str]:
        """Target -> column (``=VALUE`` for a constant), for the report."""
        out = {str(f): c for f, c in self.columns.items()}
        out.update({str(f): f"={v}" for f, v in self.constants.items()})
        return out


def split_items(texts: Sequence[str]) -> list[str]:
    """The comma-separated items of repeated options (``\\,`` keeps a comma in a name)."""
    return [item.replace("\\,", ",").strip() for text in texts for item in _SPLIT.split(text)
            if item.strip()]


def parse_field(text: str, option: str) -> Field:
    """A case field named in an option item, or a UsageError that names the item."""
    parts = tuple(text.strip().split("."))
    head = parts[0]
    if head == "id":
        raise UsageError(f"{option} {text!r}: the case id comes from --id-from COLUMN (without "
                         "it, from the row's own `id`, else a hash of the row); drop `id` from "
                         "the mapping.")
    if len(parts) == 1 and head in (*TEXT_FIELDS, *LIST_FIELDS, "metadata"):
        return Field(parts)
    if head == "metadata" and len(parts) > 1 and all(parts[1:]):
        if len(parts) - 1 > MAX_METADATA_KEYS:
            raise UsageError(f"{option} {text[:80]!r}...: `metadata` keys nest at most "
                             f"{MAX_METADATA_KEYS} levels here ({len(parts) - 1:,} given).")
        return Field(parts)
    if head == "expected" and len(parts) == 3 and parts[1] and parts[2] in ("status", "source"):
        if not schema.is_id(parts[1]):  # else every row would be rejected for its label key
            raise UsageError(f"{option} {text!r}: {parts[1]!r} is not a valid rubric id; "
                             f"rubric ids must be {schema.ID_RULE}.")
        return Field(parts)
    near = difflib.get_close_matches(head, [t.split(".")[0] for t in TARGETS], n=1)
    hint = f" Did you mean `{near[0]}`?" if near and near[0] != head else ""
    raise UsageError(f"{option} {text!r}: `{text}` is not a case field.{hint} Fields: "
                     f"{', '.join(TARGETS)}.")


def parse(maps: Sequence[str], sets: Sequence[str], values: Sequence[str],
          id_from: str | None, parse_json: Sequence[str], keep_unmapped: bool) -> Mapping:
    """The mapping the options describe; every problem is a UsageError naming its item."""
    if id_from is not None and "{" in id_from:
        check_template(id_from)
    mapping = Mapping(id_from=id_from, parse_json=tuple(split_items(parse_json)),
                      keep_unmapped=keep_unmapped)
    for item in split_items(maps):
        target, column = _pair(item, "--map", "FIELD=COLUMN")
        f = parse_field(target, "--map")
        if f in mapping.columns:
            raise UsageError(f"--map {item!r}: `{f}` is already mapped from column "
                             f"{mapping.columns[f]!r}; map each field once.")
        mapping.columns[f] = column
    for item in sets:
        target, value = _pair(item, "--set", "FIELD=VALUE", empty_ok=True)
        f = parse_field(target, "--set")
        if f.parts[0] in (*LIST_FIELDS, "metadata") and len(f.parts) == 1:
            raise UsageError(f"--set {item!r}: `{f}` takes a column, not a constant; use --map.")
        if f in mapping.columns:
            raise UsageError(f"--set {item!r}: `{f}` is already mapped from column "
                             f"{mapping.columns[f]!r}.")
        mapping.constants[f] = value
    for item in values:
        target, pairs = _pair(item, "--values", "FIELD=FROM:TO,FROM:TO")
        f = parse_field(target, "--values")
        if f not in mapping.columns:
            raise UsageError(f"--values {item!r}: `{f}` is not mapped from a column; give "
                             f"--map {f}=COLUMN too.")
        table: dict[str, str | None] = {}
        for pair in split_items([pairs]):
            source, sep, to = pair.rpartition(":")
            if not sep:
                raise UsageError(f"--values {item!r}: {pair!r} is not FROM:TO (an empty TO "
                                 "leaves the field out).")
            table[source] = to or None
        mapping.values[f] = table
    for f in mapping.columns:
        if f.parts[0] == "expected":
            other = Field((*f.parts[:2], "source" if f.parts[2] == "status" else "status"))
            if other not in mapping.columns and other not in mapping.constants:
                raise UsageError(
                    f"`{f}` is mapped but `{other}` is not: a label needs both. Give "
                    f"--map {other}=COLUMN or --set {other}="
                    f"{'human' if other.parts[2] == 'source' else 'pass'}.")
    has = {f.parts[0] for f in [*mapping.columns, *mapping.constants]}
    missing = [t for t in ("input", "output") if t not in has]
    if missing and "messages" not in has:
        raise UsageError(f"map {' and '.join(f'`{t}`' for t in missing)} (e.g. --map "
                         "input=question,output=answer), or map `messages` to a column of chat "
                         "transcripts to take them from it.")
    return mapping


def _pair(item: str, option: str, form: str, empty_ok: bool = False) -> tuple[str, str]:
    target, sep, value = item.partition("=")
    if not sep or not target.strip() or (not value.strip() and not empty_ok):
        raise UsageError(f"{option} {item!r} is not {form}.")
    return target.strip(), value if empty_ok else value.strip()


def check_columns(mapping: Mapping, columns: Sequence[str], source: str) -> None:
    """A UsageError when the mapping names a column the table does not have."""
    have = set(columns)
    for column in mapping.used_columns():
        if column not in have:
            near = difflib.get_close_matches(column, list(columns), n=1, cutoff=0.6)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            listed = ", ".join(repr(c) for c in columns[:20])
            more = f" and {len(columns) - 20} more" if len(columns) > 20 else ""
            raise UsageError(f"{source} has no column {column!r}.{hint} Its columns: "
                             f"{listed}{more}.")


_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
ROW_NUMBER = "#"


def template_columns(template: str) -> list[str]:
    """The columns an id template names (``{#}``, the row number, is not one)."""
    return [c for c in _PLACEHOLDER.findall(template) if c != ROW_NUMBER]


def check_template(template: str) -> None:
    """A UsageError for an id template with an empty or unclosed placeholder."""
    rest = _PLACEHOLDER.sub("", template)
    if "{" in rest or "}" in rest or "" in _PLACEHOLDER.findall(template):
        raise UsageError(f"--id-from {template!r}: write each placeholder as {{COLUMN}} or "
                         "{#} (the row number), e.g. 'halueval.general.{ID}'.")


def fill_template(template: str, values: dict[str, Any], number: int) -> str:
    """An id from a template: ``{COLUMN}`` by the row's value (text or integer), ``{#}`` by the
    row number."""
    def fill(m: re.Match[str]) -> str:
        name = m[1]
        if name == ROW_NUMBER:
            return str(number)
        value = lookup(values, name)
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise RowProblem(f"Column {name!r} (in --id-from) holds {type_word(value)}; an id "
                             "is made of text and integers.", name, "$.id", kind="invalid id")
        return str(value)

    return _PLACEHOLDER.sub(fill, template)


# -- a row -----------------------------------------------------------------------------------------
def lookup(values: dict[str, Any], column: str) -> Any:
    """A row's value for ``column``: the key itself, else a dotted path into nested objects
    (JSON rows), else None."""
    if column in values:
        return values[column]
    if "." in column:
        value: Any = values
        for part in column.split("."):
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value
    return None


def build(values: dict[str, Any], notes: Notes, mapping: Mapping,
          rules: list[chat.FailureRule]) -> Built:
    """A case from one table row under ``mapping``, its id's place held first for the run
    (``rows.ID_SLOT``)."""
    if mapping.parse_json:
        values = _parsed(values, mapping.parse_json)
    steps = mapping.steps()
    # The inline steps' origins are the mapping's (``Mapping._origin``), set once.
    origin = mapping._origin if mapping._shared else dict(mapping._origin)
    case: dict[str, Any] = {"id": ID_SLOT}  # the run fills the id in place (rows.ID_SLOT)
    metadata: dict[str, Any] = {}
    expected: dict[str, dict[str, Any]] = {}
    for step in steps:
        column, kind = step.column, step.kind
        if step.constant:
            value = step.value
        else:
            value = values[column] if column in values else lookup(values, column)
        if kind == TEXT:  # inline, as _assign does each kind
            if value is not None:
                case[step.head] = value
            continue
        table = step.table
        if table is not None and value is not None:
            key = _value_key(value)
            if key not in table:
                allowed = ", ".join(repr(k) for k in table)
                raise RowProblem(f"Column {column!r} holds {key!r}, which --values for "
                                 f"`{step.name}` does not map (it maps {allowed}); add it to "
                                 "--values.", column, step.path, kind="unmapped value")
            value = table[key]
        parts = step.field.parts
        if kind == LABEL:
            expected.setdefault(parts[1], {})[parts[2]] = value
        elif kind == KEY and parts[1] not in metadata:  # else _put says the clash
            metadata[parts[1]] = value
        elif kind == CONTEXT:
            if value is not None:
                case["context"] = _passages(value, column)
        else:
            _assign(step, value, case, metadata, expected, origin, notes, rules)
    if mapping.keep_unmapped:
        used = set(mapping.used_columns())
        if mapping.id_from is None and own_id(values) is not None:
            used.add(OWN_ID)  # the case id: not repeated in metadata
        for column, value in values.items():
            if column not in used:
                _put(metadata, (column,), value, f"metadata.{column}", column)
                origin[("metadata", column)] = column
    if metadata:
        case["metadata"] = metadata
    labels = {}
    for rubric, label in expected.items():
        if label.get("status") is None:
            notes.label(rubric, "absent")
            continue
        notes.label(rubric, str(label["status"]))
        labels[rubric] = {"status": label["status"], "source": label.get("source")}
    if labels:
        case["expected"] = labels
    # `_ordered` was set by the steps() above (in_wire_order would call it again: a row's
    # build is a few microseconds, each call a tenth of one).
    return Built(case if mapping._ordered else _in_wire_order(case), origin)


def _value_key(value: Any) -> str:
    """How a cell is matched against --values: its text, JSON-style for non-strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _parsed(values: dict[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    import msgspec

    out = dict(values)
    for column in columns:
        text = out.get(column)
        if isinstance(text, str):
            try:
                out[column] = depth.loads(text, f"Column {column!r} (--parse-json)", column)
            except msgspec.DecodeError as exc:
                raise RowProblem(f"Column {column!r} is not valid JSON ({exc}); --parse-json "
                                 "columns must hold JSON text.", column, kind="bad JSON cell"
                                 ) from None
    return out


def _assign(step: Step, value: Any, case: dict[str, Any], metadata: dict[str, Any],
            expected: dict[str, dict[str, Any]], origin: dict[CasePath, str], notes: Notes,
            rules: list[chat.FailureRule]) -> None:
    head, parts, column = step.head, step.field.parts, step.column
    if head == "metadata":
        if len(parts) == 1:
            if value is None:
                return
            if not isinstance(value, dict):
                raise RowProblem(f"Column {column!r} holds {type_word(value)}; `metadata` takes "
                                 "an object (map a single value to metadata.KEY).", column,
                                 "$.metadata", kind="wrong type")
            for key, item in value.items():
                _put(metadata, (key,), item, f"metadata.{key}", column)
            origin[("metadata",)] = column
            return
        _put(metadata, parts[1:], value, step.name, column)
        origin[parts] = column
        return
    if head == "expected":
        expected.setdefault(parts[1], {})[parts[2]] = value
        origin[parts] = column
        return
    origin[(head,)] = column
    if value is None:
        return  # null is absent; a required field then rejects the row, naming the column
    if head == "context":
        case["context"] = _passages(value, column)
    elif head == "messages":
        t = chat.transcript(value, column, notes, rules)
        case["messages"] = t.messages
        origin.update({k: v for k, v in t.origin.items() if k[0] == "messages"})
        if t.tool_events:
            case.setdefault("toolEvents", t.tool_events)
            origin.update({k: v for k, v in t.origin.items() if k[0] == "toolEvents"})
        for key in ("input", "output"):
            text = getattr(t, key)
            if text is not None:
                case.setdefault(key, text)
                origin.setdefault((key,), t.origin[(key,)])
    else:
        case[head] = value


def _put(metadata: dict[str, Any], keys: tuple[str, ...], value: Any, name: str,
         column: str) -> None:
    at = metadata
    for key in keys[:-1]:
        inner = at.setdefault(key, {})
        if not isinstance(inner, dict):
            raise RowProblem(f"`{name}` cannot be set: `{key}` already holds a value that is "
                             "not an object.", column, kind="metadata clash")
        at = inner
    if keys[-1] in at:
        raise RowProblem(f"`{name}` is given twice (by two columns, or a column and a "
                         "metadata object); map it once.", column, kind="metadata clash")
    at[keys[-1]] = value


# The ids of a list's passages, generated (c1, c2, ...) as far as a case holds items.
_PASSAGE_IDS = tuple(f"c{i}" for i in range(1, schema.MAX_ITEMS + 1))


def _passages(value: Any, column: str) -> list[dict[str, Any]]:
    """Context from a string (one passage) or a list of strings or {id?, text} objects."""
    if isinstance(value, str):
        return [{"id": "c1", "text": value}]
    if not isinstance(value, (list, tuple)):
        raise RowProblem(f"Column {column!r} holds {type_word(value)}; `context` takes a string "
                         "(one passage) or a list of strings.", column, "$.context",
                         kind="wrong type")
    if len(value) <= len(_PASSAGE_IDS) and all(type(item) is str for item in value):
        # The usual column, a list of texts: its ids made once (0.6 us less for three).
        ids = _PASSAGE_IDS[:len(value)]
        return [{"id": i, "text": item} for i, item in zip(ids, value, strict=True)]
    out = []
    for i, item in enumerate(value):
        if isinstance(item, dict):
            # null is absent (a Parquet struct has every field in every row): generated too
            given = item.get("id")
            out.append({"id": f"c{i + 1}" if given is None else given,
                        **{k: v for k, v in item.items() if k != "id"}})
        else:
            out.append({"id": f"c{i + 1}", "text": item})
    return out


_WIRE = ("id", "input", "output", "messages", "context", "policy", "toolEvents", "metadata",
         "expected")


def _in_wire_order(case: dict[str, Any]) -> dict[str, Any]:
    return {k: case[k] for k in _WIRE if k in case}
