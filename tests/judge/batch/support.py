"""Test support for batch: prepare a folder, and results synthesised from its request files by
the fake server's own answer rules (so the expected verdict of each state is known from the
``FAKE:<fault>`` marker in its case)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from evalstream._judge.batch import collect, prepare
from evalstream._judge.request import JudgeConfig
from tests.judge.fake_batches import _answer, _fault

# marker -> (status, cause) of the verdict a collect writes
EXPECTED = {
    "FAKE:pass": ("pass", None),
    "FAKE:fail": ("fail", None),
    "FAKE:na": ("na", None),
    "FAKE:notjson": ("unscored", "not_json"),
    "FAKE:wrongshape": ("unscored", "wrong_shape"),
    "FAKE:refusal": ("unscored", "refusal"),
    "FAKE:length": ("unscored", "truncated"),
    "FAKE:batcherror": ("unscored", "errored"),
    "FAKE:expired": ("unscored", "expired"),
    "FAKE:canceled": ("unscored", "canceled"),
    "FAKE:400": ("unscored", "errored"),
}
CONTENT_FAULTS = ["FAKE:pass", "FAKE:fail", "FAKE:na", "FAKE:notjson", "FAKE:wrongshape",
                  "FAKE:refusal", "FAKE:length"]


def config(provider: str = "openai", base_url: str = "http://127.0.0.1:9/v1",
           **kw: Any) -> JudgeConfig:
    return JudgeConfig(model=kw.pop("model", "fake-judge-1"), provider=provider,
                       base_url=base_url, max_output_tokens=kw.pop("max_output_tokens", 256),
                       **kw)


def prepared(states_path: Path, folder: Path, provider: str = "openai",
             base_url: str = "http://127.0.0.1:9/v1", **kw: Any) -> prepare.PrepareReport:
    return prepare.run(prepare.Options(input=str(states_path), folder=str(folder),
                                       config=config(provider, base_url), **kw))


def request_lines(folder: Path) -> list[dict[str, Any]]:
    """Every request line of a prepared folder, in file order, decoded, with its body bytes."""
    out = []
    for path in sorted(folder.glob("requests-*.jsonl")):
        for raw in path.read_bytes().splitlines():
            line = json.loads(raw)
            field = "params" if "params" in line else "body"
            start = raw.index(b'"' + field.encode() + b'":') + len(field) + 3
            line["_body"] = raw[start:-1]  # the body's exact bytes, as sent live
            out.append(line)
    return out


def results(folder: Path, *, vllm: bool = False, key: str | None = None,
            ) -> list[tuple[str, dict[str, Any]]]:
    """(marker fault, result line) for every request of the folder, as a provider answers it
    (vLLM: errors inline, OpenAI: errored requests as error-file lines)."""
    out = []
    for i, line in enumerate(request_lines(folder)):
        anthropic = "params" in line
        fault = _fault(line["_body"])
        if vllm and fault == "batcherror":
            fault = "vllmerror"
        result, _ = _answer(anthropic, line["custom_id"], line["_body"], fault, key, i)
        out.append((fault, result))
    return out


def write_split(rows: list[dict[str, Any]], folder: Path, parts: int, seed: int = 7,
                blank_lines: bool = True) -> list[Path]:
    """The rows shuffled and dealt over ``parts`` files (with a blank line in each)."""
    rows = rows[:]
    random.Random(seed).shuffle(rows)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(parts):
        path = folder / f"part-{n}.jsonl"
        text = "".join(json.dumps(r) + "\n" for r in rows[n::parts])
        path.write_text(("\n" if blank_lines else "") + text)
        paths.append(path)
    return paths


def collected(folder: Path, output: Path, files: list[Path], **kw: Any) -> collect.CollectReport:
    return collect.run(collect.Options(folder=str(folder), output=str(output),
                                       results=[str(p) for p in files], **kw))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
