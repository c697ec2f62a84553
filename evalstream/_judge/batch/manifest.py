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
  when preparing and the store last collected into; ``no_na``, the rubrics (rows of
  ``rubrics``, a JSON list) whose ``na`` is not an answer (a manifest made before issue 25 has
  none: every rubric allowed it then).
- ``files``: each request file, its requests, bytes and xxh3-128.
- ``requests``: one row per request line (``custom_id``, a SHA-256, as 32 bytes), its file.
  Two judge states with the same request share one line.
- ``states``: every judge state of the input, by input line: its ``custom_id`` (the store
  key), case id, rubric, state hash and exposure (see ``Exposures``).
- ``exact``: the exact verdicts of the input, by line, passed through to the verdicts.
- ``pairs``: the ``pair`` (key, order, lengths) of each pairwise judge state, by line (issue
  28; a manifest prepared before it has no such table: no pairwise state).
- ``batches``: per request file, what ``submit`` and ``status`` learned (ids, status).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from evalstream._judge.inputs import Pair
from evalstream._judge.request import JudgeConfig
from evalstream._judge.sqlite import check_tables, columns, reads
from evalstream.errors import InputError, OutputError, UsageError

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
                     digits TEXT NOT NULL);
CREATE TABLE exact (line INTEGER PRIMARY KEY, raw BLOB NOT NULL);
CREATE TABLE batches (file INTEGER PRIMARY KEY, input_file_id TEXT, batch_id TEXT,
                      creating REAL, status TEXT, output_file_id TEXT, error_file_id TEXT,
                      results_url TEXT, counts TEXT, error TEXT, downloaded TEXT,
                      updated REAL);
"""
# Created with every manifest since issue 28, and checked when present: a manifest prepared
# before it, without the table, is read as one without pairwise states.
_PAIRS = "CREATE TABLE pairs (line INTEGER PRIMARY KEY, pair BLOB NOT NULL);"
_decode_pair = msgspec.json.Decoder(Pair).decode
MAX_TEMPLATES = 4096
_DIGITS = b"0123456789"
_DIGITS_TO_NUL = bytes.maketrans(_DIGITS, b"\x00" * 10)
_NOT_DIGITS = bytes(b for b in range(256) if b not in _DIGITS)


class State(NamedTuple):
    """A judge state as collect needs it: where it was, its key, what its verdict copies."""

    line: int
    key: str  # the request's store key, also its custom_id
    case_id: str
    rubric_id: str
    rubric_hash: str
    state_hash: str
    exposure: msgspec.Raw
    allows_na: bool = True  # false: its rubric does not allow `na`
    pair: Pair | None = None  # a pairwise state's order


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
    "tokens":{"state":...}}``: much the same for every state of a rubric) kept once as a
    template, with a NUL byte where each digit was.

    An exposure is ~240 bytes of which only the token counts differ from state to state, so a
    state keeps a template number and its digits (~16 bytes). Two ``bytes.translate`` calls
    do it (~0.5 us; a regex took 10 us, zlib with a preset dictionary made 17 bytes in 87 us).
    Any bytes round-trip; bytes that hold a NUL themselves (never JSON), and any exposure past
    ``MAX_TEMPLATES`` distinct templates (an input not written by build), are kept whole:
    nothing saved, nothing lost.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._ids: dict[bytes, int] = {}
        self._forms: dict[int, tuple[bytes, bytes]] = {}

    def pack(self, exposure: bytes) -> tuple[int, str]:
        """The template number and the digits of an exposure's JSON text."""
        template = exposure.translate(_DIGITS_TO_NUL)
        digits = exposure.translate(None, _NOT_DIGITS)
        n = self._ids.get(template)
        if n is None:
            whole = len(self._ids) >= MAX_TEMPLATES or b"\x00" in exposure
            if whole:
                template, digits = exposure, b""
            n = self._db.execute("INSERT INTO templates (text) VALUES (?)",
                                 (template,)).lastrowid
            assert n is not None
            if not whole:
                self._ids[template] = n
        return n, digits.decode()

    def unpack(self, template: int, digits: str) -> bytes:
        """The exposure packed as ``template`` and ``digits``."""
        found = self._forms.get(template)
        if found is None:
            row = self._db.execute("SELECT text FROM templates WHERE n = ?",
                                   (template,)).fetchone()
            text = bytes(row[0])
            # The template as a %-format with a %c where each digit goes: one C call
            # rebuilds an exposure (a Python loop over the digits took ~25 us).
            found = text, text.replace(b"%", b"%%").replace(b"\x00", b"%c")
            if len(self._forms) < MAX_TEMPLATES:
                self._forms[template] = found
        text, form = found
        return form % tuple(digits.encode()) if digits else text


class Manifest:
    """An open manifest; ``create`` a new one in a folder being prepared, or ``open`` one."""

    def __init__(self, db: sqlite3.Connection, path: str) -> None:
        self._db = db
        self.path = path
        self.exposures = Exposures(db)
        self._rubrics: dict[tuple[str, str], int] = {}
        self._no_na: list[int] = []  # rubrics (rows) that do not allow `na`
        self._states: list[tuple[int, bytes, str, int, bytes, int, str]] = []
        self._written: list[tuple[bytes, int, int]] = []
        self._pairs: list[tuple[int, bytes]] = []
        self.meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
        self._has_pairs = bool(columns(db, "pairs"))

    @classmethod
    def create(cls, folder: str, meta: dict[str, str]) -> Manifest:
        path = os.path.join(folder, NAME)
        db = sqlite3.connect(path, isolation_level=None)
        # Written once, inside a folder that is thrown away unless the whole prepare succeeds:
        # no journal and no syncs while it is filled.
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(_SCHEMA + _PAIRS)
        # Every request line as it is written, in order; indexed and dropped at the end.
        db.execute("CREATE TABLE written (custom_id BLOB NOT NULL, file INTEGER NOT NULL, "
                   "line INTEGER NOT NULL)")
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
            if version is None or version[0] != SCHEMA_VERSION:
                raise InputError(f"{path} is not an evalstream batch manifest of schema "
                                 f"{SCHEMA_VERSION}.")
            manifest = cls(db, path)
        except sqlite3.Error as exc:
            raise InputError(f"cannot read {path}: {exc}") from exc
        check_tables(db, _SCHEMA, manifest)
        if manifest._has_pairs:
            check_tables(db, _PAIRS, manifest)
        return manifest

    def damaged(self, what: str) -> InputError:
        return InputError(
            f"the batch manifest {self.path} {what}: it is damaged, or another program changed "
            "it. Restore it from a copy, or prepare the batch again (`evalstream batch "
            "prepare`).")

    # -- what was prepared ----------------------------------------------------------------------
    @property
    def provider(self) -> str:
        return self.meta["provider"]

    def config(self) -> JudgeConfig:
        """The judge config the requests were built for."""
        m = self.meta
        try:
            temperature = msgspec.json.decode(m["temperature"])
            # the settings beyond these (issue 27); a manifest made before has none
            settings = msgspec.json.decode(m.get("settings", "{}"), type=dict[str, Any])
            return JudgeConfig(model=m["model"], provider=m["provider"],
                               base_url=m["base_url"], temperature=temperature,
                               max_output_tokens=int(m["max_output_tokens"]), **settings)
        except (KeyError, ValueError, TypeError, msgspec.DecodeError) as exc:
            raise self.damaged(f"holds no judge config evalstream can read ({exc!r} in its "
                               "meta table)") from exc

    def set_meta(self, name: str, value: str) -> None:
        try:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))
        except sqlite3.Error as exc:
            raise OutputError(f"cannot write {self.path}: {exc}") from exc
        self.meta[name] = value

    # -- filling it (prepare) ------------------------------------------------------------------
    def add_request(self, custom_id: bytes, file: int, line: int) -> None:
        """Note a request line written (duplicates are found at the end: ``index_requests``)."""
        self._written.append((custom_id, file, line))
        if len(self._written) >= 4096:
            self._flush_written()

    def _flush_written(self) -> None:
        self._db.executemany("INSERT INTO written VALUES (?, ?, ?)", self._written)
        self._written = []

    def index_requests(self) -> Iterator[tuple[int, int]]:
        """Index the request lines by custom_id; the (file, line) of every line that repeats
        an earlier line's request, in file and line order.

        Why at the end: a request's custom_id is a SHA-256, so looking each one up as it is
        written is a random read of an index larger than any cache (~10 us a request at a
        million, a third of a prepare). Sorted once at the end (SQLite's sorter, bounded
        memory) the index costs ~1 us a request, and a repeated request, which is rare, is
        cut from its file afterwards."""
        self._flush_written()
        self._db.execute("INSERT OR IGNORE INTO requests SELECT custom_id, file FROM written "
                         "ORDER BY custom_id, rowid")
        written = self.count("written")
        if self.count("requests") == written:
            return
        yield from self._db.execute(
            "SELECT file, line FROM (SELECT file, line, row_number() OVER (PARTITION BY "
            "custom_id ORDER BY rowid) AS k FROM written) WHERE k > 1 ORDER BY file, line")

    def add_state(self, line: int, custom_id: bytes, case_id: str, rubric_id: str,
                  rubric_hash: str, state_hash: str, exposure: bytes,
                  allows_na: bool = True, pair: Pair | None = None) -> None:
        rubric = self._rubrics.get((rubric_id, rubric_hash))
        if rubric is None:
            rubric = self._db.execute("INSERT INTO rubrics (rubric_id, rubric_hash) VALUES (?, ?)",
                                      (rubric_id, rubric_hash)).lastrowid
            assert rubric is not None
            self._rubrics[(rubric_id, rubric_hash)] = rubric
            if not allows_na:  # in the rubric hash too: the same for every state of it
                self._no_na.append(rubric)
        template, digits = self.exposures.pack(exposure)
        self._states.append((line, custom_id, case_id, rubric, bytes.fromhex(state_hash),
                             template, digits))
        if pair is not None:
            self._pairs.append((line, msgspec.json.encode(pair)))
        if len(self._states) >= 4096:
            self._flush_states()

    def _flush_states(self) -> None:
        # In input order, so each lands at the end of the table: one executemany a block of
        # rows costs ~1 us a state against ~4 us one execute each.
        self._db.executemany("INSERT INTO states VALUES (?, ?, ?, ?, ?, ?, ?)", self._states)
        self._db.executemany("INSERT INTO pairs VALUES (?, ?)", self._pairs)
        self._states, self._pairs = [], []

    def add_exact(self, line: int, raw: bytes) -> None:
        self._db.execute("INSERT INTO exact VALUES (?, ?)", (line, raw))

    def add_file(self, f: BatchFile) -> None:
        self._db.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?)", tuple(f))

    def finish(self) -> None:
        """Commit what ``create`` began (the rest of the folder's life uses a journal)."""
        self._flush_states()
        if self._no_na:
            self._db.execute("INSERT INTO meta VALUES ('no_na', ?)", (json.dumps(self._no_na),))
        self._db.execute("DROP TABLE written")
        self._db.execute("COMMIT")
        self._db.execute("VACUUM")  # the dropped table's pages
        self._db.execute("PRAGMA journal_mode=DELETE")

    # -- reading it (submit, status, collect) --------------------------------------------------
    @reads
    def has_request(self, custom_id: str) -> bool:
        """Whether ``custom_id`` names a request line of this batch."""
        if len(custom_id) != 64:
            return False
        try:
            key = bytes.fromhex(custom_id)
        except ValueError:
            return False
        if key.hex() != custom_id:
            # bytes.fromhex reads upper case too: such an id would be stored under a key no
            # judge state has. A custom_id is exactly the lower-case hex prepare wrote.
            return False
        return self._db.execute("SELECT 1 FROM requests WHERE custom_id = ?",
                                (key,)).fetchone() is not None

    @reads
    def files(self) -> list[BatchFile]:
        return [BatchFile(*row) for row in self._db.execute(
            "SELECT n, name, requests, bytes, xxh3 FROM files ORDER BY n")]

    @reads
    def count(self, table: str) -> int:
        assert table in ("requests", "states", "exact", "files", "written")
        return int(self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def items(self) -> Iterator[State | Exact]:
        """Every judge state and exact verdict, in input line order."""
        try:
            yield from self._items()
        except sqlite3.Error as exc:
            raise self.damaged(f"cannot be read ({exc})") from exc
        except (TypeError, AttributeError, KeyError, ValueError,
                msgspec.DecodeError) as exc:  # a row's values
            raise self.damaged(f"holds a judge state evalstream did not write ({exc!r})") \
                from exc

    def _items(self) -> Iterator[State | Exact]:
        rubrics = {n: (rid, rhash) for n, rid, rhash in self._db.execute(
            "SELECT n, rubric_id, rubric_hash FROM rubrics")}
        no_na = set(json.loads(self.meta.get("no_na", "[]")))
        exact = self._db.cursor().execute("SELECT line, raw FROM exact ORDER BY line")
        pair = ", (SELECT pair FROM pairs WHERE pairs.line = states.line)" if self._has_pairs \
            else ", NULL"
        states = self._db.cursor().execute(
            "SELECT line, custom_id, case_id, rubric, state_hash, template, digits" + pair
            + " FROM states ORDER BY line")
        unpack = self.exposures.unpack
        next_exact = exact.fetchone()
        for line, cid, case_id, rubric, state_hash, template, digits, order in states:
            while next_exact is not None and next_exact[0] < line:
                yield Exact(next_exact[0], bytes(next_exact[1]))
                next_exact = exact.fetchone()
            rubric_id, rubric_hash = rubrics[rubric]
            yield State(line, cid.hex(), case_id, rubric_id, rubric_hash, state_hash.hex(),
                        msgspec.Raw(unpack(template, digits)), rubric not in no_na,
                        None if order is None else _decode_pair(order))
        while next_exact is not None:
            yield Exact(next_exact[0], bytes(next_exact[1]))
            next_exact = exact.fetchone()

    # -- submissions ---------------------------------------------------------------------------
    @reads
    def batch(self, file: int) -> dict[str, object] | None:
        cursor = self._db.execute("SELECT * FROM batches WHERE file = ?", (file,))
        row = cursor.fetchone()
        if row is None:
            return None
        return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}

    def all_downloaded(self) -> bool:
        """Whether ``status`` saw every file's batch end and saved its results (maybe none:
        a batch that failed validation)."""
        return bool(self.files()) and all(
            (self.batch(f.n) or {}).get("downloaded") is not None for f in self.files())

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
