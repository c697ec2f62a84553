"""Compare two state files line by line: ``python -m benchmarks compare A.jsonl B.jsonl``.

Each pair of lines is classed as ``identical`` (same bytes), ``same-value`` (same JSON once
parsed, keys in the same order: only the spelling differs, e.g. ``1e-07``/``1e-7`` or an
escaped ``\\u007f``), ``key-order`` (same once keys are sorted), ``number-format`` (same once
integral floats are also written as ints, e.g. jq prints ``3.0`` as ``3``) or ``different``.
Exit status 0 unless some line is different or one file has more lines than the other.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

KINDS = ("identical", "same-value", "key-order", "number-format", "different")


@dataclass
class Comparison:
    """How many line pairs fell in each kind, and the first line number of each kind."""

    counts: Counter[str] = field(default_factory=Counter)
    first: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, line_number: int) -> None:
        """Record that line ``line_number`` is of ``kind``."""
        self.counts[kind] += 1
        self.first.setdefault(kind, line_number)

    @property
    def same(self) -> bool:
        """True if every line pair is equal up to key order and number format."""
        return not self.counts["different"]


def _integral_floats_as_ints(value: Any) -> Any:
    """Return ``value`` with every float that is a whole number replaced by an int."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral_floats_as_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral_floats_as_ints(v) for k, v in value.items()}
    return value


def _sorted_json(value: Any) -> str:
    """Return ``value`` as JSON text with sorted keys."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def classify(a: bytes | None, b: bytes | None) -> str:
    """Return the kind (one of ``KINDS``) of the line pair ``a``, ``b`` (``None``: missing)."""
    if a == b:
        return "identical"
    if a is None or b is None:
        return "different"
    try:
        va, vb = json.loads(a), json.loads(b)
    except ValueError:
        return "different"
    if json.dumps(va, ensure_ascii=False) == json.dumps(vb, ensure_ascii=False):
        return "same-value"
    if _sorted_json(va) == _sorted_json(vb):
        return "key-order"
    if _sorted_json(_integral_floats_as_ints(va)) == _sorted_json(_integral_floats_as_ints(vb)):
        return "number-format"
    return "different"


def compare(path_a: Path, path_b: Path) -> Comparison:
    """Classify every line pair of the two files (a missing line counts as different)."""
    result = Comparison()
    with open(path_a, "rb") as fa, open(path_b, "rb") as fb:
        for number, (a, b) in enumerate(zip_longest(fa, fb), 1):
            result.add(classify(a, b), number)
    return result


def main(path_a: Path, path_b: Path) -> int:
    """Print the comparison of two state files; return 0 if they are the same."""
    result = compare(path_a, path_b)
    parts = [
        f"{kind}={result.counts[kind]}"
        + (
            f" (first: line {result.first[kind]})"
            if kind != "identical" and kind in result.first
            else ""
        )
        for kind in KINDS
    ]
    print(f"{path_a.name} vs {path_b.name}: " + ", ".join(parts))
    return 0 if result.same else 1
