"""Command line:
``python -m benchmarks {generate,baseline,compare,check,check-evalstream,run,convert,stages,
judge,jury,judge-clients,judge-faults,tokens,batch,view,stats-polars,convert-plain,pairs}``.

Each subcommand imports only what it needs, so that a timed baseline does not pay for the
imports of the others.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def _size(value: str) -> int:
    """argparse type for ``100MB``-style sizes."""
    from benchmarks.generate import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def cmd_generate(args: argparse.Namespace) -> int:
    """Write a generated input file and report its size and speed on stderr."""
    from benchmarks.generate import generate

    start = time.perf_counter()
    cases, written = generate(args.out, args.size, profile=args.profile, seed=args.seed)
    elapsed = time.perf_counter() - start
    print(
        f"{args.out}: {cases} cases, {written / 1e6:.1f} MB in {elapsed:.1f}s "
        f"({written / 1e6 / elapsed:.1f} MB/s)",
        file=sys.stderr,
    )
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    """Run one baseline pipeline."""
    from benchmarks.baselines import main

    return main(args.name, args.input, args.output)


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare two state files."""
    from benchmarks.compare import main

    return main(args.a, args.b)


def cmd_check(args: argparse.Namespace) -> int:
    """Check that the baselines agree on the edge cases and on the given inputs."""
    from benchmarks.check import main

    return main(args.inputs)


def cmd_check_evalstream(args: argparse.Namespace) -> int:
    """Check that evalstream's states equal the msgspec baseline's."""
    from benchmarks.check import main_evalstream

    return main_evalstream(args.inputs)


def cmd_run(args: argparse.Namespace) -> int:
    """Run the benchmark matrix."""
    from benchmarks.run import VARIANTS, main

    return main(
        sizes=args.size or [_size("100MB")],
        runs=args.runs,
        variant_names=args.variants or list(VARIANTS),
        profiles=args.profiles,
        cache=args.cache_dir,
        seed=args.seed,
        out=args.out,
        base=args.base,
        keep_outputs=args.keep_outputs,
        timeout=args.timeout,
    )


def cmd_convert(args: argparse.Namespace) -> int:
    """Time ``evalstream convert`` on CSV and Parquet against Polars reading them."""
    from benchmarks.convert import main

    return main(args.size or [_size("100MB")], args.runs, args.cache_dir, args.seed,
                args.timeout, args.shape, args.variants, args.formats, args.base)


def cmd_convert_plain(args: argparse.Namespace) -> int:
    """The plain loop convert is measured against (run under measure.py)."""
    from benchmarks.convert_plain import main

    return main(args.shape, args.format, args.input, args.output)


def cmd_stages(args: argparse.Namespace) -> int:
    """Show where build's time goes, stage by stage."""
    from benchmarks.stages import main

    return main(args.input, args.repeat, args.builtin)


def cmd_judge(args: argparse.Namespace) -> int:
    """Time evalstream judge against the fake server, beside the bare aiohttp loop."""
    from benchmarks.judge import main

    return main(args.states or [1_000, 100_000], args.runs, args.latency,
                args.max_connections, args.cache_dir)


def cmd_jury(args: argparse.Namespace) -> int:
    """Time a jury of three (and three samples) beside one judge, against the fake server."""
    from benchmarks.jury import main

    return main(args.states or [1_000, 100_000], args.runs, args.latency,
                args.max_connections, args.cache_dir)


def cmd_judge_clients(args: argparse.Namespace) -> int:
    """Time the bare loops of the HTTP clients judge could use."""
    from benchmarks.judge import main_clients

    return main_clients(args.requests, args.runs, args.latency, args.max_connections,
                        args.cache_dir)


def cmd_judge_faults(args: argparse.Namespace) -> int:
    """Time evalstream judge against a server that refuses as a busy provider does."""
    from benchmarks.judge_faults import main

    return main(args.states, args.runs, args.latency or [0.05, 0.2],
                args.max_connections or [8, 32, 128], args.first_429, args.first_500,
                args.retry_after, args.cache_dir, args.base)


def cmd_tokens(args: argparse.Namespace) -> int:
    """The token counters, the corpus x9 input, the count cache."""
    from benchmarks.tokens import main

    return main(args.rest)


def cmd_batch(args: argparse.Namespace) -> int:
    """Time batch prepare and collect beside build."""
    from benchmarks.batch import main

    return main(args.states or [100_000, 1_000_000], args.runs, args.cache_dir)


def cmd_view(args: argparse.Namespace) -> int:
    """Time evalstream view's index pass and first pages beside the floors of reading."""
    from benchmarks.view import main

    return main(args.size or ([] if args.tiny else [_size("1GB")]), args.runs, args.cache_dir,
                args.rationale, args.tiny, args.floors)


def cmd_stats_polars(args: argparse.Namespace) -> int:
    """The Polars baseline of stats (run under measure.py), optionally checked."""
    from benchmarks.stats_polars import main

    return main(args.input, args.output, args.check)


def cmd_pairs(args: argparse.Namespace) -> int:
    """Time build --pair-with, in step and indexed, beside build of one run."""
    from benchmarks.pairs import main

    return main(args.size or [_size("100MB"), _size("300MB")], args.runs, args.cache_dir,
                args.check)


def cmd_view_baseline(args: argparse.Namespace) -> int:
    """One floor of the view benchmark (run under measure.py)."""
    from benchmarks.view import baseline

    return baseline(args.name, args.cases, args.verdicts)


BASELINE_NAMES = ("lines", "msgspec", "pydantic", "json", "jq")
VARIANT_HELP = (
    "baselines lines msgspec json pydantic jq; evalstream-all evalstream-builtin "
    "evalstream-long evalstream-w1 evalstream-w2 evalstream-exact evalstream-cl100k "
    "evalstream-dask2 evalstream-dask2-dir stats stats-w2 stats-dask2 "
    "(default: all but those pinned to another profile)"
)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Generate evaluation cases, run baseline pipelines, time evalstream.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="write a deterministic JSONL file of cases")
    gen.add_argument("out", type=Path)
    gen.add_argument("--size", type=_size, required=True, help="e.g. 100MB, 1GB (decimal)")
    gen.add_argument("--profile", choices=("normal", "long"), default="normal")
    gen.add_argument("--seed", type=int, default=0)
    gen.set_defaults(func=cmd_generate)

    base = sub.add_parser("baseline", help="run one baseline pipeline")
    base.add_argument("name", choices=BASELINE_NAMES)
    base.add_argument("input", type=Path)
    base.add_argument("output", type=Path)
    base.set_defaults(func=cmd_baseline)

    cmp_ = sub.add_parser("compare", help="compare two state files line by line")
    cmp_.add_argument("a", type=Path)
    cmp_.add_argument("b", type=Path)
    cmp_.set_defaults(func=cmd_compare)

    check = sub.add_parser("check", help="check that the baselines agree with each other")
    check.add_argument("inputs", type=Path, nargs="*", help="generated files to check too")
    check.set_defaults(func=cmd_check)

    check_es = sub.add_parser(
        "check-evalstream", help="check that evalstream's states equal the msgspec baseline's"
    )
    check_es.add_argument(
        "inputs", type=Path, nargs="*", help="files to check after the edge cases"
    )
    check_es.set_defaults(func=cmd_check_evalstream)

    run = sub.add_parser("run", help="time the variants on generated inputs")
    run.add_argument(
        "--size", type=_size, action="append", help="input size, repeatable (default 100MB)"
    )
    run.add_argument("--runs", type=int, default=3)
    run.add_argument("--variants", nargs="+", metavar="NAME", help=VARIANT_HELP)
    run.add_argument(
        "--profiles",
        nargs="+",
        default=["normal"],
        choices=("normal", "long", "corpus9", "shared"),
        help="profiles for the variants not pinned to one (default normal); corpus9 is the "
             "shared corpus x9 (316 MB, --size does not apply); shared is the cases of "
             "../shared/bench/gen_cases.py --target-mb SIZE",
    )
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--cache-dir", type=Path, default=Path("/tmp/evalstream-bench"))
    run.add_argument("--out", type=Path, help="also write the results as a JSON document")
    run.add_argument(
        "--keep-outputs",
        action="store_true",
        help="keep each variant's last output in CACHE_DIR/out/VARIANT-PROFILE-SIZE/",
    )
    run.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    run.add_argument("--base", type=Path, metavar="TREE",
                     help="also run each evalstream variant from another copy of the tree "
                          "(`git worktree add`), as base:VARIANT, interleaved run by run")
    run.set_defaults(func=cmd_run)

    conv = sub.add_parser("convert", help="time `evalstream convert` on CSV and Parquet")
    conv.add_argument("--size", type=_size, action="append",
                      help="CSV size, repeatable (default 100MB); Parquet of the same rows")
    conv.add_argument("--runs", type=int, default=3)
    conv.add_argument("--seed", type=int, default=0)
    conv.add_argument("--cache-dir", type=Path, default=Path("/tmp/evalstream-bench"))
    conv.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    conv.add_argument("--shape", choices=("mapped", "text"), default="mapped",
                      help="mapped: passages, labels, scenario; text: id + 3 text columns")
    conv.add_argument("--variants", nargs="+",
                      choices=("polars-read", "polars-rows", "reader-rows", "plain", "convert",
                               "convert-base"))
    conv.add_argument("--formats", nargs="+", choices=("csv", "jsonl", "parquet"))
    conv.add_argument("--base", type=Path, metavar="TREE",
                      help="the convert-base variant: `convert` of another source tree (e.g. a "
                           "worktree of main), run in the same rounds")
    conv.set_defaults(func=cmd_convert)
    plain = sub.add_parser("convert-plain", help="the plain loop convert is measured against")
    plain.add_argument("shape", choices=("mapped", "text"))
    plain.add_argument("format", choices=("csv", "jsonl", "parquet"))
    plain.add_argument("input", type=Path)
    plain.add_argument("output", type=Path)
    plain.set_defaults(func=cmd_convert_plain)

    stages = sub.add_parser("stages", help="where build's time goes, in one process")
    stages.add_argument("input", type=Path)
    stages.add_argument("--repeat", type=int, default=5)
    stages.add_argument("--builtin", action="store_true",
                        help="the built-in rubrics instead of all_fields.toml")
    stages.set_defaults(func=cmd_stages)

    for name, func, helptext in (
            ("judge", cmd_judge, "time evalstream judge against the fake server (50 ms)"),
            ("jury", cmd_jury, "time a jury of three beside one judge (fake server, 50 ms)"),
            ("judge-clients", cmd_judge_clients, "time the bare loops of aiohttp, httpx, httpx2")):
        judge = sub.add_parser(name, help=helptext)
        if name in ("judge", "jury"):
            judge.add_argument("--states", type=int, action="append",
                               help="judge states, repeatable (default 1000 and 100000)")
        else:
            judge.add_argument("--requests", type=int, default=5_000)
        judge.add_argument("--runs", type=int, default=3)
        judge.add_argument("--latency", type=float, default=0.05, help="seconds (default 0.05)")
        judge.add_argument("--max-connections", type=int, default=64)
        judge.add_argument("--cache-dir", type=Path, default=Path("/tmp/evalstream-bench"))
        judge.set_defaults(func=func)

    faults = sub.add_parser("judge-faults", help="time evalstream judge against isolated 429s "
                            "and 500s, beside a fault-free server and the bare loop")
    faults.add_argument("--states", type=int, default=2_000)
    faults.add_argument("--runs", type=int, default=3)
    faults.add_argument("--latency", type=float, action="append",
                        help="seconds, repeatable (default 0.05 and 0.2)")
    faults.add_argument("--max-connections", type=int, action="append",
                        help="repeatable (default 8, 32 and 128)")
    faults.add_argument("--first-429", type=float, default=0.2,
                        help="share of bodies whose first attempt gets a 429 (default 0.2)")
    faults.add_argument("--first-500", type=float, default=0.02,
                        help="share of bodies whose first attempt gets a 500 (default 0.02)")
    faults.add_argument("--retry-after", default="1", help="the 429's Retry-After (default 1)")
    faults.add_argument("--cache-dir", type=Path, default=Path("/tmp/evalstream-bench"))
    faults.add_argument("--base", type=Path,
                        help="another tree (e.g. main's): its judge run beside this one's")
    faults.set_defaults(func=cmd_judge_faults)

    tok = sub.add_parser("tokens", help="token counters, the corpus x9, the count cache",
                         add_help=False)
    tok.add_argument("rest", nargs=argparse.REMAINDER)
    tok.set_defaults(func=cmd_tokens)

    batch = sub.add_parser("batch", help="time batch prepare and collect beside build")
    batch.add_argument("--states", type=int, action="append",
                       help="judge states, repeatable (default 100000 and 1000000)")
    batch.add_argument("--runs", type=int, default=3)
    batch.add_argument("--cache-dir", type=Path, default=Path("/tmp/evalstream-bench"))
    batch.set_defaults(func=cmd_batch)

    view = sub.add_parser("view", help="time evalstream view: the index pass and first pages")
    view.add_argument("--size", type=_size, action="append",
                      help="cases size, repeatable (default 1GB)")
    view.add_argument("--runs", type=int, default=3)
    view.add_argument("--rationale", type=int, default=400,
                      help="characters of each verdict's rationale (default 400)")
    view.add_argument("--tiny", type=int, action="append", metavar="N",
                      help="N tiny cases instead (one all-fields check a case; repeatable)")
    view.add_argument("--floors", nargs="+", choices=("read", "decode", "load-all"),
                      help="the floors to run beside it (default all; load-all holds both "
                           "files as Python objects: several GB at 10^6 checks)")
    view.add_argument("--cache-dir", type=Path, default=Path("/tmp/evalstream-bench"))
    view.set_defaults(func=cmd_view)
    polars = sub.add_parser("stats-polars", help="stats' Polars baseline: cases per scenario, "
                            "labels per rubric and status")
    polars.add_argument("input", type=Path)
    polars.add_argument("output", type=Path)
    polars.add_argument("--check", type=Path, metavar="STATS_JSON",
                        help="compare the counts with `evalstream stats --format json`'s")
    polars.set_defaults(func=cmd_stats_polars)
    pairs = sub.add_parser("pairs", help="time build --pair-with: in step, indexed, one run")
    pairs.add_argument("--size", type=_size, action="append",
                       help="run A's size, repeatable (default 100MB and 300MB)")
    pairs.add_argument("--runs", type=int, default=3)
    pairs.add_argument("--check", action="store_true",
                       help="first check that both pair builds write the same bytes")
    pairs.add_argument("--cache-dir", type=Path, default=Path("/tmp/evalstream-bench"))
    pairs.set_defaults(func=cmd_pairs)
    floor = sub.add_parser("view-baseline", help="one floor of the view benchmark")
    floor.add_argument("name", choices=("read", "decode", "load-all"))
    floor.add_argument("cases")
    floor.add_argument("verdicts")
    floor.set_defaults(func=cmd_view_baseline)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; return its exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
