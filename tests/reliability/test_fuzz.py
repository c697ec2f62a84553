"""A short coverage-guided fuzz run of the line decoder (fuzz/fuzz_decode.py) in CI."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from .support import LONG, ROOT, cli_env

pytestmark = pytest.mark.slow  # see pyproject.toml: `-m "not slow"` skips it

TARGET = ROOT / "fuzz" / "fuzz_decode.py"
SECONDS = 600 if LONG else 25


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None,
                    reason="atheris is not installed (pip install atheris: wheels for "
                           "x86-64 Linux; elsewhere it needs clang to build)")
def test_fuzz_the_line_decoder(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    seeds = [line for sample in ("cases.jsonl", "bad.jsonl")
             for line in (ROOT / "data" / "samples" / sample).read_bytes().split(b"\n")
             if 0 < len(line) <= 4096]
    for n, line in enumerate(seeds):
        (corpus / f"seed-{n}").write_bytes(line)
    done = subprocess.run(
        [sys.executable, str(TARGET), str(corpus), f"-max_total_time={SECONDS}",
         "-max_len=4096", "-timeout=20", "-rss_limit_mb=2048",
         f"-dict={ROOT / 'fuzz' / 'json.dict'}", f"-artifact_prefix={tmp_path}/"],
        cwd=tmp_path, env=cli_env(), capture_output=True, timeout=SECONDS + 120)
    log = done.stderr.decode(errors="replace")
    crashes = sorted(p.name for p in tmp_path.glob("crash-*"))
    assert done.returncode == 0 and not crashes, log[-4000:]
    assert "Done " in log  # libFuzzer's summary line: the run reached its time limit
