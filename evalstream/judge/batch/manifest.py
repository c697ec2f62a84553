"""The manifest of a prepared batch folder (``manifest.sqlite``): what was prepared for which
judge, how every result maps back to its judge state, and what ``submit`` learned.

SQLite rather than a JSONL map, because results come back in any order and must each be
looked up by ``custom_id``: a JSONL map would have to be held in memory (or sorted) to be
looked up, and SQLite reads it from disk through a bounded page cache. It is also where
``submit`` commits each file and batch id the moment it is known. The manifest is the one
thing that grows with the number of judge states (~90 bytes a state on disk, measured in
``benchmarks/README.md``); nothing of it is held in memory.

Tables:

- ``meta``: the schema version, the judge config, the input, the limits, the store consulted
  when preparing and the store last collected into.
- ``files``: each request file, its requests, bytes and xxh3-128.
- ``requests``: one row per request line (``custom_id``, a SHA-256, as 32 bytes), its file.
- ``states``: every judge state of the input, by input line: its ``custom_id`` (the store
  key), case id, rubric, state hash and exposure (see ``Exposures``).
- ``exact``: the exact verdicts of the input, by line, passed through to the verdicts.
- ``batches``: per request file, what ``submit`` and ``status`` learned (ids, status).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from typing import NamedTuple

import msgspec

from evalstream.errors import InputError, OutputError, UsageError
from evalstream.judge.request import JudgeConfig

NAME = "manifest.sqlite"
SCHEMA_VERSION = "1"
_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (n INTEGER PRIMARY KEY, name TEXT NOT NULL, requests INTEGER NOT NULL,
                    bytes INTEGER NOT NULL, xxh3 TEXT NOT NULL);
CREATE TABLE requests (custom_id BLOB PRIMARY KEY, file INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE rubrics (n INTEGER PRIMARY KEY, rubric_id TEXT NOT NULL, rubric_hash TEXT NOT NULL);
CREATE TABLE templates (n INTEGER PRIMARY KEY, text BLOB NOT NULL);
CREATE TABLE states (line INTEGER PRIMARY KEY, custom_id BLOB NOT NULL, case_id TEXT NOT NULL,
                     rubric INTEGER NOT NULL, state_hash BLOB NOT NULL, template INTEGER NOT NULL,
                     numbers TEXT NOT NULL);
CREATE TABLE exact (line INTEGER PRIMARY KEY, raw BLOB NOT NULL);
CREATE TABLE batches (file INTEGER PRIMARY KEY, input_file_id TEXT, batch_id TEXT,
                      creating REAL, status TEXT, output_file_id TEXT, error_file_id TEXT,
                      results_url TEXT, counts TEXT, error TEXT, downloaded TEXT,
                      updated REAL);
"""
MAX_TEMPLATES = 4096
_NUMBER = re.compile(rb"[0-9]+")


class State(NamedTuple):
    """A judge state as collect needs it: where it was, its key, what its verdict copies."""

    line: int
    key: str  # the request's store key, also its custom_id
    case_id: str
    rubric_id: str
    rubric_hash: str
    state_hash: str
    exposure: msgspec.Raw


class Exact(NamedTuple):
    """An exact verdict of the input, passed through unchanged."""

    line: int
    raw: bytes


class BatchFile(NamedTuple):
    """One request file."""

    n: int
    name: str
    requests: int
    bytes: int
    xxh3: str


class Exposures:
    """Exposure records kept small: the digits taken out, the rest (``{"shown":[...],...,
    "tokens":{"state":,...}}``: the same for every state of a rubric) kept once as a template.

    An exposure is ~240 bytes of which only the token counts differ from state to state, so a
    state keeps a template number and its digits (~20 bytes). Any bytes round-trip; past
    ``MAX_TEMPLATES`` distinct templates (an input not written by build) nothing is saved but
    nothing is lost either: the whole exposure becomes its own template. zlib with a preset
    dictionary made them 17 bytes but cost 87 us a state to compress; this costs ~1 us.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._ids: dict[bytes, int] = {}
        self._texts: dict[int, bytes] = {}

    def pack(self, exposure: bytes) -> tuple[int, str]:
        """The template number and the digits of an exposure's JSON text (JSON holds no raw
        NUL byte, so NUL marks where the digits go; bytes that do hold one are kept whole)."""
        numbers = _NUMBER.findall(exposure)
        template = _NUMBER.sub(b"\x00", exposure)
        n = self._ids.get(template)
        if n is None:
            if len(self._ids) >= MAX_TEMPLATES or b"\x00" in exposure:
                template, numbers = exposure, []  # kept whole: nothing saved, nothing lost
            n = self._db.execute("INSERT INTO templates (text) VALUES (?)",
                                 (template,)).lastrowid
            assert n is not None
            if len(self._ids) < MAX_TEMPLATES:
                self._ids[template] = n
        return n, b",".join(numbers).decode()

    def unpack(self, template: int, numbers: str) -> bytes:
        text = self._texts.get(template)
        if text is None:
            row = self._db.execute("SELECT text FROM templates WHERE n = ?",
                                   (template,)).fetchone()
            text = bytes(row[0])
            if len(self._texts) < MAX_TEMPLATES:
                self._texts[template] = text
        if not numbers:
            return text
        parts = text.split(b"\x00")
        digits = numbers.encode().split(b",")
        out = [parts[0]]
        for number, part in zip(digits, parts[1:], strict=True):
            out.append(number)
            out.append(part)
        return b"".join(out)


class Manifest:
    """An open manifest; ``create`` a new one in a folder being prepared, or ``open`` one."""

    def __init__(self, db: sqlite3.Connection, path: str) -> None:
        self._db = db
        self.path = path
        self.exposures = Exposures(db)
        self._rubrics: dict[tuple[str, str], int] = {}
        self.meta = dict(db.execute("SELECT name, value FROM meta").fetchall())

    @classmethod
    def create(cls, folder: str, meta: dict[str, str]) -> Manifest:
        path = os.path.join(folder, NAME)
        db = sqlite3.connect(path, isolation_level=None)
        # Written once, inside a folder that is thrown away unless the whole prepare succeeds:
        # no journal and no syncs while it is filled.
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(_SCHEMA)
        db.execute("BEGIN")
        db.executemany("INSERT INTO meta VALUES (?, ?)",
                       sorted({**meta, "schema": SCHEMA_VERSION}.items()))
        return cls(db, path)

    @classmethod
    def open(cls, folder: str, readonly: bool = False) -> Manifest:
        path = os.path.join(folder, NAME)
        if not os.path.isdir(folder):
            raise InputError(f"{folder} is not a folder; give the folder `evalstream batch "
                             "prepare` wrote.")
        if not os.path.exists(path):
            raise InputError(f"{folder} holds no {NAME}; give the folder `evalstream batch "
                             "prepare` wrote.")
        try:
            if readonly:
                from urllib.parse import quote

                db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True,
                                     isolation_level=None)
            else:
                db = sqlite3.connect(path, isolation_level=None, timeout=30)
            version = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        except sqlite3.Error as exc:
            raise InputError(f"cannot read {path}: {exc}") from exc
        if version is None or version[0] != SCHEMA_VERSION:
            raise InputError(f"{path} is not an evalstream batch manifest of schema "
                             f"{SCHEMA_VERSION}.")
        return cls(db, path)

    # -- what was prepared ----------------------------------------------------------------------
    @property
    def provider(self) -> str:
        return self.meta["provider"]

    def config(self) -> JudgeConfig:
        """The judge config the requests were built for."""
        m = self.meta
        temperature = msgspec.json.decode(m["temperature"])
        return JudgeConfig(model=m["model"], provider=m["provider"], base_url=m["base_url"],
                           temperature=temperature, max_output_tokens=int(m["max_output_tokens"]))

    def set_meta(self, name: str, value: str) -> None:
        try:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))
        except sqlite3.Error as exc:
            raise OutputError(f"cannot write {self.path}: {exc}") from exc
        self.meta[name] = value

    # -- filling it (prepare) ------------------------------------------------------------------
    def add_request(self, custom_id: bytes, file: int) -> bool:
        """Add a request line; False when the batch already has this request."""
        return self._db.execute("INSERT OR IGNORE INTO requests VALUES (?, ?)",
                                (custom_id, file)).rowcount == 1

    def add_state(self, line: int, custom_id: bytes, case_id: str, rubric_id: str,
                  rubric_hash: str, state_hash: str, exposure: bytes) -> None:
        rubric = self._rubrics.get((rubric_id, rubric_hash))
        if rubric is None:
            rubric = self._db.execute("INSERT INTO rubrics (rubric_id, rubric_hash) VALUES (?, ?)",
                                      (rubric_id, rubric_hash)).lastrowid
            assert rubric is not None
            self._rubrics[(rubric_id, rubric_hash)] = rubric
        template, numbers = self.exposures.pack(exposure)
        self._db.execute("INSERT INTO states VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (line, custom_id, case_id, rubric, bytes.fromhex(state_hash), template,
                          numbers))

    def add_exact(self, line: int, raw: bytes) -> None:
        self._db.execute("INSERT INTO exact VALUES (?, ?)", (line, raw))

    def add_file(self, f: BatchFile) -> None:
        self._db.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?)", tuple(f))

    def finish(self) -> None:
        """Commit what ``create`` began (the rest of the folder's life uses a journal)."""
        self._db.execute("COMMIT")
        self._db.execute("PRAGMA journal_mode=DELETE")

    # -- reading it (submit, status, collect) --------------------------------------------------
    def has_request(self, custom_id: str) -> bool:
        """Whether ``custom_id`` names a request line of this batch."""
        if len(custom_id) != 64:
            return False
        try:
            key = bytes.fromhex(custom_id)
        except ValueError:
            return False
        return self._db.execute("SELECT 1 FROM requests WHERE custom_id = ?",
                                (key,)).fetchone() is not None

    def files(self) -> list[BatchFile]:
        return [BatchFile(*row) for row in self._db.execute(
            "SELECT n, name, requests, bytes, xxh3 FROM files ORDER BY n")]

    def count(self, table: str) -> int:
        assert table in ("requests", "states", "exact", "files")
        return int(self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def items(self) -> Iterator[State | Exact]:
        """Every judge state and exact verdict, in input line order."""
        rubrics = {n: (rid, rhash) for n, rid, rhash in self._db.execute(
            "SELECT n, rubric_id, rubric_hash FROM rubrics")}
        exact = self._db.cursor().execute("SELECT line, raw FROM exact ORDER BY line")
        states = self._db.cursor().execute(
            "SELECT line, custom_id, case_id, rubric, state_hash, template, numbers FROM states "
            "ORDER BY line")
        unpack = self.exposures.unpack
        next_exact = exact.fetchone()
        for line, cid, case_id, rubric, state_hash, template, numbers in states:
            while next_exact is not None and next_exact[0] < line:
                yield Exact(next_exact[0], bytes(next_exact[1]))
                next_exact = exact.fetchone()
            rubric_id, rubric_hash = rubrics[rubric]
            yield State(line, cid.hex(), case_id, rubric_id, rubric_hash, state_hash.hex(),
                        msgspec.Raw(unpack(template, numbers)))
        while next_exact is not None:
            yield Exact(next_exact[0], bytes(next_exact[1]))
            next_exact = exact.fetchone()

    # -- submissions ---------------------------------------------------------------------------
    def batch(self, file: int) -> dict[str, object] | None:
        cursor = self._db.execute("SELECT * FROM batches WHERE file = ?", (file,))
        row = cursor.fetchone()
        if row is None:
            return None
        return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}

    def save_batch(self, file: int, **fields: object) -> None:
        """Commit what was learned about a file's batch, at once (a kill just after loses
        nothing)."""
        try:
            self._db.execute("INSERT OR IGNORE INTO batches (file) VALUES (?)", (file,))
            for name, value in fields.items():
                assert re.fullmatch(r"[a-z_]+", name)
                self._db.execute(f"UPDATE batches SET {name} = ? WHERE file = ?", (value, file))
        except sqlite3.Error as exc:
            raise OutputError(f"cannot write {self.path}: {exc}") from exc

    def close(self) -> None:
        self._db.close()


def check_new_folder(folder: str) -> None:
    """Raise UsageError unless ``folder`` can be made (missing, or an empty folder)."""
    if os.path.exists(folder):
        if not os.path.isdir(folder):
            raise UsageError(f"{folder} exists and is not a folder; prepare writes a new folder "
                             "of request files: choose another name.")
        if os.listdir(folder):
            raise UsageError(f"{folder} is not empty; prepare writes a new folder (a batch "
                             "already prepared there keeps its ids): choose another name.")
    parent = os.path.dirname(os.path.abspath(folder))
    if not os.path.isdir(parent):
        raise UsageError(f"cannot create {folder}: the folder {parent} does not exist.")
