"""A whole ``convert`` run: source rows -> cases or rejects, counts that add up, atomic outputs.

Every case is one the case decoder ``validate`` uses accepts, so a converted file holds
exactly what ``validate`` accepts: told from the case dict by ``fits`` for the usual shapes
(the decoder's rules, checked in Python without decoding), else by decoding the line; a
case the decoder refuses becomes a reject with the row number, the source column, the case
field and ``validate``'s sentence. A format that writes verdicts (a peer's judge:
``Format.writes``) gives each row's verdicts, each decoded by the verdict decoder ``agree``,
``compare`` and ``view`` use; the output is then a target of kind ``verdicts`` in the run's
transaction.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import xxhash

from evalstream._cases import ids, schema
from evalstream._cases.rejects import explain, long_text_sentence, raw_text, reject_kind
from evalstream._convert import chat, formats, mapping
from evalstream._convert.fits import fits
from evalstream._convert.formats.base import Format, Given, Source
from evalstream._convert.report import ConvertCounts, ConvertReject, ConvertReport, encode
from evalstream._convert.rows import ID_SLOT, OWN_ID, Built, Notes, Row, RowProblem, own_id
from evalstream._files.lines import DEFAULT_MAX_LINE_BYTES
from evalstream._files.outputs import AtomicOutput, escape_line_breaks
from evalstream._files.transaction import Target, Transaction
from evalstream._version import __version__

FIRST_REJECTS_KEPT = 20


@dataclass
class Options:
    """Everything a convert run needs (``evalstream.convert`` fills it)."""

    input: str
    output: str
    format: str | None = None  # --from; None: inferred from the file
    maps: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    id_from: str | None = None
    parse_json: list[str] = field(default_factory=list)
    keep_unmapped: bool = False
    tool_failure_when: list[str] = field(default_factory=list)
    split: str | None = None
    separator: str | None = None
    quoting: bool = True
    rejects: str | None = None
    report: str | None = None
    force: bool = False  # replace targets that hold something else
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES


def run(opts: Options, on_row: Callable[[int], None] | None = None,
        ) -> tuple[ConvertReport, list[ConvertReject]]:
    """Convert ``opts.input`` into cases at ``opts.output``; return the report and the first
    rejects. Files appear under their names only if the whole run succeeds."""
    started = time.perf_counter()
    if opts.format is not None:
        fmt, inferred = formats.named(opts.format), None
    else:  # reads the input's first bytes: the targets are checked next, before the rows
        fmt, inferred = formats.infer(opts.input)
    outputs = _outputs(opts, fmt)
    formats.check(opts.input, fmt)
    formats.check_options(fmt, opts)
    rules = chat.parse_failure_rules(opts.tool_failure_when)
    if opts.id_from is not None and "{" in opts.id_from:
        mapping.check_template(opts.id_from)
    table_map = None
    if fmt.takes("mapping"):
        table_map = mapping.parse(opts.maps, opts.sets, opts.values, opts.id_from,
                                  opts.parse_json, opts.keep_unmapped)
    with contextlib.ExitStack() as stack:
        source = _open(opts, fmt, table_map, rules, stack)
        with outputs:
            out, rej_out, report_out = (outputs.open(role) if outputs.path(role) else None
                                        for role in ("output", "rejects", "report"))
            assert out is not None
            converter = _Converter(source, opts.id_from, rej_out, fmt.writes)
            converter.convert(out, on_row)
            report = converter.report(opts, fmt, inferred, table_map, outputs.path("rejects"),
                                      started)
            if report_out is not None:
                report_out.write(encode(report))
    return report, converter.first_rejects


def _outputs(opts: Options, fmt: Format) -> Transaction:
    """The targets, checked: the output (of the format's kind: cases, or verdicts, so that
    an existing file is replaced only by its own kind), the rejects and report beside an
    output file by default; with the output on stdout, only those asked for (as build: the
    summary has the counts)."""
    return Transaction(
        [("input", opts.input)],
        [Target("output", opts.output, fmt.writes),
         Target("rejects", opts.rejects, "rejects", beside=".rejects.jsonl"),
         Target("report", opts.report, "json", beside=".report.json")], opts.force).check()


def _open(opts: Options, fmt: Format, table_map: mapping.Mapping | None,
          rules: list[chat.FailureRule], stack: contextlib.ExitStack) -> Source:
    """The input opened as ``fmt`` (the format's own module says how)."""
    return fmt.open(Given(opts.input, stack, table_map, rules, opts.id_from, opts.split,
                          opts.separator, opts.quoting, opts.max_line_bytes))


class _Converter:
    """The per-row loop and its counters."""

    def __init__(self, source: Source, id_from: str | None,
                 rej_out: AtomicOutput | None, writes: str = "cases") -> None:
        self.source, self.id_from, self.rej_out = source, id_from, rej_out
        self.writes = writes
        self.build, self.own_ids = source.build, source.own_ids  # read once a row
        self.counts = ConvertCounts()
        self.rejected_by_kind: Counter[str] = Counter()
        self.rejected_by_column: Counter[str] = Counter()
        self.notes = Notes()
        self.row_notes = Notes()
        self.first_rejects: list[ConvertReject] = []
        self.index = ids.IdIndex()
        self.keys_seen: dict[str, None] = {}  # columns of JSON rows, in order of first sight
        self.decode = schema.decoder().decode
        self.encode = msgspec.json.Encoder().encode
        if writes == "verdicts":
            # What agree, compare and view read: every verdict written is decoded by it.
            from evalstream._verdicts import records

            self.decode_verdict = records.decoder().decode
            self.verdict_shape = records.SHAPE
        self._encode_reject = msgspec.json.Encoder().encode

    def convert(self, out: AtomicOutput, on_row: Callable[[int], None] | None) -> None:
        counts = self.counts
        pending: list[bytes] = []
        track_keys = self.source.columns is None
        for row in self.source.rows:
            counts.rows += 1
            if row.blank:
                counts.blank += 1
                continue
            if row.values is None:
                assert row.problem is not None
                self._reject(row, row.problem)
                continue
            # A row's keys compared in C (no new dict): most rows have no key unseen.
            if track_keys and len(self.keys_seen) < 1000 \
                    and not row.values.keys() <= self.keys_seen.keys():
                self.keys_seen.update(dict.fromkeys(row.values))
            data = self._case(row)
            if data is not None:
                counts.cases += 1
                if self.writes == "verdicts":
                    # A judged case's verdict lines, joined (a case without any writes none).
                    counts.verdicts += data.count(b"\n") + 1 if data else 0
                if data:
                    pending.append(data)
                if len(pending) >= 256:
                    pending.append(b"")  # the last line's newline
                    out.write(b"\n".join(pending))  # one copy of each line, not two
                    pending = []
            if on_row is not None:
                on_row(counts.rows)
        if pending:
            pending.append(b"")
            out.write(b"\n".join(pending))

    def _case(self, row: Row) -> bytes | None:
        """The case line (without its newline) for a row, or None when it is rejected."""
        values = row.values
        assert values is not None
        notes = self.row_notes  # one object for every row: what the last row noted is gone
        if notes.counts:
            notes.counts = {}
        case_id = None
        how = "source"
        try:
            if not self.own_ids:
                # first, so rejects can name it
                case_id, how = self._case_id(values, row.number, notes)
            built = self.build(values, notes)
            case = built.case
            if case.get("id", ID_SLOT) is ID_SLOT:  # the run gives the case its id
                if "id" in case:
                    case["id"] = case_id  # in the place the builder held for it, first
                else:
                    case = {"id": case_id, **case}
                if how != "hash":
                    built.id_column = self.id_from or OWN_ID
            if built.verdicts is not None:
                return self._verdicts(row, case["id"], built, notes)
            data = escape_line_breaks(self.encode(case))
        except RowProblem as problem:
            if problem.case_id is None and isinstance(case_id, str):
                problem.case_id = case_id
            self._reject(row, problem)
            return None
        except UnicodeEncodeError:
            self._reject(row, RowProblem("A value holds a lone UTF-16 surrogate, which is not a "
                                         "Unicode character and cannot be written as UTF-8.",
                                         kind="lone surrogate"))
            return None
        if fits(case):  # what the decoder accepts, told from the dict (fits.py)
            valid_id = case["id"]
        else:
            valid_id = self._decoded_id(row, case, data, built)
            if valid_id is None:
                return None
        first = self.index.add_id(valid_id, row.number)
        if first:
            why = {"hash": " (rows with the same content get the same id: give --id-from "
                           "COLUMN, or drop the repeated row)",
                   "own": " (the rows' own `id`: give --id-from to make ids another way, "
                          "e.g. --id-from 'ID.{#}' with the row number)"}.get(how, "")
            self._reject(row, RowProblem(
                f"Case id {valid_id!r} was already used by row {first}{why}; case ids must "
                "be unique in a dataset.", built.column_of("$.id"), "$.id",
                kind="duplicate id", case_id=valid_id))
            return None
        if notes.counts:
            self.notes.merge(notes)
        return data

    def _decoded_id(self, row: Row, case: dict[str, Any], data: bytes, built: Built
                    ) -> str | None:
        """The case's id when the case decoder accepts its line, no string nested in its
        free-form values is over the text cap and no item id repeats (validate's rules); else
        None, the row rejected with the decoder's sentence (a case ``fits`` could not
        vouch for)."""
        try:
            decoded = self.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            path, sentence = explain(exc, data)
            self._reject(row, RowProblem(sentence, built.column_of(path), path,
                                         kind=reject_kind(exc, data), case_id=_id_of(case)))
            return None
        # validate's own check of the free-form values (metadata, tool events' input and
        # output): a line no longer than the cap cannot hold a longer string.
        long = schema.long_nested_text(decoded) if len(data) > schema.MAX_TEXT_CHARS else None
        if long is not None:
            path, length, is_key = long
            self._reject(row, RowProblem(long_text_sentence(path, length, is_key),
                                         built.column_of(path), path, kind="over a cap",
                                         case_id=decoded.id))
            return None
        dup = schema.duplicate_item_id(decoded)
        if dup is not None:
            path, value = dup
            self._reject(row, RowProblem(
                f"`{path}` repeats the id {value!r}; ids must be unique within their list in "
                "a case.", built.column_of(path), path, kind="duplicate id", case_id=decoded.id))
            return None
        return decoded.id

    def _verdicts(self, row: Row, case_id: Any, built: Built, notes: Notes) -> bytes | None:
        """The verdict lines of one judged case (a peer's), each checked by the verdict
        decoder, joined without the last newline (as ``_case``'s line); None when the row is
        rejected (one bad verdict rejects its case's row, so that a case is judged whole or
        not at all)."""
        assert built.verdicts is not None
        id_column = built.id_column or built.origin.get(("id",))
        if id_column is not None:  # a verdict's id is its `case_id`: a reject names its source
            built.origin[("case_id",)] = id_column
        lines = []
        for verdict in built.verdicts:
            data = escape_line_breaks(self.encode({"case_id": case_id, **verdict}))
            try:
                self.decode_verdict(data)
            except (msgspec.DecodeError, RecursionError) as exc:
                path, sentence = explain(exc, data, self.verdict_shape)
                self._reject(row, RowProblem(sentence, built.column_of(path), path,
                                             kind=reject_kind(exc, data, self.verdict_shape),
                                             case_id=case_id if isinstance(case_id, str)
                                             else None))
                return None
            lines.append(data)
        first = self.index.add_id(case_id, row.number)
        if first:
            self._reject(row, RowProblem(
                f"Case id {case_id!r} was already used by row {first}; a case's verdicts come "
                "from one row (give --id-from to tell the rows apart).",
                built.column_of("$.id"), "$.case_id", kind="duplicate id", case_id=case_id))
            return None
        self.notes.merge(notes)
        return b"\n".join(lines)  # without the last newline, as a case line

    def _case_id(self, values: dict[str, Any], number: int, notes: Notes) -> tuple[Any, str]:
        """A row's case id, and where it came from: ``given`` (--id-from), ``own`` (the row's
        own valid ``id``: the default, issue 30) or ``hash`` (a row without one)."""
        if self.id_from is None:
            own = own_id(values)
            if own is not None:
                return own, "own"
            if values.get(OWN_ID) is not None:  # said in a warning: its id is in metadata
                notes.add("own_ids", "not valid")
            notes.add("generated_ids", "cases")
            return xxhash.xxh3_128_hexdigest(msgspec.json.encode(values, order="sorted")), "hash"
        if "{" in self.id_from:
            return mapping.fill_template(self.id_from, values, number), "given"
        value = mapping.lookup(values, self.id_from)
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise RowProblem(f"Column {self.id_from!r} (--id-from) holds "
                             f"{'null' if value is None else type(value).__name__}; a case id "
                             "must be a string or an integer.", self.id_from, "$.id",
                             kind="invalid id")
        return str(value), "given"

    def _reject(self, row: Row, problem: RowProblem) -> None:
        self.counts.rejected += 1
        self.rejected_by_kind[problem.kind] += 1
        if problem.column is not None:
            self.rejected_by_column[problem.column] += 1
        raw = row.raw if row.values is None else _raw(row.values)
        rej = ConvertReject(row.number, problem.column, problem.case_id, problem.path,
                            problem.sentence, raw_text(raw))
        if len(self.first_rejects) < FIRST_REJECTS_KEPT:
            self.first_rejects.append(rej)
        if self.rej_out is not None:  # None: counted only (the cases went to stdout)
            self.rej_out.write(escape_line_breaks(self._encode_reject(rej)) + b"\n")

    def report(self, opts: Options, fmt: Format, inferred: str | None,
               table_map: mapping.Mapping | None, rejects: str | None, started: float
               ) -> ConvertReport:
        columns = self.source.columns
        seen = columns if columns is not None else list(self.keys_seen)
        used = set(table_map.used_columns()) if table_map is not None else set()
        if opts.id_from is None and OWN_ID in seen:
            used.add(OWN_ID)  # the rows' own ids (those that are not valid: a warning below)
        used |= {c.split(".")[0] for c in used if columns is None}  # `r.text` reads `r`
        unmapped = [c for c in seen if c not in used] \
            if table_map is not None and not table_map.keep_unmapped else []
        warnings = []
        if unmapped:
            listed = ", ".join(repr(c) for c in unmapped[:20])
            warnings.append(f"columns not mapped, so not in the cases: {listed}"
                            f"{' ...' if len(unmapped) > 20 else ''}; map them or give "
                            "--keep-unmapped to keep them in metadata.")
        if table_map is not None and columns is None and self.counts.rows > self.counts.blank:
            never = [c for c in table_map.used_columns() if c not in self.keys_seen
                     and not ("." in c and c.split(".")[0] in self.keys_seen)]
            if never:
                warnings.append(f"mapped keys found in no row: {', '.join(map(repr, never))}.")
        bad_ids = self.notes.flat("own_ids").get("not valid", 0)
        if bad_ids:
            warnings.append(f"{bad_ids:,} case{'s' if bad_ids > 1 else ''} had an `id` that is "
                            f"not a valid case id ({schema.ID_RULE}), so "
                            f"{'their ids are hashes' if bad_ids > 1 else 'its id is a hash'} "
                            "of the row; give --id-from with a template to make ids from it "
                            "(e.g. --id-from 'NAME.{#}' with the row number).")
        if self.counts.cases == 0:
            warnings.append(f"no row became a {'judged ' * (fmt.writes == 'verdicts')}case" + (
                ": the input has no rows." if self.counts.rows == self.counts.blank else
                "; see the rejects for why."))
        exit_code = 1 if self.counts.rejected or self.counts.cases == 0 else 0
        n = self.notes
        return ConvertReport(
            command="convert", evalstream=__version__, input=opts.input, output=opts.output,
            rejects=rejects, format=fmt.name, writes=fmt.writes, inferred=inferred,
            mapping=table_map.describe() if table_map is not None else None,
            ids=self.source.ids_from, columns=columns, unmapped_columns=unmapped,
            counts=self.counts,
            rejected_by_kind=dict(sorted(self.rejected_by_kind.items())),
            rejected_by_column=dict(sorted(self.rejected_by_column.items())),
            placeholders=n.flat("placeholders"), generated_ids=n.flat("generated_ids"),
            tool_events=n.flat("tool_events"), roles_renamed=n.flat("roles_renamed"),
            labels=n.nested("labels"), unmapped_scores=n.nested("unmapped_scores"),
            verdicts=n.nested("verdicts"), unscored=n.flat("unscored"),
            warnings=warnings, seconds=round(time.perf_counter() - started, 3),
            exit_code=exit_code)


def _id_of(case: dict[str, Any]) -> str | None:
    value = case.get("id")
    return value if isinstance(value, str) else None


def _raw(values: dict[str, Any]) -> bytes:
    try:
        return msgspec.json.encode(values)
    except (TypeError, UnicodeEncodeError, msgspec.EncodeError):
        return repr(values).encode("utf-8", "replace")
