"""``build`` and ``validate`` over files: cases in, records, rejects and the run report out.

``run`` plans the targets, then reads the input in this process (``loop.process``) or, for
a plain file big enough to be worth it, over byte ranges in worker processes (``ranges``),
or on a Dask cluster (``cluster``); all run the same loop, so the output is byte-identical.
Every target is written under a temporary name and renamed only when the whole run
succeeded.
"""

from __future__ import annotations

import time
from typing import BinaryIO

from evalstream._build.loop import Options, Outcome, checker_for, process, report_of
from evalstream._cases.reading import case_reader
from evalstream._cases.rejects import Reject
from evalstream._checks import encodings
from evalstream._checks.report import RunReport
from evalstream._checks.report import encode as encode_report
from evalstream._checks.rubrics import RubricSet, load_rubrics
from evalstream._files.lines import (
    Progress,
    input_size,
    open_input,
    progress,
    read_chunks,
    read_files,
)
from evalstream._files.outputs import AtomicOutput
from evalstream._files.parts import is_directory
from evalstream._files.sniff import check_cases_input, check_cases_stream
from evalstream._files.store import (
    InputFile,
    input_volume,
    is_url,
    open_file,
    resolve_inputs,
)
from evalstream._files.temporaries import remove_stale_shared
from evalstream._files.transaction import Target, Transaction
from evalstream.errors import ReaderGone, UsageError


def run(opts: Options, on_progress: Progress | None = None) -> tuple[RunReport, list[Reject]]:
    """Run ``build`` (when ``opts.output`` is set) or ``validate``; return the report and the
    first rejects. Files appear under their names only if the whole run succeeds."""
    from evalstream._build import pairs

    started = time.perf_counter()
    command = "validate" if opts.output is None else "build"
    if opts.max_tokens <= 0 or opts.max_line_bytes <= 0 or opts.workers <= 0 \
            or opts.max_output_tokens <= 0:
        raise UsageError("--max-tokens, --max-output-tokens, --max-line-bytes and --workers must "
                         "be positive.")
    encodings.check_name(opts.tokenizer)
    rubric_set = load_rubrics(opts.rubric_files) if command == "build" else None
    warnings = []
    if opts.pair_with is not None:
        if rubric_set is None:
            raise UsageError("--pair-with builds pairwise states; validate each run alone.")
        warnings += pairs.check(opts, rubric_set)
    if opts.engine not in ("local", "dask"):
        raise UsageError(f"--engine {opts.engine!r}: choose local or dask.")
    if opts.scheduler is not None and opts.engine != "dask":
        raise UsageError("--scheduler needs --engine dask.")
    arguments = opts.arguments()
    files = resolve_inputs(arguments, opts.engine)
    outputs = _plan(opts, [f.url for f in files] if files is not None else [opts.input])
    remove_stale_shared()  # what killed runs left in /tmp, whether this run needs it or not
    if opts.pair_with is not None:
        assert rubric_set is not None
        return pairs.run(opts, rubric_set, outputs, warnings, started, on_progress)
    if files is not None:
        for f in files:
            if opts.engine == "local" and not is_url(f.url):
                check_cases_input(f.url)  # on a cluster each file's first task checks it
    else:
        check_cases_input(opts.input)  # a CSV, a JSON array, a misnamed archive: one sentence
    size = input_size(opts.input) if files is None else None
    if rubric_set is not None:
        warnings += pairs.skipped_pairwise(rubric_set)
    plain = files is None and not (opts.input == "-" or opts.input.endswith((".gz", ".zst")))
    if opts.workers > 1 and opts.engine == "local" and not plain:
        warnings.append("--workers needs one plain input file (not stdin, compressed or "
                        "several files); ran in one process.")
    if opts.engine == "dask":
        from evalstream._build import cluster

        assert files is not None
        return cluster.run(opts, rubric_set, files, outputs, started, on_progress)
    # Every target written in full before any is renamed: a run that fails on its last file
    # still leaves the earlier outputs of the same names as they were.
    with outputs:
        out, rej_out, report_out = (outputs.open(role) if outputs.path(role) else None
                                    for role in ("output", "rejects", "report"))
        outcome = None
        if files is None and opts.workers > 1:
            # Imported only here: with the engine and multiprocessing it is about a fifth of
            # a one-process build's start-up.
            from evalstream._build import ranges

            if ranges.worthwhile(opts, size):
                assert size is not None
                outcome = ranges.run(opts, rubric_set, size, out, rej_out, on_progress)
        if outcome is None:
            outcome = _serial(opts, rubric_set, files, size, out, rej_out, on_progress)
        if outcome.stopped:
            outputs.leave_out("output")  # standard output is gone: nothing more to write to it
        if not outcome.lines.rejected:
            outputs.empty("rejects")
        report = report_of(outcome, opts, command, rubric_set, outputs.path("rejects"),
                         outputs.path("report"), started, warnings)
        if report_out is not None:
            report_out.write(encode_report(report))
    return report, outcome.first_rejects


def _serial(opts: Options, rubric_set: RubricSet | None, files: list[InputFile] | None,
            size: int | None, out: AtomicOutput | None, rej_out: AtomicOutput | None,
            on_progress: Progress | None) -> Outcome:
    """Read the whole input (one stream, or ``files`` in order) in this process, writing
    output and rejects as they come."""
    reader = case_reader(opts.allow_unknown_fields, opts.max_line_bytes)
    checker = checker_for(opts, rubric_set, input_volume(files, opts.input))
    stream = open_input(opts.input) if files is None else None
    if stream is not None and opts.input == "-":
        stream = check_cases_stream(stream)
    if out is not None:
        out.write_behind()
    try:
        if stream is not None:
            items = read_chunks(stream, opts.max_line_bytes)
        else:
            assert files is not None
            items = read_files([f.url for f in files], opts.max_line_bytes, opener=_opener)
        if on_progress is not None:
            items = progress(items, on_progress, size)
        process(reader.read(items), checker, out.write_all if out else _ignore,
                rej_out.write if rej_out else _ignore)
    except ReaderGone:
        # `build ... - | head`: the reader has what it wanted. Stop quietly; the counts, the
        # rejects and the report are of the lines read until then.
        return Outcome(reader.counts, checker.tally if checker else None,
                       reader.first_rejects, stopped=True)
    finally:
        if stream is not None and opts.input != "-":
            stream.close()
    return Outcome(reader.counts, checker.tally if checker else None, reader.first_rejects)


def _opener(path: str) -> BinaryIO:
    """A local input as ``open_input`` opens it; a URL through fsspec (its head checked)."""
    if not is_url(path):
        return open_input(path)
    return check_cases_stream(open_file(path), path)


def _ignore(data: object) -> None:
    return None


# -- targets ---------------------------------------------------------------------------------------
def _plan(opts: Options, inputs: list[str]) -> Transaction:
    """The targets of a run, checked: no target is one of the ``inputs`` (the files read,
    globs resolved) or shares a file or stream with another, and each replaces only its own
    kind of output. ``build`` writes the rejects and the report next to its output file by
    default (inside it, for a directory of parts); to stdout, a FIFO or a device, and
    ``validate``, only those asked for (the summary on stderr says the counts). A rejects
    file build chose the name of is written only when something is rejected, or when an
    older one is there to replace (a stale file would mislead)."""
    out = opts.output
    if opts.engine != "dask" and any(is_url(t) for t in (out, opts.rejects, opts.report) if t):
        raise UsageError("an output at a URL is written by --engine dask; give a local path, "
                         "or add --engine dask.")
    if is_directory(out) and opts.engine != "dask":
        raise UsageError(f"cannot write {out}: that names a directory; give a file name. "
                         "A directory of parts (a name ending in /) is written by --engine "
                         "dask only.")
    return Transaction(
        [*(("input", i) for i in inputs), *(("input", p) for p in [opts.pair_with] if p),
         *(("rubrics", f) for f in opts.rubric_files)],
        [Target("output", out, "judge states", directory=is_directory(out)),
         Target("rejects", opts.rejects, "rejects", beside=".rejects.jsonl", optional=True),
         Target("report", opts.report, "json", beside=".report.json")],
        opts.force, beside_streams=False).check()

