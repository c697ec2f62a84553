"""A reject record with its file (``rejects.FileReject``): ``file``, then a ``Reject``'s
fields in their order, so that its lines are a reject's with the file first."""

from __future__ import annotations

import ast

import msgspec

from evalstream._cases.rejects import FileReject, Reject
from tests.helpers import ROOT


def test_a_file_reject_is_a_reject_with_its_file_first() -> None:
    fields = [(f.name, f.type) for f in msgspec.structs.fields(FileReject)]
    assert fields == [("file", str), *((f.name, f.type) for f in msgspec.structs.fields(Reject))]
    reject = Reject(3, 120, "c-1", "$.input", "Expected `str`, got `int`", '{"input": 1}')
    line = msgspec.json.encode(FileReject.of("cases.jsonl", reject))
    assert line == b'{"file":"cases.jsonl",' + msgspec.json.encode(reject)[1:]


def test_file_rejects_are_made_from_rejects() -> None:
    """Only ``FileReject.of`` spells its fields: a caller gives it the ``Reject``."""
    made = []
    for path in sorted((ROOT / "evalstream").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "FileReject":
                made.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert made == [], f"make a file's reject with `FileReject.of(file, reject)`: {made}"
