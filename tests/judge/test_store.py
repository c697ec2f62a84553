"""The answer store: committed at once (a killed process loses nothing it stored), WAL mode,
read-only opening creates nothing, a foreign file is refused."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalstream.errors import OutputError
from evalstream.judge.store import Store
from tests.helpers import ROOT


def test_put_get_and_this_runs_asked_table(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.sqlite"))
    assert store.get("k") is None and not store.has("k")
    store.mark_asked("k")
    assert store.asked("k") and store.failure("k") is None
    store.put("k", "openai", "m", b'{"x": 1}', "req_1", 10, 2, 12.5, 1)
    assert store.get("k") == (b'{"x": 1}', "req_1", 10, 2)
    store.fail("k2", "timeout", "no answer")
    assert store.failure("k2") == ("timeout", "no answer") and store.asked("k2")
    store.put("k", "openai", "m", b"{}", None, None, None, 1.0, 3)  # --retry-unscored
    assert store.get("k") == (b"{}", None, None, None)
    assert store.count() == 1
    store.close()
    again = Store(str(tmp_path / "s.sqlite"))
    assert again.has("k") and not again.asked("k") and again.failure("k2") is None
    mode = sqlite3.connect(tmp_path / "s.sqlite").execute("PRAGMA journal_mode").fetchone()
    assert mode == ("wal",)
    again.close()


def test_readonly_creates_nothing(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "none.sqlite"), readonly=True)
    assert store.get("k") is None and store.count() == 0 and not store.asked("k")
    store.close()
    assert list(tmp_path.iterdir()) == []


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "text.sqlite").write_text("not a database at all, just some text\n" * 100)
    with pytest.raises(OutputError, match="cannot open the answer store .*--cache"):
        Store(str(tmp_path / "text.sqlite"))
    db = sqlite3.connect(tmp_path / "other.sqlite")
    db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('schema', '99')")
    db.commit()
    db.close()
    with pytest.raises(OutputError, match="not an evalstream answer store of schema 1"):
        Store(str(tmp_path / "other.sqlite"))


CHILD = """
import os, sys
from evalstream.judge.store import Store
store = Store(sys.argv[1])
for i in range(100_000):
    store.put(f"k{i}", "openai", "m", b"x" * 500, None, 1, 1, 1.0, 1)
    if i == 199:
        print("200", flush=True)
"""


def test_answers_survive_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "200"
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    store = Store(str(path))
    n = store.count()
    assert n >= 200
    assert all(store.has(f"k{i}") for i in range(n))  # committed in order, none lost
    store.close()
