"""The build pipeline: lines -> cases or rejects -> checks -> judge states or skips.

``Processor`` does the per-line work and owns no files, so a worker process can run
one over its own byte range. ``run`` wires reader, processor and atomic sinks into a
whole ``build`` or ``validate`` run and returns its report.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec
import xxhash

from evalstream.cases import ids, schema
from evalstream.cases.rejects import Reject, long_line_reject, raw_text, reject, reject_kind
from evalstream.checks import tokens
from evalstream.checks.report import OverBudget, RubricInfo, RunReport, Tally
from evalstream.checks.report import encode as encode_report
from evalstream.checks.rubrics import Rubric, RubricSet
from evalstream.checks.state import (
    FIELD_OF,
    NEVER_SHOWN,
    STATE_NAMES,
    CheckRecord,
    ExactVerdict,
    Exposure,
    RecordLayout,
    Tokens,
    question_text,
    record_layout,
)
from evalstream.errors import UsageError
from evalstream.files.lines import DEFAULT_MAX_LINE_BYTES, Chunk, LongLine, input_size, open_input
from evalstream.files.outputs import AtomicOutput, commit_all, sidecar

OVER_BUDGET = "over budget"
_NO_QUESTION = msgspec.Raw(b"null")  # exact rubrics ask no judge
_ITEM_KIND = {"messages": "message", "context": "passage", "toolEvents": "tool event"}
FIRST_REJECTS_KEPT = 20


@dataclass
class Options:
    """Everything a build or validate run needs; the CLI fills it from its arguments."""

    input: str
    output: str | None = None  # None: validate only
    rejects: str | None = None
    report: str | None = None
    rubric_files: list[str] = field(default_factory=list)
    max_tokens: int = tokens.DEFAULT_BUDGET
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    allow_unknown_fields: bool = False
    workers: int = 1


class Outcome(NamedTuple):
    """What became of one (case, rubric): written (``record``) or skipped (``reason``)."""

    rubric: Rubric
    reason: str | None
    record: Any


class _Plan(NamedTuple):
    """What one rubric does with cases that have one pattern of present fields."""

    rubric: Rubric
    reason: str | None  # a `requires` that this pattern lacks
    present: frozenset[str]
    attrs: tuple[tuple[str, str], ...]  # (judge-state name, case attribute) to copy
    # When two or more judge rubrics apply to the pattern: (b'{"name":' or b',"name":',
    # attribute) per shown field, to join the state from fields encoded once per case.
    # A state encoded whole is one call; from fields, one per field plus a join: shared
    # fields pay for that only when some other rubric shows them too.
    keys: tuple[tuple[bytes, str], ...]
    shown: list[str]
    withheld: list[str]
    hidden: list[str]
    exposure: Exposure  # without tokens: the exposure of an exact verdict
    layout: RecordLayout  # a judge record's fixed bytes
    slot: int  # where ``Processor`` counts this plan's fixed outcome (its reason, or written)


class Processor:
    """Turns chunks of lines into output bytes and rejects, counting everything in a Tally."""

    def __init__(self, rubrics: RubricSet | None, max_tokens: int, max_line_bytes: int,
                 allow_unknown_fields: bool, check_duplicates: bool = True) -> None:
        self.rubrics = rubrics
        self.max_line_bytes = max_line_bytes
        self.tally = Tally()
        self.decode = schema.decoder(allow_unknown_fields).decode
        self.encoder = msgspec.json.Encoder()
        # A worker leaves duplicate ids to the parent, which sees the whole input in order;
        # it logs each accepted case's id hash, line, offset and output end instead.
        self.index: ids.IdIndex | None = ids.IdIndex() if check_duplicates else None
        self.log: ids.CaseLog | None = None if check_duplicates else ids.CaseLog()
        self.first_rejects: list[Reject] = []
        judges = [r for r in rubrics.rubrics if r.kind == "judge"] if rubrics else []
        self._questions = {r.id: msgspec.Raw(self.encoder.encode(question_text(r.question)))
                           for r in judges}
        self.budget = tokens.Budget(max_tokens, [question_text(r.question) for r in judges])
        self._encode = self.encoder.encode
        self._plans: dict[tuple[bool, ...], list[_Plan]] = {}
        # Outcomes fixed by a plan are counted by its slot; the others (`when` skips, over
        # budget) by (rubric id, reason, shown fields). ``finish`` folds both into the tally.
        self._slots: list[tuple[str, str | None, tuple[str, ...]]] = []
        self._slot_counts: list[int] = []
        self._outcomes: Counter[tuple[str, str | None, tuple[str, ...]]] = Counter()
        self._unseen_when = {key: path for r in (rubrics.rubrics if rubrics else ())
                             for key, path, _ in r.when}

    # -- lines ------------------------------------------------------------------------------
    def long_line(self, item: LongLine) -> list[Reject]:
        """The reject for a line over the size limit."""
        self.tally.counts.lines += 1
        return [self._rejected(long_line_reject(item, self.max_line_bytes), "line too long")]

    def chunk(self, chunk: Chunk) -> tuple[list[bytes], list[Reject]]:
        """The output records (one line each) and the rejects (in line order) of one chunk.

        Each case is checked and written as soon as it is decoded: holding a chunk's
        decoded cases before encoding them measured 2 us a case slower (cache misses).
        Records stay separate ``bytes`` until they are written (``os.writev`` takes them
        as they are): appending them to one growing buffer cost reallocations and copies.
        """
        if self.rubrics is None:
            return [], self.accept(chunk)[1]
        out: list[bytes] = []
        admit, write = self._admit, self.write
        log = self.log
        logged: list[tuple[int, str, int]] = []  # a worker's (index, id, output end)
        size = 0  # a worker's output bytes so far in this chunk
        rejects: list[Reject] = []
        first = chunk.line
        cases = 0
        for i, line in enumerate(chunk.lines):
            case = admit(line, first + i, rejects)
            if case is None:
                continue
            cases += 1
            if log is None:
                write(case, first + i, out)
            else:
                before = len(out)
                write(case, first + i, out)
                size += sum(map(len, out[before:]))
                logged.append((i, case.id, size))
        self._counted(chunk, cases, rejects)
        if log is not None:
            log.add(chunk, logged)
        return out, rejects

    def accept(self, chunk: Chunk) -> tuple[list[tuple[int, Any]], list[Reject]]:
        """The valid cases of a chunk with their line numbers, and its rejects in line order.

        Counts lines, blanks, cases and rejects; duplicate ids are checked against every
        earlier chunk this processor saw.
        """
        admit = self._admit
        accepted: list[tuple[int, Any]] = []
        rejects: list[Reject] = []
        first = chunk.line
        for i, line in enumerate(chunk.lines):
            case = admit(line, first + i, rejects)
            if case is not None:
                accepted.append((first + i, case))
        self._counted(chunk, len(accepted), rejects)
        return accepted, rejects

    def _admit(self, line: bytes, line_no: int, rejects: list[Reject]) -> Any:
        """The case on this line (the caller counts it), or None: blank (counted) or
        rejected (added to ``rejects``, its offset still 0: ``_counted`` sets it)."""
        try:
            case = self.decode(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            if not line or line.isspace():
                self.tally.counts.blank += 1
            else:
                rejects.append(self._rejected(reject(line_no, 0, line, exc), reject_kind(exc)))
            return None
        dup = schema.duplicate_item_id(case)
        if dup is not None:
            path, value = dup
            kind = _ITEM_KIND[path[2:].split("[")[0]]
            rejects.append(self._rejected(Reject(
                line_no, 0, case.id, path, f"`{path}` repeats the {kind} id {value!r}; {kind} "
                "ids must be unique within a case.", raw_text(line)), "duplicate id"))
            return None
        if self.index is not None:
            used = self.index.add_id(case.id, line_no)
            if used:
                rejects.append(self._rejected(Reject(
                    line_no, 0, case.id, "$.id", f"Case id {case.id!r} was already used on "
                    f"line {used}; case ids must be unique in a dataset.", raw_text(line)),
                    "duplicate id"))
                return None
        return case

    def _counted(self, chunk: Chunk, cases: int, rejects: list[Reject]) -> None:
        """Count a chunk's lines and cases, give its rejects their offsets, keep the first."""
        self.tally.counts.lines += len(chunk.lines)
        self.tally.counts.cases += cases
        if rejects:
            offsets = chunk.offsets()
            for r in rejects:
                r.offset = offsets[r.line - chunk.line]
            if len(self.first_rejects) < FIRST_REJECTS_KEPT:
                self.first_rejects += rejects[: FIRST_REJECTS_KEPT - len(self.first_rejects)]

    def _rejected(self, rej: Reject, kind: str) -> Reject:
        self.tally.counts.rejected += 1
        self.tally.rejected_by_kind[kind] += 1
        return rej

    # -- checks -----------------------------------------------------------------------------
    def checks(self, case: Any, line: int) -> list[Outcome]:
        """Every rubric's outcome for one valid case, in rubric order, counted in the tally,
        with the records ``write`` would write read back as objects."""
        out: list[bytes] = []
        skipped: list[tuple[Rubric, str | None]] = []
        self.write(case, line, out, skipped)
        records = iter(out)
        return [Outcome(rubric, reason, None if reason else msgspec.json.decode(
                    next(records), type=CheckRecord if rubric.kind == "judge" else ExactVerdict))
                for rubric, reason in skipped]

    def write(self, case: Any, line: int, out: list[bytes],
              outcomes: list[tuple[Rubric, str | None]] | None = None) -> None:
        """Append a record line for every rubric that applies to one valid case to ``out``, and
        count every rubric's outcome in the tally (in ``outcomes`` too, when given: the
        rubric and its skip reason, None when written).

        What a rubric shows and withholds depends only on which fields the case has, so it
        is planned once per pattern; a judge record is joined from the plan's fixed bytes
        (``RecordLayout``) and the case's own parts: no object per check on this hot path.
        """
        metadata = case.metadata
        key = (case.messages is not None, case.context is not None, case.policy is not None,
               case.tool_events is not None, metadata is not None, case.expected is not None)
        plans = self._plans.get(key) or self._plan(key)
        if self._unseen_when and metadata:
            self._note_when_keys(metadata)
        slot_counts = self._slot_counts
        budget = self.budget
        encode = self._encode
        memo: tokens.Memo | None = None  # token counts of this case's field segments
        fields: dict[str, bytes] | None = None  # encoded fields, for plans with ``keys``
        for plan in plans:
            rubric = plan.rubric
            reason = plan.reason or (rubric.skip_reason(plan.present, metadata)
                                     if rubric.when else None)
            if reason is None and rubric.check is not None:
                events = case.tool_events
                ok, read = rubric.check.evaluate(events)
                out.append(encode(ExactVerdict(
                    case.id, rubric.id, "exact", "pass" if ok else "fail",
                    [events[i].id for i in sorted(read)], plan.exposure, rubric.hash)) + b"\n")
            elif reason is None:
                if plan.keys:  # fields shown by several rubrics: each encoded once a case
                    fields = {} if fields is None else fields
                    parts: list[bytes] = []
                    for key_bytes, attr in plan.keys:
                        value = fields.get(attr)
                        if value is None:
                            value = fields[attr] = encode(getattr(case, attr))
                        parts += (key_bytes, value)
                    parts.append(b"}")
                    state = b"".join(parts)
                else:
                    state = encode({name: getattr(case, attr) for name, attr in plan.attrs})
                if len(state) <= budget.byte_room:
                    n, longest, method = len(state), budget.longest_question_bytes, tokens.BYTES
                else:
                    memo = {} if memo is None else memo
                    n, longest, method = budget.fit(state, plan.shown, memo)
                total = n + longest
                if total <= budget.max_tokens:
                    layout = plan.layout
                    out.append(b"".join((
                        layout.start, encode(case.id), layout.head, state, layout.exposure,
                        encode(Tokens(n, longest, total, budget.max_tokens, tokens.TOKENIZER,
                                      method)),
                        layout.hashes, xxhash.xxh3_128_hexdigest(state).encode(), layout.end)))
                else:
                    reason = OVER_BUDGET
                    self.tally.over(OverBudget(line, case.id, rubric.id, total,
                                               method == tokens.BPE))
            if reason is plan.reason:  # written, or skipped for what the pattern lacks
                slot_counts[plan.slot] += 1
            else:
                self._outcomes[rubric.id, reason, ()] += 1
            if outcomes is not None:
                outcomes.append((rubric, reason))

    def _plan(self, key: tuple[bool, ...]) -> list[_Plan]:
        """The per-rubric plans for cases with this pattern of present fields."""
        has = dict(zip(("conversation", "reference_material", "policy", "tool_events",
                        "metadata", "expected"), key, strict=True))
        present = tuple(n for n in STATE_NAMES if has.get(n, True))
        pset = frozenset(present)
        hidden = [n for n in NEVER_SHOWN if has[n]]
        plans = []
        rubrics = self.rubrics.rubrics if self.rubrics else ()
        judges = sum(r.kind == "judge" and all(n in pset for n in r.requires) for r in rubrics)
        for rubric in rubrics:
            shown = [n for n in rubric.shows if n in pset]
            withheld = [n for n in present if n not in shown]
            missing = next((n for n in rubric.requires if n not in pset), None)
            reason = f"requires {missing}" if missing else None
            question = self._questions.get(rubric.id, _NO_QUESTION)
            exposure = Exposure(shown, withheld, hidden)
            self._slots.append((rubric.id, reason, () if reason else tuple(shown)))
            self._slot_counts.append(0)
            plans.append(_Plan(
                rubric=rubric,
                reason=reason,
                present=pset,
                attrs=tuple((n, FIELD_OF[n]) for n in shown),
                keys=tuple((("{" if i == 0 else ",").encode() + self._encode(n) + b":",
                            FIELD_OF[n]) for i, n in enumerate(shown)) if judges > 1 else (),
                shown=shown, withheld=withheld, hidden=hidden,
                exposure=exposure,
                layout=record_layout(rubric.id, question, exposure, rubric.hash),
                slot=len(self._slots) - 1))
        self._plans[key] = plans
        return plans

    def finish(self) -> Tally:
        """Fold the per-outcome counts into the tally (call once the input is read)."""
        tally = self.tally
        for key, n in zip(self._slots, self._slot_counts, strict=True):
            self._outcomes[key] += n
        self._slot_counts = [0] * len(self._slots)
        for (rubric_id, reason, shown), n in self._outcomes.items():
            if n == 0:
                continue
            if reason is None:
                tally.counts.checks += n
                tally.checks_by_rubric[rubric_id] += n
                exposure = tally.exposure[rubric_id]
                for name in shown:
                    exposure[name] += n
            else:
                tally.counts.skipped += n
                tally.skipped[rubric_id][reason] += n
        self._outcomes.clear()
        return tally

    def _note_when_keys(self, metadata: dict[str, Any]) -> None:
        from evalstream.checks.rubrics import metadata_has

        for key, path in list(self._unseen_when.items()):
            if metadata_has(metadata, path):
                self.tally.when_keys_seen.add(key)
                del self._unseen_when[key]


# -- whole runs ---------------------------------------------------------------------------------
def _same_file(a: str, b: str) -> bool:
    if a == "-" or b == "-":
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _plan(opts: Options) -> tuple[str | None, str]:
    """The rejects and report paths of a run, after checking no two paths collide."""
    anchor = opts.output if opts.output not in (None, "-") else opts.input
    rejects, report = opts.rejects, opts.report
    if anchor == "-" and (rejects is None or report is None):
        raise UsageError("reading stdin and writing stdout leaves nowhere to put the rejects and "
                         "report by default; give --rejects FILE and --report FILE.")
    rejects = rejects or sidecar(anchor, ".rejects.jsonl")
    report = report or sidecar(anchor, ".report.json")
    named = [("input", opts.input), ("output", opts.output), ("rejects", rejects),
             ("report", report)]
    for i, (name_a, a) in enumerate(named):
        for name_b, b in named[i + 1:]:
            if a is not None and b is not None and _same_file(a, b):
                raise UsageError(f"the {name_a} and {name_b} paths are the same file ({a}); "
                                 "choose a different output name.")
    if rejects == "-" and opts.output == "-":
        raise UsageError("the output and the rejects cannot both go to stdout.")
    return rejects, report


def load_rubrics(files: list[str]) -> RubricSet:
    """The rubric files given, or the built-in set when there are none."""
    from evalstream.checks import rubrics

    return rubrics.load(files) if files else rubrics.builtin()


def run(opts: Options, on_progress: Callable[[int, int | None], None] | None = None,
        ) -> tuple[RunReport, list[Reject]]:
    """Run ``build`` (when ``opts.output`` is set) or ``validate``; return the report and the
    first rejects. Files appear under their names only if the whole run succeeds."""
    started = time.perf_counter()
    command = "validate" if opts.output is None else "build"
    rubric_set = load_rubrics(opts.rubric_files) if command == "build" else None
    rejects_path, report_path = _plan(opts)
    if opts.max_tokens <= 0 or opts.max_line_bytes <= 0 or opts.workers <= 0:
        raise UsageError("--max-tokens, --max-line-bytes and --workers must be positive.")
    size = input_size(opts.input)
    warnings = []
    if opts.workers > 1 and (opts.input == "-" or opts.input.endswith((".gz", ".zst"))):
        warnings.append("--workers needs a plain input file (not stdin or compressed); "
                        "ran in one process.")
    sinks: list[AtomicOutput] = []
    try:
        out = AtomicOutput(opts.output) if opts.output is not None else None
        sinks += [out] if out else []
        rej_out = AtomicOutput(rejects_path) if rejects_path else None
        sinks += [rej_out] if rej_out else []
        report_out = AtomicOutput(report_path)
        sinks.append(report_out)
        from evalstream.pipeline import parallel

        if rubric_set is not None and parallel.worthwhile(opts, size):
            assert size is not None
            merger = parallel.run_parallel(opts, rubric_set, size, out, rej_out, on_progress)
            tally, first_rejects = merger.tally, merger.first_rejects
        else:
            processor = Processor(rubric_set, opts.max_tokens, opts.max_line_bytes,
                                  opts.allow_unknown_fields)
            _serial(processor, opts, size, out, rej_out, on_progress)
            tally, first_rejects = processor.finish(), processor.first_rejects
        report = _report(tally, opts, command, rubric_set, rejects_path, started, warnings)
        report_out.write(encode_report(report))
        # Every target written in full before any is renamed: a run that fails on its last
        # file still leaves the earlier outputs of the same names as they were.
        commit_all(sinks)
    except BaseException:
        for sink in sinks:
            sink.abort()
        raise
    return report, first_rejects


def _serial(processor: Processor, opts: Options, size: int | None, out: AtomicOutput | None,
            rej_out: AtomicOutput | None,
            on_progress: Callable[[int, int | None], None] | None) -> None:
    """Read the whole input in this process, writing output and rejects as they come."""
    from evalstream.files.lines import read_chunks

    encode = msgspec.json.Encoder().encode
    stream = open_input(opts.input)
    if out is not None:
        out.write_behind()
    try:
        done = 0
        for item in read_chunks(stream, opts.max_line_bytes):
            if isinstance(item, Chunk):
                records, rejects = processor.chunk(item)
                if out is not None:
                    out.write_all(records)
                if on_progress is not None:
                    done = item.offset + sum(map(len, item.lines)) + len(item.lines)
            else:
                rejects = processor.long_line(item)
                if len(processor.first_rejects) < FIRST_REJECTS_KEPT:
                    processor.first_rejects += rejects
                done = item.offset + item.size + 1
            if rejects and rej_out is not None:
                rej_out.write(b"".join(encode(r) + b"\n" for r in rejects))
            if on_progress is not None:
                on_progress(done, size)
    finally:
        if opts.input != "-":
            stream.close()


def _report(tally: Tally, opts: Options, command: str, rubric_set: RubricSet | None,
            rejects_path: str | None, started: float, warnings: list[str]) -> RunReport:
    if rubric_set is not None:
        for key in rubric_set.when_keys:
            if key not in tally.when_keys_seen and tally.counts.cases:
                warnings.append(f"no case has metadata key `{key}`, named by a `when` rule: the "
                                "rubrics that use it never apply.")
    return tally.to_report(
        command=command,
        input=opts.input,
        output=opts.output,
        rejects=rejects_path,
        rubrics=RubricInfo(rubric_set.ids, rubric_set.hash, list(rubric_set.sources))
        if rubric_set else None,
        tokenizer=tokens.TOKENIZER if rubric_set else None,
        budget=opts.max_tokens if rubric_set else None,
        rubric_ids=rubric_set.ids if rubric_set else [],
        warnings=warnings,
        seconds=round(time.perf_counter() - started, 3),
        exit_code=1 if tally.counts.rejected else 0,
    )
