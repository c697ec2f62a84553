"""The answer store: every provider answer, committed the moment it arrives, keyed by the
request it answers (``request.request_key``), so that no request is ever paid for twice.

SQLite (the standard library's ``sqlite3``) in WAL mode with ``synchronous=NORMAL``: each
answer is its own transaction, and a committed one survives Ctrl-C, a crash or ``kill -9``
of the process (not a power cut: WAL syncs at checkpoints). The samples of one request for
several (OpenAI's ``n``) are one answer, stored in one transaction (``transaction``): all of
them or none survive, so a resumed run never asks again, in another request, for samples
already paid for. The store holds the raw response
body as received (with any echo of the API key removed), the provider's request id, token
usage and latency; it never holds a request's headers, so never a key. Answers are parsed
when they are read (``answer.parse``), so a verdict always comes from the stored bytes.

The requests of the current run (so that a duplicate is not sent twice) and the reasons of
those that got no answer (timeouts, connection errors, HTTP errors) live in a temporary table
that disappears with the connection: they are not answers, and the next run asks again.

Whatever a server sends can be stored: a token count SQLite's 64-bit INTEGER cannot hold, or
that is no count (negative), is stored as unknown (NULL; the body keeps what was said), and
text that is not UTF-8 (a header decoded with surrogate escapes, latin-1 ``caf\xe9``) keeps
its bytes as ``\xe9`` escapes. Both once crashed a run after the answer was paid for and
before it was stored, so each re-run paid again.

Several runs may share a store at once (a second terminal, overlapping cron jobs, datasets
sharing ``--store``). Each keeps its own table of requests, so before sending one a run
claims it in the store's ``claims`` table, in a transaction that also checks that no answer
arrived meanwhile (``claim``): a request claimed by another live run is not sent again; its
answer is read when it arrives (or, if that run gets none, or dies, it is claimed and sent
here). A claim names its run (``files.temporaries.tag``: process id and machine) and ends
with the answer, the failure, or the run's ``close``; a run renews its claims' lease
(``renew``), so those of a dead run are taken at once on this machine (no process has its
id) and once the lease ran out from another. One run alone pays for it on the event loop's
thread: a claim's transaction and a delete in the answer's, 72 us a request against 29 us
(5,000 answers of 1 KB under random keys, here), against requests that take 100s of ms.

A store is checked on opening (its schema version and the columns of its tables) and on
every read: a damaged file, or one another program changed (a renamed column, a NULL or TEXT
body), is an ``OutputError`` naming the store, never a ``sqlite3`` traceback.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from evalstream._files.temporaries import gone, tag
from evalstream._judge.sqlite import check_tables, reads, sql_type
from evalstream.errors import OutputError

SCHEMA_VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
-- A rowid table with the key's unique index, not WITHOUT ROWID: rows hold a whole response
-- (~1 KB), and SQLite advises WITHOUT ROWID only for rows under ~1/20 of a page. Inserting
-- 100,000 answers under random keys in one transaction took 62 us each WITHOUT ROWID and
-- 16 us so (lookups 17 against 10 us). Stores made before keep their table: the same
-- statements read and write both.
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,          -- sha256 of provider, URL and request body
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    body BLOB NOT NULL,            -- the provider's response body, as received
    request_id TEXT,               -- the provider's request id (header), else the body's id
    input_tokens INTEGER,
    output_tokens INTEGER,
    latency_ms REAL NOT NULL,      -- the answered attempt's, from sending to the last byte
    attempts INTEGER NOT NULL,     -- HTTP attempts it took (0: a batch result, collected)
    stored_at REAL NOT NULL        -- Unix time
);
"""
# Requests in flight, of every run on the store (created on opening for writing; never read
# by a read-only opening, so not among the tables checked). WITHOUT ROWID: each request
# writes its claim and deletes it, in two transactions; a rowid table changes two B-trees
# each time (the table and its key's index), this one B-tree. 20,000 requests (has, claim,
# put): 70 against 87 us each, write-ahead log 427 against 590 MB (issue 31). Stores made
# before keep their table: the same statements read and write both.
_CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,          -- the request key
    owner TEXT NOT NULL,           -- the run: PID-MACHINE.TOKEN
    until REAL NOT NULL            -- Unix time the lease ends, unless renewed
) WITHOUT ROWID;
"""
MAX_INTEGER = 2**63 - 1  # SQLite's INTEGER
LEASE = 60.0  # seconds a claim is held without renewal; runs renew every LEASE / 4
CLAIMED, ANSWERED, HELD = "claimed", "answered", "held"


class Stored(NamedTuple):
    """One stored answer."""

    body: bytes
    request_id: str | None
    input_tokens: int | None
    output_tokens: int | None


class Failure(NamedTuple):
    """A request of this run that got no answer: why, briefly."""

    cause: str
    detail: str


class Store:
    """An answer store at ``path`` (created when missing, unless ``readonly``)."""

    def __init__(self, path: str, readonly: bool = False, cache_mib: int | None = None) -> None:
        self.path = path
        self._asked = False  # whether this run's table of asked requests has a row
        self.owner = tag() + secrets.token_hex(4)  # this run, in its claims
        try:
            if readonly:
                if not os.path.exists(path):
                    self._db: sqlite3.Connection | None = None
                    self._checkpoints: _Checkpoints | None = None
                    return
                uri = f"file:{_quote(os.path.abspath(path))}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, isolation_level=None)
            else:
                self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
                _write_ahead(self._db)
                self._db.execute("PRAGMA synchronous=NORMAL")
                # Checkpoints (the only fsyncs in this mode) run in a thread of their own: on
                # the event loop's thread they stalled every request in flight (on a disk, a
                # 20,000-state run: p95 latency 82 ms against 71 ms, max 344 ms against 137).
                self._db.execute("PRAGMA wal_autocheckpoint=0")
                self._db.executescript(_SCHEMA + _CLAIMS)
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)",
                                 (SCHEMA_VERSION,))
                # This run's requests (cause: why one got no answer): gone with the connection.
                self._db.execute("CREATE TEMP TABLE asked (key TEXT PRIMARY KEY, cause TEXT, "
                                 "detail TEXT)")
            version = self._db.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
        except sqlite3.Error as exc:
            raise OutputError(f"cannot open the answer store {path}: {exc}; give another "
                              "file with --store.") from exc
        if version is None or version[0] != SCHEMA_VERSION:
            raise OutputError(f"{path} is not an evalstream answer store of schema "
                              f"{SCHEMA_VERSION}; give another file with --store.")
        check_tables(self._db, _SCHEMA, self)
        if cache_mib is not None:
            self._db.execute(f"PRAGMA cache_size=-{int(cache_mib) * 1024}")
        self._checkpoints = None if readonly else _Checkpoints(path)

    def damaged(self, what: str) -> OutputError:
        return OutputError(
            f"the answer store {self.path} {what}: it is damaged, or another program changed "
            "it. Move it aside and run again (the answers it held are then asked again), or "
            "give another file with --store.")

    def _unwritable(self, exc: Exception) -> OutputError:
        if type(exc) is sqlite3.DatabaseError:  # "database disk image is malformed"
            return self.damaged(f"cannot be written ({exc})")
        return OutputError(f"cannot write the answer store {self.path}: {exc}")

    @reads
    def get(self, key: str) -> Stored | None:
        """The answer stored for a request key, or None."""
        if self._db is None:
            return None
        row = self._db.execute("SELECT body, request_id, input_tokens, output_tokens FROM answers "
                               "WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        body, request_id, input_tokens, output_tokens = row
        if type(body) is not bytes or not (request_id is None or type(request_id) is str) or \
                not all(n is None or type(n) is int for n in (input_tokens, output_tokens)):
            names = ("body", "request_id", "input_tokens", "output_tokens")
            found = ", ".join(f"{name} {sql_type(v)}" for name, v in zip(names, row,
                                                                          strict=True))
            raise self.damaged(f"holds an answer evalstream did not write (request {key}: "
                               f"{found}; a body is a BLOB)")
        return Stored(body, request_id, input_tokens, output_tokens)

    @reads
    def output_tokens(self, provider: str, model: str) -> Counter[int]:
        """How many stored answers of ``model`` at ``provider`` took each number of output
        tokens (those whose count is known): one row a distinct count, never a row an
        answer."""
        if self._db is None:
            return Counter()
        return Counter({n: k for n, k in self._db.execute(
            "SELECT output_tokens, count(*) FROM answers WHERE provider = ? AND model = ? AND "
            "output_tokens IS NOT NULL GROUP BY output_tokens", (provider, model))
            if type(n) is int and n >= 0})

    @reads
    def has(self, key: str) -> bool:
        """Whether an answer is stored for this request key."""
        if self._db is None:
            return False
        return self._db.execute("SELECT 1 FROM answers WHERE key = ?", (key,)).fetchone() \
            is not None

    def put(self, key: str, provider: str, model: str, body: bytes, request_id: str | None,
            input_tokens: int | None, output_tokens: int | None, latency_ms: float,
            attempts: int) -> None:
        """Commit one answer (replacing an earlier one for the same key: --retry-unscored);
        inside ``transaction()``, stored with the rest of it, committed at its end."""
        assert self._db is not None
        db = self._db
        alone = not db.in_transaction
        try:
            if alone:
                db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, text(provider), text(model), body, text(request_id),
                     count(input_tokens), count(output_tokens), round(latency_ms, 3), attempts,
                     time.time()))
                db.execute("DELETE FROM claims WHERE key = ?", (key,))  # answered: for all
            except BaseException:
                if alone:
                    db.execute("ROLLBACK")
                raise
            if alone:
                db.execute("COMMIT")
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            raise self._unwritable(exc) from exc

    def claim(self, key: str, answered_since: float = 0.0) -> str:
        """Claim the request for ``key`` for this run, to send it: ``CLAIMED``; or
        ``ANSWERED`` when an answer stored at or after ``answered_since`` (Unix time) is
        there, or ``HELD`` while another live run has claimed it."""
        assert self._db is not None
        db = self._db
        try:
            if self._held(key):  # a read, without the write lock: waiting runs poll this
                return HELD
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("SELECT 1 FROM answers WHERE key = ? AND stored_at >= ?",
                              (key, answered_since)).fetchone() is not None:
                    outcome = ANSWERED
                elif self._held(key):
                    outcome = HELD
                else:
                    db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?)",
                               (key, self.owner, time.time() + LEASE))
                    outcome = CLAIMED
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._unwritable(exc) from exc
        return outcome

    def _held(self, key: str) -> bool:
        """Whether another run, alive or within its lease, has claimed ``key``."""
        assert self._db is not None
        row = self._db.execute("SELECT owner, until FROM claims WHERE key = ?", (key,)).fetchone()
        if row is None or row[0] == self.owner:
            return False
        return not (row[1] < time.time() or gone(row[0]))

    def release(self, key: str) -> None:
        """End this run's claim on ``key`` without an answer (another run may send it)."""
        assert self._db is not None
        try:
            self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))
        except sqlite3.Error as exc:
            raise self._unwritable(exc) from exc

    def renew(self) -> None:
        """Extend the lease of this run's claims (a run does it every ``LEASE / 4``)."""
        assert self._db is not None
        try:
            self._db.execute("UPDATE claims SET until = ? WHERE owner = ?",
                             (time.time() + LEASE, self.owner))
        except sqlite3.Error as exc:
            raise self._unwritable(exc) from exc

    def add(self, key: str, provider: str, model: str, body: bytes, request_id: str | None,
            input_tokens: int | None, output_tokens: int | None) -> bool:
        """Store a batch result's answer unless an answer is stored for ``key`` already;
        whether it was stored (the first answer to a request is the one kept)."""
        assert self._db is not None
        try:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, ?)",
                (key, text(provider), text(model), body, text(request_id), count(input_tokens),
                 count(output_tokens), time.time()))
        except (sqlite3.Error, ValueError, OverflowError) as exc:
            raise self._unwritable(exc) from exc
        return cursor.rowcount == 1

    @contextmanager
    def transaction(self) -> Iterator[Callable[[], None]]:
        """Store inside one transaction, committed at the end (or rolled back on an error);
        the function yielded commits what is stored so far and begins the next. ``batch
        collect`` commits every 10,000 answers: its results are safe in their files, and a
        commit for many is faster (20,000 answers: 25 us an answer, against 132 us with a
        commit each), while the write-ahead log stays small."""
        assert self._db is not None
        db = self._db

        def run(statement: str) -> None:
            try:
                db.execute(statement)
            except sqlite3.Error as exc:
                raise self._unwritable(exc) from exc

        def commit_so_far() -> None:
            run("COMMIT")
            run("BEGIN IMMEDIATE")

        run("BEGIN IMMEDIATE")
        try:
            yield commit_so_far
        except BaseException:
            db.execute("ROLLBACK")
            raise
        run("COMMIT")

    def mark_asked(self, key: str) -> None:
        """Note that this run sends the request for ``key``."""
        assert self._db is not None
        self._db.execute("INSERT OR IGNORE INTO asked VALUES (?, NULL, NULL)", (key,))
        self._asked = True

    def asked(self, key: str) -> bool:
        """Whether this run already sent the request for ``key``."""
        if self._db is None or not self._asked:
            return False  # nothing noted yet: no query (this is asked once a judge state)
        try:
            row = self._db.execute("SELECT 1 FROM asked WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # read-only: no table of this run
            return False
        return row is not None

    def fail(self, key: str, cause: str, detail: str) -> None:
        """Note that this run's request for ``key`` got no answer (not kept across runs), and
        end its claim: another run may ask."""
        assert self._db is not None
        self._db.execute("INSERT OR REPLACE INTO asked VALUES (?, ?, ?)",
                         (key, cause, text(detail)))
        self._asked = True
        self.release(key)

    def failure(self, key: str) -> Failure | None:
        """Why this run's request for ``key`` got no answer, or None."""
        if self._db is None or not self._asked:
            return None
        try:
            row = self._db.execute("SELECT cause, detail FROM asked WHERE key = ? AND cause IS "
                                   "NOT NULL", (key,)).fetchone()
        except sqlite3.OperationalError:  # read-only: no table of this run
            return None
        return None if row is None else Failure(row[0], row[1])

    @reads
    def count(self) -> int:
        """How many answers are stored."""
        if self._db is None:
            return 0
        return int(self._db.execute("SELECT count(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        """Release this run's claims, and close."""
        if self._checkpoints is not None:
            self._checkpoints.stop()
            self._checkpoints = None
            assert self._db is not None
            try:
                self._db.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
            except sqlite3.Error:
                pass  # a damaged store: its claims end with their lease
        if self._db is not None:
            self._db.close()  # the last connection checkpoints what is left
            self._db = None


class _Checkpoints:
    """Copies the write-ahead log into the database every second, from its own thread and
    connection (a passive checkpoint never blocks the writer)."""

    def __init__(self, path: str, interval: float = 1.0) -> None:
        self._path = path
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evalstream-checkpoints",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self._path, isolation_level=None, timeout=30)
        except sqlite3.Error:
            return
        try:
            while not self._stop.wait(self._interval):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass  # busy or failing: the next one, or the close, does it
        finally:
            db.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _write_ahead(db: sqlite3.Connection, timeout: float = 30.0) -> None:
    """WAL mode. Two runs opening a new store at once: the second's switch is refused as
    "database is locked" without SQLite waiting (12 of 80 tries here), so it waits here."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def count(tokens: int | None) -> int | None:
    """A token count as stored: None (unknown) for one SQLite cannot hold or that is no count."""
    return tokens if tokens is not None and 0 <= tokens <= MAX_INTEGER else None


def text(value: str | None) -> str | None:
    """Text as SQLite can store it (UTF-8): bytes a header held that are not UTF-8 (decoded
    with surrogate escapes) as ``\\xe9`` escapes, any other lone surrogate as ``\\udce9``."""
    if value is None or value.isascii():
        return value
    try:
        value.encode()
        return value
    except UnicodeEncodeError:
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode()


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(path)
