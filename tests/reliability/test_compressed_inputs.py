"""Damaged compressed inputs through the commands: a cut or corrupt .gz/.zst file of cases or
verdicts is exit 2 with a sentence naming the file and the byte, and nothing is written."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
import zstandard

from .support import cli
from .test_bounds import _run_measured

CASES = b"".join(json.dumps({"id": f"c{i}", "input": "x" * 50, "output": "y",
                             "expected": {"helpfulness": {"status": "pass",
                                                          "source": "human"}}}).encode() + b"\n"
                 for i in range(40_000))


def _cut(data: bytes, suffix: str, fraction: float = 0.6) -> bytes:
    packed = gzip.compress(data) if suffix == ".gz" else zstandard.ZstdCompressor().compress(data)
    return packed[:int(len(packed) * fraction)]


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".gz", ".zst"])
@pytest.mark.parametrize("command", ["build", "validate", "stats"])
def test_a_cut_case_file_is_exit_2_and_nothing_is_written(tmp_path: Path, suffix: str,
                                                          command: str) -> None:
    name = f"cases.jsonl{suffix}"
    (tmp_path / name).write_bytes(_cut(CASES, suffix))
    args = {"build": ["build", name, "states.jsonl"],
            "validate": ["validate", name, "--rejects", "r.jsonl", "--report", "r.json"],
            "stats": ["stats", name, "-o", "stats.json", "--format", "json"]}[command]
    done = cli(*args, "-q", cwd=tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert f"evalstream: error: cannot read {name}: the " in err
    assert "ends inside a" in err and " of the file (" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no target, no temporary


@pytest.mark.slow
def test_a_cut_verdict_file_is_exit_2_in_agree_and_compare(tmp_path: Path) -> None:
    verdicts = b"".join(json.dumps({"case_id": f"c{i}", "rubric_id": "helpfulness",
                                    "status": "pass"}).encode() + b"\n" for i in range(48))
    (tmp_path / "v.jsonl.zst").write_bytes(_cut(verdicts, ".zst", 0.8))
    (tmp_path / "cases.jsonl").write_bytes(CASES[:10_000])
    for args in (["agree", "v.jsonl.zst", "cases.jsonl"],
                 ["compare", "v.jsonl.zst", "v.jsonl.zst"]):
        done = cli(*args, "--rejects", "r.jsonl", "-o", "out.json", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert b"cannot read v.jsonl.zst: the zstd data ends inside a frame" in done.stderr
        assert not (tmp_path / "out.json").exists() and not (tmp_path / "r.jsonl").exists()


@pytest.mark.slow
def test_a_1_gib_line_in_a_zst_file_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # 32 KB of zstd that decompresses to one 1 GiB line: memory stays one read buffer and
    # the head of the line, never the line (python-zstandard's decompressobj took 1 GiB).
    writer = zstandard.ZstdCompressor().compressobj()
    pieces = [writer.compress(b'{"id":"huge","input":"')]
    block = b"a" * (1 << 20)
    pieces += [writer.compress(block) for _ in range(1024)]
    pieces += [writer.compress(b'","output":"y"}\n{"id":"after","input":"x","output":"y"}\n'),
               writer.flush()]
    (tmp_path / "big.jsonl.zst").write_bytes(b"".join(pieces))
    started = time.monotonic()
    code, peak = _run_measured(["validate", "big.jsonl.zst", "--max-line-bytes", "16MiB",
                                "--rejects", "r.jsonl", "-q"], tmp_path)
    seconds = time.monotonic() - started
    assert code == 1
    assert peak < 150, f"{peak} MiB"  # measured 41 MiB
    assert seconds < 60, seconds  # measured 1 s
    reject = json.loads((tmp_path / "r.jsonl").read_bytes())
    assert reject["line"] == 1 and "1,073,741,861 bytes" in reject["error"]
