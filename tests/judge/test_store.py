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

from evalstream._judge.store import Store
from evalstream.errors import OutputError
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


def test_answers_put_inside_a_transaction_are_stored_all_or_none(tmp_path: Path) -> None:
    """The samples of one answer (OpenAI's `n`) are put inside ``transaction()``: committed
    together at its end, rolled back together on an error; a put alone commits at once."""
    store = Store(str(tmp_path / "s.sqlite"))
    with pytest.raises(RuntimeError), store.transaction():
        store.put("s0", "openai", "m", b"{}", "req_1", 10, 2, 1.0, 1)
        raise RuntimeError("stopped between two samples")
    assert not store.has("s0")
    with store.transaction():
        for key in ("s0", "s1", "s2"):
            store.put(key, "openai", "m", b"{}", "req_1", 10, 2, 1.0, 1)
    store.put("alone", "openai", "m", b"{}", None, None, None, 1.0, 1)
    store.close()
    again = Store(str(tmp_path / "s.sqlite"))
    assert all(again.has(k) for k in ("s0", "s1", "s2", "alone")) and again.count() == 4
    again.close()


def test_whatever_a_server_sends_can_be_stored(tmp_path: Path) -> None:
    """Counts SQLite cannot hold (or that are no counts) are stored as unknown; text that is
    not UTF-8 keeps its bytes as escapes (issue 23: each raised after the answer was paid)."""
    store = Store(str(tmp_path / "s.sqlite"))
    store.put("a", "openai", "m\udcff", b"{}", "caf\udce9", 2**63, -1, 1.0, 1)
    assert store.add("b", "openai", "m", b"{}", "\ud800x", 2**64, 2**63 - 1)
    store.fail("c", "connection", "reset by caf\udce9")
    assert store.get("a") == (b"{}", "caf\\xe9", None, None)
    assert store.get("b") == (b"{}", "\\ud800x", None, 2**63 - 1)
    assert store.failure("c") == ("connection", "reset by caf\\xe9")
    store.close()


def test_readonly_creates_nothing(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "none.sqlite"), readonly=True)
    assert store.get("k") is None and store.count() == 0 and not store.asked("k")
    store.close()
    assert list(tmp_path.iterdir()) == []


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "text.sqlite").write_text("not a database at all, just some text\n" * 100)
    with pytest.raises(OutputError, match="cannot open the answer store .*--store"):
        Store(str(tmp_path / "text.sqlite"))
    db = sqlite3.connect(tmp_path / "other.sqlite")
    db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('schema', '99')")
    db.commit()
    db.close()
    with pytest.raises(OutputError, match="not an evalstream answer store of schema 1"):
        Store(str(tmp_path / "other.sqlite"))


def _filled(path: Path, n: int = 3) -> None:
    store = Store(str(path))
    for i in range(n):
        store.put(f"k{i}", "openai", "m", b'{"x": 1}', None, 1, 1, 1.0, 1)
    store.close()


def _edit(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    for statement in statements:
        db.execute(statement)
    db.close()


RECREATED = ("CREATE TABLE a2 AS SELECT * FROM answers", "DROP TABLE answers",
             "ALTER TABLE a2 RENAME TO answers")  # as another tool might: no NOT NULL left


@pytest.mark.parametrize(("edits", "message"), [
    (["ALTER TABLE answers RENAME COLUMN body TO payload"],
     r"has the table answers with the columns \(key, provider, model, payload, .*\) where "
     r"evalstream writes \(key, provider, model, body, "),
    (["ALTER TABLE answers ADD COLUMN note TEXT"], r"has the table answers with the columns \(.*, stored_at, note\)"),
    (["CREATE TABLE a2 (key TEXT PRIMARY KEY, body BLOB)", "DROP TABLE answers",
      "ALTER TABLE a2 RENAME TO answers"], r"has the table answers with the columns \(key, body\)"),
])
def test_a_store_another_program_changed_is_refused_on_opening(
        tmp_path: Path, edits: list[str], message: str) -> None:
    path = tmp_path / "s.sqlite"
    _filled(path)
    _edit(path, *edits)
    for readonly in (False, True):
        with pytest.raises(OutputError, match=f"the answer store {path} {message}.*it is damaged, "
                           "or another program changed it. Move it aside"):
            Store(str(path), readonly=readonly)


@pytest.mark.parametrize(("edit", "found"), [
    ("UPDATE answers SET body = 'text' WHERE key = 'k1'", "body TEXT"),
    ("UPDATE answers SET body = NULL WHERE key = 'k1'", "body NULL"),
    ("UPDATE answers SET request_id = x'00' WHERE key = 'k1'", "request_id BLOB"),
    ("UPDATE answers SET input_tokens = 1.5 WHERE key = 'k1'", "input_tokens REAL"),
])
def test_an_answer_another_program_wrote_is_refused_on_reading(tmp_path: Path, edit: str,
                                                                found: str) -> None:
    path = tmp_path / "s.sqlite"
    _filled(path)
    _edit(path, *RECREATED, edit)
    store = Store(str(path))
    assert store.get("k0") == (b'{"x": 1}', None, 1, 1)
    with pytest.raises(OutputError, match=rf"holds an answer evalstream did not write \(request "
                       rf"k1: .*{found}.*\): it is damaged"):
        store.get("k1")
    store.close()


def damage(path: Path) -> None:
    """Garbage over the pages of the answers and their key's index; the header and the schema
    (page 1) stay intact."""
    db = sqlite3.connect(path)
    roots = [r for (r,) in db.execute("SELECT rootpage FROM sqlite_master WHERE tbl_name = "
                                      "'answers'")]
    (size,) = db.execute("PRAGMA page_size").fetchone()
    db.close()
    with open(path, "r+b") as f:
        for root in roots:
            f.seek((root - 1) * size)
            f.write(bytes(range(256)) * (size // 256))


def test_damaged_pages_are_a_sentence_on_reading_and_writing(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    _filled(path)
    damage(path)
    store = Store(str(path))  # the header and the schema are intact
    for call in (lambda: store.get("k0"), lambda: store.has("k0"), store.count,
                 lambda: store.put("k9", "openai", "m", b"{}", None, 1, 1, 1.0, 1)):
        with pytest.raises(OutputError, match=f"the answer store {path} cannot be (read|written) "
                           r"\(database disk image is malformed\): it is damaged"):
            call()
    store.close()


CHILD = """
import os, sys
from evalstream._judge.store import Store
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


def test_two_runs_opening_a_new_store_at_once(tmp_path: Path) -> None:
    """The second switch to WAL was refused as "database is locked" at once (12 of 80 pairs
    of processes), without SQLite's busy wait."""
    import threading

    errors: list[BaseException] = []

    def open_and_put(path: Path, key: str) -> None:
        try:
            store = Store(str(path))
            store.put(key, "openai", "m", b"{}", None, 1, 1, 1.0, 1)
            store.close()
        except BaseException as exc:
            errors.append(exc)

    for i in range(40):
        path = tmp_path / f"s{i}.sqlite"
        threads = [threading.Thread(target=open_and_put, args=(path, k)) for k in "ab"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


@pytest.mark.parametrize("made_before", [False, True])
def test_claims_between_two_runs_on_one_store(tmp_path: Path, made_before: bool) -> None:
    from evalstream._judge.store import ANSWERED, CLAIMED, HELD

    path = str(tmp_path / "s.sqlite")
    if made_before:  # a store made before issue 31 keeps its rowid claims table
        with sqlite3.connect(path) as old:
            old.execute("CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, "
                        "until REAL NOT NULL)")
        old.close()
    a, b = Store(path), Store(path)
    assert a.claim("k") == CLAIMED and a.claim("k") == CLAIMED  # its own claim
    assert b.claim("k") == HELD
    a.put("k", "openai", "m", b"{}", None, 1, 1, 1.0, 1)
    assert b.claim("k") == ANSWERED  # the answer ended the claim, for everyone
    assert b.claim("k", answered_since=time.time() + 1) == CLAIMED  # --retry-unscored
    b.release("k")
    assert a.claim("gone") == CLAIMED
    a.fail("gone", "timeout", "no answer")  # no answer: another run may ask
    assert b.claim("gone") == CLAIMED
    db = sqlite3.connect(path, isolation_level=None)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    here = b.owner.split("-")[1].split(".")[0]
    far = time.time() + 600
    db.executemany("INSERT INTO claims VALUES (?, ?, ?)", [
        ("dead", f"{dead}-{here}.00000000", far),           # a dead run here: taken at once
        ("elsewhere", f"{dead}-00000000.00000000", far),    # another machine: its lease holds
        ("expired", f"{os.getppid()}-{here}.00000000", time.time() - 1)])  # lease ran out
    assert [b.claim(k) for k in ("dead", "elsewhere", "expired")] == [CLAIMED, HELD, CLAIMED]
    a.claim("mine")
    db.execute("UPDATE claims SET until = 0 WHERE key = 'mine'")  # the lease ran out ...
    a.renew()  # ... but a live run renews it
    assert b.claim("mine") == HELD
    a.close()  # a run's claims end with it
    assert b.claim("mine") == CLAIMED
    b.close()
    assert db.execute("SELECT key FROM claims ORDER BY key").fetchall() == [("elsewhere",)]
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'claims'").fetchone()
    assert sql.endswith("WITHOUT ROWID") != made_before
    db.close()
