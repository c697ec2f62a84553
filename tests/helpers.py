"""Shared test helpers: paths to the bundled samples and corpus, an in-process build."""

from __future__ import annotations

from pathlib import Path

from evalstream.build import Options, run
from evalstream.report import RunReport

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"
GOLDEN = Path(__file__).resolve().parent / "golden"
CORPUS = ROOT.parent / "shared" / "corpus"


def build(tmp_path: Path, lines: list[str] | bytes, **options: object) -> tuple[RunReport, Path]:
    """Build ``lines`` (a list of JSON lines, or raw bytes) in ``tmp_path``; return report and output."""
    src = tmp_path / "cases.jsonl"
    src.write_bytes(lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode())
    out = tmp_path / "states.jsonl"
    report, _ = run(Options(input=str(src), output=str(out), **options))  # type: ignore[arg-type]
    return report, out
