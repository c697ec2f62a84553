"""What a ``convert`` source format declares, and what it hands the run when it opens.

A format is one module of this package holding one ``Format``: its ``--from`` name, what it
reads (one line, for ``--list-formats`` and docs/convert.md), the options it takes, how a
file is recognised as it (names, first bytes as ``_files.sniff`` calls them, a folder, a
first line), what convert says about a file of its kind that another command was given, and
``open``: the file's rows and the builder that turns a row into a case. The registry
(``formats/__init__.py``) lists the modules, one line each, and answers every question about
formats from their declarations.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO, NamedTuple

from evalstream._convert import mapping as mapping_
from evalstream._convert.chat import FailureRule
from evalstream._convert.rows import OWN_ID, Builder, Row, own_id
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES, open_input
from evalstream._files.sniffed import Sniffed


class Flag(NamedTuple):
    """One option as the command line spells it, and the field of convert's ``Options`` it
    sets (given when the field is true; for ``inverted``, when it is false)."""

    flag: str
    field: str
    inverted: bool = False
    required: bool = False  # said in --list-formats: a format taking it needs it

    def given(self, options: object) -> bool:
        """Whether a run's options give this flag."""
        value = bool(getattr(options, self.field))
        return not value if self.inverted else value


class Option(NamedTuple):
    """Options that only some formats take, as one (a format takes all of them or none), and
    what the formats taking them are called in a sentence ("" for just their names)."""

    flags: tuple[Flag, ...]
    takers: str = ""


# Every option a format may take or refuse, by the name a ``Format`` lists it under. An option
# not here (--rejects, --report, --force, --max-line-bytes, ...) is the run's, for every format.
OPTIONS: dict[str, Option] = {
    "mapping": Option((Flag("--map", "maps", required=True), Flag("--set", "sets"),
                       Flag("--values", "values"), Flag("--parse-json", "parse_json"),
                       Flag("--keep-unmapped", "keep_unmapped")), "tables"),
    "id_from": Option((Flag("--id-from", "id_from"),)),
    "tool_failure_when": Option((Flag("--tool-failure-when", "tool_failure_when"),)),
    "split": Option((Flag("--split", "split"),), "Hugging Face datasets"),
    "separator": Option((Flag("--separator", "separator"),
                         Flag("--no-quoting", "quoting", inverted=True))),
}


class FirstLine(NamedTuple):
    """A format recognised by its first line among the files named for it (OpenAI chats
    among JSONL files): the test of the file's first bytes, and how the report says it."""

    test: Callable[[bytes], bool]
    said: str


@dataclass
class Source:
    """An open source: its rows, the builder that turns a row into a case, its columns (None:
    each row has its own keys), and where case ids come from."""

    rows: Iterator[Row]
    build: Builder
    columns: list[str] | None
    ids_from: str
    own_ids: bool = False  # the builder sets each case's id (inspect: the sample id)


@dataclass(frozen=True)
class Given:
    """What a format opens: the input, the options that shape reading (the mapping and the
    tool rules parsed already), and the stack that closes what it opened when the run ends."""

    path: str
    stack: contextlib.ExitStack
    mapping: mapping_.Mapping | None = None
    rules: list[FailureRule] = field(default_factory=list)
    id_from: str | None = None
    split: str | None = None
    separator: str | None = None
    quoting: bool = True
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES

    @property
    def ids_from(self) -> str:
        """Where case ids come from, said for the report."""
        if self.id_from:
            return f"column {self.id_from}"
        return "the row's own `id` where it is a valid id, else xxh3-128 of its canonical JSON"

    def takes_own_id(self, values: dict[str, Any]) -> bool:
        """Whether a row's ``id`` is its case id (``--id-from id``, or no ``--id-from`` and a
        valid own id): a builder then does not repeat it in the case's metadata."""
        return self.id_from == OWN_ID or (self.id_from is None and own_id(values) is not None)

    def stream(self) -> BinaryIO:
        """The input's bytes (a file, ``.gz``/``.zst`` read through, or stdin), closed with
        the run."""
        stream = open_input(self.path)
        if self.path != "-":
            self.stack.callback(stream.close)
        return stream

    def table(self, rows: Iterator[Row], columns: list[str] | None) -> Source:
        """A table's source: its rows built into cases by ``--map`` (its columns, when it has
        them, checked against the mapping first)."""
        table_map, rules = self.mapping, self.rules
        assert table_map is not None  # the run parses it for every format that takes it
        if columns is not None:
            mapping_.check_columns(table_map, columns, self.path)
        # A partial is called in C: one Python frame a row less than a closure.
        build = functools.partial(mapping_.build, mapping=table_map, rules=rules)
        return Source(rows, build, columns, self.ids_from)


Advice = Callable[[Sniffed, str], "str | None"]


@dataclass(frozen=True, eq=False)  # a format is itself: compared and hashed by identity
class Format:
    """A source format, as its module declares it.

    Recognition (``formats.infer``, in this order): a folder is the format with ``folder``;
    first bytes of one of its ``kinds`` name a format with ``magic`` whatever the file is
    called; then the name (``.gz``/``.zst`` stripped) is the first format, in the registry's
    order, with its suffix (``""``: no suffix) whose ``first_line`` test, if any, passes;
    then first bytes of one of its ``kinds`` name a format with ``guess``. The file is then
    checked against the format (``formats.check``): its first bytes must be one of its
    ``kinds``, or ``also``, or (``text``) any text the sniffer names no binary format.
    """

    name: str  # --from
    reads: str  # what it reads, one line: --list-formats and docs/convert.md
    open: Callable[[Given], Source]
    # What it writes: "cases", or "verdicts" (a peer's judge: inspect's model-graded scores,
    # promptfoo's grades), each the output's kind in the run's transaction.
    writes: str = "cases"
    options: tuple[str, ...] = ()  # the OPTIONS it takes
    refuses: Mapping[str, str] = field(default_factory=dict)  # OPTIONS it refuses: why, said
    stream: bool = False  # read as a byte stream: stdin, .gz and .zst too
    suffixes: tuple[str, ...] = ()
    # What the sniffer calls files of this format ("jsonl": it names nothing): the check takes
    # them, and a wrong-file sentence about one names this format.
    kinds: tuple[str, ...] = ()
    magic: str = ""  # its kinds name it whatever its name: how the report says them
    guess: bool = False  # its kinds name it when its name does not
    first_line: FirstLine | None = None
    folder: str = ""  # a folder is this format: what such a folder is
    also: tuple[str, ...] = ()  # other kinds its files may show
    text: bool = False  # any text may be it (a table the sniffer could not call one)
    mistakes: Mapping[str, str] = field(default_factory=dict)  # kinds it is not: the sentence
    # How a file of another command's input becomes cases through this format, for kinds that
    # need more than "convert it: COMMAND" (COMMAND: this format's command line, FILE for the
    # file); None for the rest.
    advise: Advice | None = None

    def takes(self, option: str) -> bool:
        """Whether the format takes the option ``option`` (a name of ``OPTIONS``)."""
        return option in self.options

    def command(self, file: str = "FILE") -> str:
        """The command that converts a file of this format, for a sentence (in backticks)."""
        flags = " --map input=COLUMN,output=COLUMN" if self.takes("mapping") else ""
        return f"`evalstream convert {file} {self.writes}.jsonl --from {self.name}{flags}`"
