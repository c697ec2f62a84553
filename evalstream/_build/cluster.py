"""``build``/``validate --engine dask``: byte ranges of many files on a Dask cluster.

The ranged engine (``_engines.ranges.on_cluster``) cuts the inputs (paths, globs, fsspec
URLs) into tasks, 64 MiB ranges of plain files and one task a compressed file, and runs
build's own range (``ranges.BuildRange``: the loop of one process) in each; a task writes
its records as one part file into a hidden folder beside the output, in the output's store.
Its case log stays on the cluster, where reducers find the duplicate ids, and the same
merge as ``--workers`` takes the parts in order (``ranges.BuildMerge``), joining them into
the target (``files.parts``). This module plans the targets (a file, an object, or a
directory of parts with a manifest) and commits them. Every task is a pure function of its
range, so a task that Dask runs again after a worker died writes the same part: the output
is byte-identical to one process reading the files in order.
"""

from __future__ import annotations

import time
from typing import Any

from evalstream._build.loop import Options, Outcome, report_of
from evalstream._build.ranges import BuildMerge, BuildRange
from evalstream._cases.rejects import Reject
from evalstream._checks.report import RunReport
from evalstream._checks.report import encode as encode_report
from evalstream._checks.rubrics import RubricSet
from evalstream._engines.dask import Cluster
from evalstream._engines.ranges import on_cluster
from evalstream._files.lines import Progress
from evalstream._files.parts import Streamed, parts_folder, remove_folder
from evalstream._files.store import InputFile, input_volume
from evalstream._files.transaction import Transaction


def run(opts: Options, rubric_set: RubricSet | None, files: list[InputFile],
        outputs: Transaction, started: float,
        on_progress: Progress | None) -> tuple[RunReport, list[Reject]]:
    """Build (or validate) ``files`` on the cluster ``opts.scheduler`` (None: this machine's
    cores) into the checked ``outputs``; return the report and the first rejects. Targets
    appear only if all succeeds."""
    command = "validate" if opts.output is None else "build"
    with Cluster(opts.scheduler, opts.workers if opts.workers > 1 else None) as cluster:
        # Part files go beside the output, else beside the rejects file; a run with neither
        # (validate to the terminal or stdout) gets its rejects back with the results.
        anchor = next((t for t in (opts.output, outputs.path("rejects"))
                       if t not in (None, "-")), None)
        folder = parts_folder(anchor, cluster.run_id) if anchor is not None else None
        try:
            with outputs:
                # A directory's rejects and report are written inside it, with it.
                out, rej_out, report_out = (
                    outputs.open_joined(role, folder) if outputs.path(role) else None
                    for role in ("output", "rejects", "report"))
                outcome = _merge(cluster, opts, rubric_set, files, folder, out, rej_out,
                                 on_progress)
                if outcome.stopped:
                    outputs.leave_out("output")  # standard output is gone
                if not outcome.lines.rejected:
                    outputs.empty("rejects")  # as one process: no new empty rejects file
                report = report_of(outcome, opts, command, rubric_set, outputs.path("rejects"),
                                 outputs.path("report"), started, [])
                report.seconds = round(time.perf_counter() - started, 3)
                if report_out is not None:
                    report_out.write(encode_report(report))
        finally:
            if folder is not None:
                remove_folder(folder)
    return report, outcome.first_rejects


def _merge(cluster: Cluster, opts: Options, rubric_set: RubricSet | None,
           files: list[InputFile], folder: str | None, out: Any, rej_out: Any,
           on_progress: Progress | None) -> Outcome:
    # A local output file is joined while the other tasks run, as the process engine joins
    # it (see BuildMerge). A directory, an object or standard output is joined in order.
    ahead = out.output if isinstance(out, Streamed) and out.output.rewindable else None
    produce = BuildRange(opts, rubric_set, input_volume(files, opts.input))
    merge = BuildMerge(produce, out, ahead=ahead, sizes=getattr(out, "part_sizes", None))
    merged = on_cluster(cluster, produce, merge, files=files, folder=folder,
                        counts_checks=rubric_set is not None, rejects_out=rej_out,
                        on_progress=on_progress, stop_quietly=True)
    return Outcome(merged.lines, merged.checks, merged.first_rejects, merged.stopped)
