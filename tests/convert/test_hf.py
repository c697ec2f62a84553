"""Hugging Face datasets on disk, written by `datasets` itself: save_to_disk (one dataset and a
DatasetDict with splits), to_parquet, and a folder of Parquet shards. Nothing is downloaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalstream.errors import UsageError
from tests.convert.support import convert, golden_run, validate_accepts
from tests.helpers import ROOT

MAKE = """
import sys
from datasets import Dataset, DatasetDict
out = sys.argv[1]
train = Dataset.from_dict({
    "question": ["Who wrote War and Peace?", "What is H2O?", "Largest planet?"],
    "answer": ["Leo Tolstoy.", "Water.", "Saturn."],
    "passages": [["War and Peace is a novel by Leo Tolstoy."], ["H2O is water."], []],
    "label": [1, 1, 0],
})
test = Dataset.from_dict({"question": ["2+2?"], "answer": ["4"], "passages": [["Sums."]],
                          "label": [1]})
train.save_to_disk(out + "/one")
DatasetDict({"train": train, "test": test}).save_to_disk(out + "/dict")
train.to_parquet(out + "/train.parquet")
import os
os.makedirs(out + "/repo/data")
train.select(range(2)).to_parquet(out + "/repo/data/train-00000-of-00002.parquet")
train.select(range(2, 3)).to_parquet(out + "/repo/data/train-00001-of-00002.parquet")
test.to_parquet(out + "/repo/data/test-00000-of-00001.parquet")
"""
MAP = dict(maps=["input=question,output=answer,context=passages,expected.correct.status=label"],
           sets=["expected.correct.source=human"], values=["expected.correct.status=1:pass,0:fail"])


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hf")
    # `datasets` runs in its own process: its progress bars and warnings stay out of pytest.
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", MAKE, str(folder)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


@pytest.mark.slow
def test_save_to_disk_golden(tmp_path: Path, saved: Path) -> None:
    result = convert(tmp_path, saved / "one", **MAP)
    golden_run("hf", result)
    validate_accepts(result.out)
    assert result.report.format == "hf"
    assert [c["context"] for c in result.cases][2] == []


@pytest.mark.parametrize(("source", "split"), [
    ("dict", "train"), ("train.parquet", None), ("repo", "train"),
    ("one/data-00000-of-00001.arrow", None)])
def test_every_layout_gives_the_same_cases(tmp_path: Path, saved: Path, source: str,
                                           split: str | None) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    expected = convert(tmp_path / "a", saved / "one", **MAP).out.read_bytes()
    got = convert(tmp_path / "b", saved / source, format="hf", split=split, **MAP)
    assert got.out.read_bytes() == expected


def test_splits(tmp_path: Path, saved: Path) -> None:
    with pytest.raises(UsageError, match="holds the splits 'train', 'test'; choose one with --split"):
        convert(tmp_path, saved / "dict", **MAP)
    [case] = convert(tmp_path, saved / "dict", split="test", **MAP).cases
    assert case["input"] == "2+2?"
    assert len(convert(tmp_path, saved / "repo", format="hf", split="test", **MAP).cases) == 1
    with pytest.raises(UsageError, match="holds the splits 'test', 'train'"):
        convert(tmp_path, saved / "repo", format="hf", **MAP)


def test_unknown_column_is_named(tmp_path: Path, saved: Path) -> None:
    with pytest.raises(UsageError, match="has no column 'questions'. Did you mean 'question'"):
        convert(tmp_path, saved / "one", maps=["input=questions,output=answer"])
