"""Shared test helpers: paths to the bundled samples and corpus, an in-process build."""

from __future__ import annotations

import os
from pathlib import Path

from evalstream.checks.report import RunReport
from evalstream.pipeline.run import Options, run

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data" / "samples"
GOLDEN = Path(__file__).resolve().parent / "golden"



def _corpus() -> Path:
    """The shared corpus: $EVALSTREAM_CORPUS, else ../shared/corpus beside the checkout, else
    /work/shared/corpus (where a clone elsewhere on this machine finds it). Tests that need
    it are skipped, saying so, where none exists."""
    candidates = [ROOT.parent / "shared" / "corpus", Path("/work/shared/corpus")]
    if os.environ.get("EVALSTREAM_CORPUS"):
        candidates.insert(0, Path(os.environ["EVALSTREAM_CORPUS"]))
    return next((c for c in candidates if c.is_dir()), candidates[0])


CORPUS = _corpus()
REGEN = os.environ.get("EVALSTREAM_REGEN_GOLDEN") == "1"


def golden(name: str, data: bytes, folder: Path = GOLDEN) -> None:
    """Compare ``data`` with the golden file FOLDER/NAME; EVALSTREAM_REGEN_GOLDEN=1 rewrites it."""
    path = folder / name
    if REGEN:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
    assert data == path.read_bytes(), f"{name} differs from its golden file"


def build(tmp_path: Path, lines: list[str] | bytes, **options: object) -> tuple[RunReport, Path]:
    """Build ``lines`` (a list of JSON lines, or raw bytes) in ``tmp_path``; return report and output."""
    src = tmp_path / "cases.jsonl"
    src.write_bytes(lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode())
    out = tmp_path / "states.jsonl"
    report, _ = run(Options(input=str(src), output=str(out), **options))  # type: ignore[arg-type]
    return report, out
