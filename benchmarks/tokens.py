"""Token counting: the inputs, counters and cache of issue 16, measured.

``python -m benchmarks tokens corpus9 OUT``
    The shared corpus (``../shared/corpus/*.jsonl``, sorted by name) concatenated 9 times,
    copy k's case ids suffixed ``.x<k>`` (every line starts ``{"id":"...``, so only the id
    changes): about 316 MB. Also written by ``run --profiles corpus9`` into its cache.
``python -m benchmarks tokens counters [--rounds 5] [--corpus DIR]``
    The speed of every exact counter installed, single-threaded, on case-like text: every
    string of every corpus case (one call each), and the judge states ``build`` counts on
    the corpus (those whose bytes exceed the budget: one call each). Counters that are not
    installed are listed as such (``pip install riptoken bpe-openai rs-bpe quicktok-v1
    kitoken`` for all). Every counter's total is checked against tiktoken's.
``python -m benchmarks tokens cache INPUT [--tokenizer NAME] [--exact-tokens] [--entries N]``
    ``build``'s checks over INPUT in this process, then the piece-count cache's lookups,
    hits (by pieces and by bytes), the bytes counted, its entries and its memory.
``python -m benchmarks tokens side-by-side INPUT [--runs 5] [--base TREE] [--variants ...]``
    The msgspec floor and evalstream commands, interleaved, each run a fresh process timed
    by ``measure.py`` (wall, CPU, peak RSS): this checkout's ``build`` (1 and 2 workers,
    ``--exact-tokens``, ``cl100k_base``) and ``stats``, and the same commands of another
    checkout (``--base``, e.g. ``git archive`` of main before a change) with ``base-``
    names. ``x floor`` is the floor's median time over the variant's (the issue's ratio:
    0.25x = four times the floor's time). Outputs of ``build`` and ``build-w2`` must be the
    same bytes, and are compared.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")


def corpus9(out: Path, corpus: Path = CORPUS, copies: int = 9) -> int:
    """Write the corpus ``copies`` times with distinct ids; return the bytes written."""
    files = sorted(corpus.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no corpus files in {corpus}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "wb") as w:
        for k in range(copies):
            for path in files:
                with open(path, "rb") as r:
                    for line in r:
                        if not line.strip():
                            w.write(line)
                            continue
                        assert line.startswith(b'{"id":"'), path
                        end = line.index(b'"', 7)
                        w.write(line[:end] + b".x%d" % k + line[end:])
    tmp.rename(out)
    return out.stat().st_size


# -- the texts ---------------------------------------------------------------------------------
def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def corpus_fields(corpus: Path) -> list[str]:
    """Every string value, at any depth, of every corpus case."""
    import msgspec

    out: list[str] = []
    for path in sorted(corpus.glob("*.jsonl")):
        with open(path, "rb") as f:
            for line in f:
                if line.strip():
                    out.extend(_strings(msgspec.json.decode(line)))
    return out


def counted_states(path: Path, tokenizer: str = "o200k_base") -> list[str]:
    """The judge states build counts on ``path``: those whose bytes exceed the budget's room."""
    from evalstream._cases.reading import case_reader
    from evalstream._checks.checker import Checker
    from evalstream._checks.rubrics import load_rubrics
    from evalstream._files.lines import read_chunks

    checker = Checker(load_rubrics(), tokenizer=tokenizer)
    room = checker.budget.byte_room
    reader = case_reader()
    out: list[str] = []
    with open(path, "rb") as f:
        for item in reader.read(read_chunks(f)):
            if isinstance(item, tuple):
                for check in checker.check(item[3], item[0]):
                    if check.state is not None and len(check.state) > room:
                        out.append(check.state.decode())
    return out


# -- the counters --------------------------------------------------------------------------------
def counters(name: str) -> dict[str, Callable[[str], int] | str]:
    """Every counter tried, as text -> count, or a string saying why it is not available."""
    from evalstream._checks import encodings

    found: dict[str, Callable[[str], int] | str] = {}
    core = encodings.tiktoken_encoding(name)._core_bpe
    found["tiktoken"] = lambda t: len(core.encode_ordinary(t))
    tok = encodings.Tokenizer(name)
    found["evalstream (toktok if ASCII, else tiktoken)"] = tok.count

    def optional(label: str, make: Callable[[], Callable[[str], int]]) -> None:
        try:
            found[label] = make()
        except ImportError as exc:
            found[label] = f"not installed ({exc.name})"

    def toktok() -> Callable[[str], int]:
        import toktok

        counter: Callable[[str], int] = toktok._encoding(name).count
        return counter

    def riptoken() -> Callable[[str], int]:
        import riptoken

        spec = encodings.SPECS[name]
        bpe = riptoken.CoreBPE(encodings.ranks(name), spec.special_tokens, spec.pattern)
        return lambda t: len(bpe.encode_ordinary(t))

    def bpe_openai() -> Callable[[str], int]:
        from bpe_openai import _bindings

        counter: Callable[[str], int] = _bindings.tokenizer_for_encoding(name).count
        return counter

    def rs_bpe() -> Callable[[str], int]:
        from rs_bpe.bpe import openai

        counter: Callable[[str], int] = getattr(openai, name)().count
        return counter

    def quicktok() -> Callable[[str], int]:
        import quicktok

        counter: Callable[[str], int] = quicktok.get_encoding(name).count
        return counter

    def kitoken() -> Callable[[str], int]:
        import kitoken

        encoder = kitoken.Kitoken.from_tiktoken(encodings.vocabulary(name))
        return lambda t: len(encoder.encode(t, False))

    optional("toktok alone", toktok)
    optional("riptoken", riptoken)
    optional("bpe-openai", bpe_openai)
    optional("rs-bpe", rs_bpe)
    optional("quicktok", quicktok)
    optional("kitoken", kitoken)
    return found


def speed(rounds: int, corpus: Path) -> list[dict[str, Any]]:
    """Each counter's median MB/s over ``rounds`` interleaved rounds, per encoding and text
    set; CPU over wall time shows hidden threads (1.00: none)."""
    import os
    import tempfile

    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    texts = {"fields": corpus_fields(corpus)}
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "corpus.jsonl"
        corpus9(one, corpus, copies=1)
        texts["states"] = counted_states(one)
    rows: list[dict[str, Any]] = []
    for name in ("o200k_base", "cl100k_base"):
        found = counters(name)
        usable = {k: v for k, v in found.items() if callable(v)}
        for label, why in found.items():
            if not callable(why):
                rows.append({"encoding": name, "counter": label, "status": why})
        for f in usable.values():
            f(texts["states"][0])  # lazy tables, first-call costs
        for kind, items in texts.items():
            size = sum(len(t.encode()) for t in items)
            wall: dict[str, list[float]] = {c: [] for c in usable}
            cpu: dict[str, list[float]] = {c: [] for c in usable}
            totals: dict[str, int] = {}
            order = list(usable)
            for r in range(rounds):
                for c in order[r % len(order):] + order[:r % len(order)]:
                    t0, c0 = time.perf_counter(), time.process_time()
                    totals[c] = sum(map(usable[c], items))
                    wall[c].append(time.perf_counter() - t0)
                    cpu[c].append(time.process_time() - c0)
            base = statistics.median(wall["tiktoken"])
            for c in usable:
                med = statistics.median(wall[c])
                rows.append({
                    "encoding": name, "texts": kind, "counter": c, "n": len(items),
                    "mb": round(size / 1e6, 2), "mb_per_s": round(size / med / 1e6, 1),
                    "x_tiktoken": round(base / med, 2),
                    "cpu_over_wall": round(statistics.median(cpu[c]) / med, 2),
                    "tokens_equal_tiktoken": totals[c] == totals["tiktoken"]})
                _log(json.dumps(rows[-1]))
    return rows


# -- the cache -----------------------------------------------------------------------------------
def cache(path: Path, tokenizer: str, exact: bool, entries: int | None) -> dict[str, Any]:
    """build's checks over ``path`` in this process; the cache's figures."""
    from evalstream._cases.reading import case_reader
    from evalstream._checks import encodings, tokens
    from evalstream._checks.checker import Checker
    from evalstream._checks.rubrics import load_rubrics
    from evalstream._files.lines import read_chunks

    pieces = tokens.PieceCounts(encodings.tokenizer(tokenizer), entries)
    checker = Checker(load_rubrics(), tokenizer=tokenizer, exact_tokens=exact)
    checker.budget._pieces = pieces
    reader = case_reader()
    started = time.process_time()
    counted_states = 0
    with open(path, "rb") as f:
        for item in reader.read(read_chunks(f)):
            if isinstance(item, tuple):
                for check in checker.check(item[3], item[0]):
                    counted_states += check.tokens is not None and (
                        check.tokens.exact is not None or check.reason == "over budget")
    seconds = time.process_time() - started
    return {
        "input": str(path), "tokenizer": tokenizer, "exact_tokens": exact,
        "cases": reader.counts.records, "states_counted": counted_states,
        "lookups": pieces.lookups, "hits": pieces.hits,
        "hit_rate": round(pieces.hits / pieces.lookups, 4) if pieces.lookups else None,
        "bytes_looked_up": pieces.bytes_looked, "bytes_hit": pieces.bytes_hit,
        "byte_hit_rate": round(pieces.bytes_hit / pieces.bytes_looked, 4)
        if pieces.bytes_looked else None,
        "bytes_counted": pieces.bytes_looked - pieces.bytes_hit,
        "entries": len(pieces), "bound": pieces.entries,
        "full_cache_mib": round(cache_memory(pieces.entries) / 2**20, 2),
        "cpu_s": round(seconds, 2)}


def cache_memory(entries: int) -> int:
    """The bytes a full cache of ``entries`` holds (tracemalloc; keys made while traced)."""
    import random

    from evalstream._checks import encodings, tokens

    pieces = tokens.PieceCounts(encodings.tokenizer("o200k_base"), entries)
    pieces.count_text = lambda text: 12_345  # the memory of entries, not of the tokenizer
    rnd = random.Random(0)
    data = [rnd.randbytes(20).hex().encode() for _ in range(entries)]
    tracemalloc.start()
    for piece in data:
        pieces.count(piece)
    used, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return used


SIDE_BY_SIDE = {
    "build": ("build", "{input}", "{out}", "-q"),
    "build-w2": ("build", "{input}", "{out}", "-q", "--workers", "2"),
    "build-exact": ("build", "{input}", "{out}", "-q", "--exact-tokens"),
    "build-cl100k": ("build", "{input}", "{out}", "-q", "--tokenizer", "cl100k_base"),
    "stats": ("stats", "{input}", "--format", "json", "-o", "{out}", "-q", "--workers", "1"),
    "stats-w2": ("stats", "{input}", "--format", "json", "-o", "{out}", "-q", "--workers", "2"),
}


def side_by_side(path: Path, runs: int, base: Path | None, names: list[str],
                 out_dir: Path) -> list[dict[str, Any]]:
    """Every variant ``runs`` times, interleaved (rotating order); their medians."""
    import os
    import shutil
    import subprocess

    measure = Path(__file__).resolve().parent / "measure.py"
    plan: dict[str, tuple[Path, list[str]]] = {
        "msgspec floor": (ROOT, [sys.executable, "-m", "benchmarks", "baseline", "msgspec",
                                 str(path), "{out}"])}
    for tree, prefix in ((ROOT, ""), (base, "base-")):
        if tree is None:
            continue
        for name in names:
            if prefix and name.endswith(("exact", "cl100k")):
                continue  # options the base may not have
            plan[prefix + name] = (tree, [sys.executable, "-m", "evalstream",
                                          *(a.replace("{input}", str(path))
                                            for a in SIDE_BY_SIDE[name])])
    out_dir.mkdir(parents=True, exist_ok=True)
    got: dict[str, list[dict[str, Any]]] = {label: [] for label in plan}
    labels = list(plan)
    with open(path, "rb") as f:  # a warm page cache for everyone
        while f.read(1 << 24):
            pass
    for r in range(runs):
        for label in labels[r % len(labels):] + labels[:r % len(labels)]:
            tree, argv = plan[label]
            out = out_dir / (label.replace(" ", "-") + (".json" if "stats" in label else ".jsonl"))
            err = out_dir / "stderr.txt"
            cmd = [a.replace("{out}", str(out)) for a in argv]
            env = dict(os.environ, PYTHONPATH=str(tree))
            done = subprocess.run([sys.executable, "-S", "-I", str(measure), "7200", str(err),
                                   "--", *cmd], cwd=tree, env=env, capture_output=True,
                                  text=True, check=True)
            m = json.loads(done.stdout)
            if m["exit_code"] not in (0, 1):
                raise SystemExit(f"{label} failed: {err.read_text()[-2000:]}")
            got[label].append(m)
            _log(f"[{r + 1}/{runs}] {label}: {m['wall_s']:.2f} s wall, {m['cpu_s']:.2f} s CPU")
    if (out_dir / "build.jsonl").exists() and (out_dir / "build-w2.jsonl").exists():
        same = (out_dir / "build.jsonl").read_bytes() == (out_dir / "build-w2.jsonl").read_bytes()
        _log(f"build and build-w2 wrote the same bytes: {same}")
        if not same:
            raise SystemExit("build and build --workers 2 differ")
    floor = statistics.median(m["wall_s"] for m in got["msgspec floor"])
    floor_cpu = statistics.median(m["cpu_s"] for m in got["msgspec floor"])
    rows = []
    for label, ms in got.items():
        wall = statistics.median(m["wall_s"] for m in ms)
        cpu = statistics.median(m["cpu_s"] for m in ms)
        rows.append({"variant": label, "input": path.name, "runs": len(ms),
                     "median_s": round(wall, 2), "cpu_s": round(cpu, 2),
                     "peak_rss_mib": round(max(m["max_rss_kib"] for m in ms) / 1024, 1),
                     "x_floor": round(floor / wall, 3), "x_floor_cpu": round(floor_cpu / cpu, 3),
                     "walls": [round(m["wall_s"], 2) for m in ms]})
    shutil.rmtree(out_dir, ignore_errors=True)
    return rows


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m benchmarks tokens")
    sub = p.add_subparsers(dest="what", required=True)
    c9 = sub.add_parser("corpus9", help="the shared corpus x9 with distinct ids")
    c9.add_argument("out", type=Path)
    c9.add_argument("--corpus", type=Path, default=CORPUS)
    sp = sub.add_parser("counters", help="each counter's speed on case-like text")
    sp.add_argument("--rounds", type=int, default=5)
    sp.add_argument("--corpus", type=Path, default=CORPUS)
    ca = sub.add_parser("cache", help="the piece-count cache over build's checks of INPUT")
    ca.add_argument("input", type=Path)
    ca.add_argument("--tokenizer", default="o200k_base")
    ca.add_argument("--exact-tokens", action="store_true")
    ca.add_argument("--entries", type=int)
    sb = sub.add_parser("side-by-side", help="floor and commands, interleaved, fresh processes")
    sb.add_argument("input", type=Path)
    sb.add_argument("--runs", type=int, default=5)
    sb.add_argument("--base", type=Path, help="another checkout to time the same commands of")
    sb.add_argument("--variants", nargs="+", choices=list(SIDE_BY_SIDE),
                    default=["build", "build-w2"])
    sb.add_argument("--out-dir", type=Path, default=Path("/tmp/evalstream-bench/side-by-side"))
    args = p.parse_args(argv)
    if args.what == "corpus9":
        written = corpus9(args.out, args.corpus)
        _log(f"{args.out}: {written / 1e6:.1f} MB")
    elif args.what == "counters":
        for row in speed(args.rounds, args.corpus):
            print(json.dumps(row))
    elif args.what == "cache":
        print(json.dumps(cache(args.input, args.tokenizer, args.exact_tokens, args.entries)))
    else:
        rows = side_by_side(args.input, args.runs, args.base, args.variants, args.out_dir)
        print("| variant | runs | median s | CPU s | peak RSS MiB | x floor | x floor (CPU) |")
        print("|---|---|---|---|---|---|---|")
        for row in rows:
            print(f"| {row['variant']} | {row['runs']} | {row['median_s']:.2f} | "
                  f"{row['cpu_s']:.2f} | {row['peak_rss_mib']:.1f} | {row['x_floor']:.3f} | "
                  f"{row['x_floor_cpu']:.3f} |")
        for row in rows:
            print(json.dumps(row))
    return 0
