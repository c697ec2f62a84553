"""``--from json``: a JSON array of row objects, streamed element by element
(``tables.json_array_rows``); ``--map`` keys, dots reaching nested keys."""

from __future__ import annotations

from evalstream._convert.formats.base import Format, Given, Source


def _open(given: Given) -> Source:
    from evalstream._convert.tables import json_array_rows

    return given.table(json_array_rows(given.stream(), given.path), None)


FORMAT = Format(
    "json", "a JSON array of objects; --map keys (dots reach nested keys)", _open,
    options=("mapping", "id_from", "tool_failure_when"), stream=True, suffixes=(".json",),
    kinds=("json-array",), guess=True,
    mistakes={"json-document": "is one JSON document, not a JSON array of rows; give the rows "
                               "as an array or as JSONL (`jq -c '.KEY[]' FILE`)"},
    advise=lambda found, command: f"{found.fix}, or convert it: {command}"
    if found.kind == "json-array" else None)  # its fix writes one element a line
