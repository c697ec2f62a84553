"""Running a conversion in a test, and the golden file of its outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from evalstream._build.run import Options as BuildOptions
from evalstream._build.run import run as build_run
from evalstream._cases import schema
from evalstream._convert import Options, run
from evalstream._convert.report import ConvertReport
from tests.helpers import golden

GOLDEN = Path(__file__).resolve().parent / "golden"


class Converted(NamedTuple):
    report: ConvertReport
    cases: list[dict[str, Any]]
    rejects: list[dict[str, Any]]
    out: Path


def convert(tmp_path: Path, source: Path | str, **options: Any) -> Converted:
    """Convert ``source`` into tmp_path/cases.jsonl with ``options``; read everything back."""
    out = tmp_path / "cases.jsonl"
    report, _ = run(Options(input=str(source), output=str(out), **options))
    cases = [json.loads(x) for x in out.read_bytes().splitlines()]
    rejects = [json.loads(x) for x in (tmp_path / "cases.rejects.jsonl").read_bytes().splitlines()]
    assert report.counts.rows == report.counts.cases + report.counts.rejected + report.counts.blank
    assert report.counts.cases == len(cases) and report.counts.rejected == len(rejects)
    return Converted(report, cases, rejects, out)


def validate_accepts(path: Path) -> None:
    """``validate`` reads the converted file without a reject, and every line decodes."""
    report, first = build_run(BuildOptions(input=str(path), report=str(path) + ".v.json",
                                           rejects=str(path) + ".v.rejects"))
    assert report.counts.rejected == 0, first
    decode = schema.decoder().decode
    for line in path.read_bytes().splitlines():
        decode(line)


def golden_run(name: str, result: Converted) -> None:
    """Compare cases, rejects and the report (without its timing and paths) with a golden."""
    report = msgspec.to_builtins(result.report)
    for key in ("seconds", "input", "output", "rejects"):
        report.pop(key)
    text = (result.out.read_bytes()
            + b"--- rejects\n" + (result.out.parent / "cases.rejects.jsonl").read_bytes()
            + b"--- report\n" + json.dumps(report, indent=1, ensure_ascii=False).encode() + b"\n")
    golden(f"{name}.golden.txt", text, GOLDEN)
