"""Deep nesting at every entry point of convert (issue 23, items 15 and 20): JSON array
elements, JSONL lines, tool-call arguments and results, --parse-json cells, messages
columns, Parquet columns, inspect samples. Each too-deep value is a reject naming its row,
its column and the limit, in the same words for every source; never exit 70; memory
linear in the input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import ijson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstream._convert import depth
from evalstream.errors import InputError
from tests.convert.support import convert, validate_accepts
from tests.helpers import ROOT

LIMIT = depth.MAX_DEPTH
MAP = ["input=q,output=r"]
SENTENCE = (f"is nested more than {LIMIT} levels deep (at `$.x[0][0]", f"convert reads JSON "
            f"nested at most {LIMIT} levels deep. Flatten the value, or keep it as one JSON "
            "string.")


def _nest(levels: int, shape: str) -> Any:
    """A value that is ``levels`` arrays or objects deep, iteratively (no recursion)."""
    value: Any = "leaf"
    for i in range(levels):
        value = [value] if shape == "[" or (shape == "mixed" and i % 2) else {"k": value}
    return value


def _text(levels: int, shape: str) -> str:
    # json.dumps recurses: write the brackets out, as a hostile file would hold them.
    if shape == "[":
        return "[" * levels + '"leaf"' + "]" * levels
    if shape == "{":
        return '{"k":' * levels + '"leaf"' + "}" * levels
    return json.dumps(_nest(levels, shape))


def _rows(levels: int, shape: str) -> list[str]:
    """Three rows: fine, `x` nested `levels` deep below the row, fine."""
    return ['{"q":"a","r":"b"}', '{"q":"c","r":"d","x":%s}' % _text(levels, shape),
            '{"q":"e","r":"f"}']


def _both(tmp_path: Path, rows: list[str], **options: Any) -> tuple[Any, Any]:
    (tmp_path / "rows.json").write_text("[" + ",\n".join(rows) + "]")
    (tmp_path / "rows.jsonl").write_text("\n".join(rows) + "\n")
    results = []
    for name in ("rows.json", "rows.jsonl"):
        sub = tmp_path / name.replace(".", "_")
        sub.mkdir()
        results.append(convert(sub, tmp_path / name, maps=MAP, keep_unmapped=True, **options))
    return results[0], results[1]


@pytest.mark.parametrize("shape", ["[", "{"])
@pytest.mark.parametrize("levels", [LIMIT - 1, LIMIT, 2_000])
def test_a_deep_row_is_the_same_reject_from_json_and_jsonl(tmp_path: Path, shape: str,
                                                            levels: int) -> None:
    # `x` holds `levels` containers below the row: the row nests levels + 1 deep.
    json_run, jsonl_run = _both(tmp_path, _rows(levels, shape))
    # The same reject but for `raw`: a JSONL line's head; an element's reading down to the
    # limit (an array's element is streamed, its bytes are not kept).
    assert [{**r, "raw": None} for r in json_run.rejects] == \
        [{**r, "raw": None} for r in jsonl_run.rejects]
    assert all(r["raw"].startswith('{"q":"c","r":"d","x":' + _text(levels, shape)[:40])
               for r in json_run.rejects + jsonl_run.rejects)
    assert json_run.cases == jsonl_run.cases
    if levels + 1 <= LIMIT:
        assert json_run.rejects == []
        return
    [reject] = json_run.rejects
    assert (reject["row"], reject["column"], reject["path"]) == (2, "x", None)
    first = "$.x[0][0]" if shape == "[" else "$.x.k.k"
    assert reject["error"].startswith(f"The row is nested more than {LIMIT} levels deep (at "
                                      f"`{first}")
    assert reject["error"].endswith(SENTENCE[1])
    assert json_run.report.rejected_by_kind == {"too deep": 1}
    assert [c["input"] for c in json_run.cases] == ["a", "e"]


def test_the_deepest_row_allowed_becomes_a_case_validate_reads(tmp_path: Path) -> None:
    # The row nests LIMIT levels; its case nests one more (metadata.x): validate reads it.
    json_run, jsonl_run = _both(tmp_path, _rows(LIMIT - 1, "mixed"))
    assert json_run.rejects == jsonl_run.rejects == []
    assert json_run.cases == jsonl_run.cases and len(json_run.cases) == 3
    validate_accepts(json_run.out)


def _peak_convert(tmp_path: Path, source: Path, *args: str) -> tuple[int, int]:
    """Run convert in a child held to 1 GiB of address space: (exit code, peak RSS in MB)."""
    # The child reports its own peak, VmHWM (of its own memory since its exec):
    # RUSAGE_CHILDREN gives the largest of every child this test process waited for, and a
    # child's ru_maxrss starts at its parent's (pytest's, hundreds of MB in a full run).
    peak_file = tmp_path / "peak"
    code = ("import atexit, re, resource, sys; "
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "hwm = lambda: re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read())[1]; "
            "atexit.register(lambda: open(sys.argv.pop(), 'w').write(hwm())); "
            "from evalstream._cli import main; sys.exit(main(sys.argv[1:-1]))")
    done = subprocess.run([sys.executable, "-c", code, "convert", str(source),
                           str(tmp_path / "out.jsonl"), "-q", *args, str(peak_file)], cwd=ROOT,
                          capture_output=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak = int(peak_file.read_text()) // 1024
    assert b"Traceback" not in done.stderr, done.stderr[-2000:]
    return done.returncode, peak


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_memory_stays_linear_in_the_depth(tmp_path: Path, fmt: str) -> None:
    # Issue 23: 30,000 levels (60 KB) took 2.2 GB through ijson.items, 200,000 over 8 GB.
    levels = 200_000
    rows = _rows(levels, "[")
    source = tmp_path / f"rows.{fmt}"
    source.write_text("[" + ",".join(rows) + "]" if fmt == "json" else "\n".join(rows) + "\n")
    code, peak = _peak_convert(tmp_path, source, "--map", "input=q,output=r")
    assert code == 1  # one row rejected
    assert peak < 300, peak
    rejects = [json.loads(x) for x in (tmp_path / "out.rejects.jsonl").read_text().splitlines()]
    assert [(r["row"], r["column"]) for r in rejects] == [(2, "x")]


# -- JSON text inside a row ----------------------------------------------------------------------
def _chat(arguments: str, result: str) -> dict[str, Any]:
    return {"messages": [
        {"role": "user", "content": "Find it."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call-1", "type": "function",
             "function": {"name": "find", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "call-1", "content": result},
        {"role": "assistant", "content": "Found."}]}


DEEP = _text(2_000, "[")
EDGE = _text(LIMIT, "[")  # exactly the limit: read


@pytest.mark.parametrize(("arguments", "result", "column"), [
    (DEEP, "{}", "messages[1].tool_calls[0].function.arguments"),
    ("{}", DEEP, "messages[2].content"),
    (_text(LIMIT + 1, "{"), "{}", "messages[1].tool_calls[0].function.arguments"),
    (EDGE, EDGE, None),
])
def test_deep_tool_arguments_and_results(tmp_path: Path, arguments: str, result: str,
                                         column: str | None) -> None:
    src = tmp_path / "chats.jsonl"
    src.write_text(json.dumps(_chat(arguments, result)) + "\n" + json.dumps(_chat("{}", "ok"))
                   + "\n")
    result_run = convert(tmp_path, src, format="openai-chat")
    if column is None:
        assert result_run.rejects == [] and len(result_run.cases) == 2
        validate_accepts(result_run.out)
        return
    [reject] = result_run.rejects
    assert (reject["row"], reject["column"]) == (1, column)
    assert reject["error"].startswith(f"The JSON text in `{column}` is nested more than {LIMIT}")
    assert len(result_run.cases) == 1


def test_deep_tool_arguments_in_a_messages_column(tmp_path: Path) -> None:
    rows = [{"id": "a", "chat": _chat(DEEP, "{}")["messages"]},
            {"id": "b", "chat": _chat("{}", "{}")["messages"]}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = convert(tmp_path, tmp_path / "rows.jsonl", maps=["messages=chat"], id_from="id")
    [reject] = result.rejects
    assert (reject["row"], reject["column"], reject["id"]) == (
        1, "chat[1].tool_calls[0].function.arguments", "a")
    assert [c["id"] for c in result.cases] == ["b"]


@pytest.mark.parametrize(("cell", "rejected"), [(DEEP, True), (_text(LIMIT + 1, "{"), True),
                                                (EDGE, False)])
def test_deep_parse_json_cell(tmp_path: Path, cell: str, rejected: bool) -> None:
    src = tmp_path / "t.csv"
    frame = pl.DataFrame({"q": ["x", "y"], "r": ["y", "z"], "ctx": [cell, "[]"]})
    frame.write_csv(src)
    result = convert(tmp_path, src, maps=["input=q,output=r,metadata.ctx=ctx"],
                     parse_json=["ctx"])
    if not rejected:
        assert result.rejects == [] and len(result.cases) == 2
        validate_accepts(result.out)
        return
    [reject] = result.rejects
    assert (reject["row"], reject["column"]) == (1, "ctx")
    assert reject["error"].startswith(f"Column 'ctx' (--parse-json) is nested more than {LIMIT}")


# -- Parquet ----------------------------------------------------------------------------------------
def _deep_parquet(path: Path, levels: int) -> None:
    column = pl.Series("deep", ["leaf"])
    for _ in range(levels):
        column = column.implode()
    pl.DataFrame({"q": ["a"], "r": ["b"], "deep": column}).write_parquet(path)


@pytest.mark.slow
def test_a_parquet_column_typed_too_deep_is_refused_before_reading(tmp_path: Path) -> None:
    # Polars crashed the process (SIGSEGV, a Rust stack overflow) reading this file.
    src = tmp_path / "deep.parquet"
    _deep_parquet(src, 400)
    code, _ = _peak_convert(tmp_path, src, "--map", "input=q,output=r")
    assert code == 2
    with pytest.raises(InputError, match=f"column 'deep' holds values nested 401 levels deep; "
                                         f"convert reads values nested at most {LIMIT} levels"):
        convert(tmp_path, src, maps=MAP)
    _deep_parquet(src, LIMIT - 1)  # the row is LIMIT levels: read, and read back
    result = convert(tmp_path, src, maps=MAP, keep_unmapped=True)
    assert result.rejects == [] and len(result.cases) == 1
    validate_accepts(result.out)


# -- inspect logs -----------------------------------------------------------------------------------
HEADER = {"eval": {"task": "t", "model": "m", "config": {}}}


def _sample(sample_id: int, metadata: str) -> str:
    return ('{"id":%d,"epoch":1,"input":"Q?","target":"A","messages":[],'
            '"output":{"completion":"A"},"metadata":{"deep":%s}}' % (sample_id, metadata))


@pytest.mark.parametrize("kind", ["eval", "json"])
@pytest.mark.parametrize("levels", [2_000, LIMIT])
def test_a_deep_inspect_sample_is_a_reject(tmp_path: Path, kind: str, levels: int) -> None:
    # The sample nests levels + 2 (sample, metadata, then the value).
    samples = [_sample(1, _text(levels, "[")), _sample(2, "1")]
    if kind == "eval":
        src = tmp_path / "log.eval"
        with zipfile.ZipFile(src, "w") as z:
            z.writestr("header.json", json.dumps(HEADER))
            for n, text in enumerate(samples, 1):
                z.writestr(f"samples/{n}_epoch_1.json", text)
    else:
        src = tmp_path / "log.json"
        src.write_text('{"version":2,"status":"success","eval":%s,"samples":[%s]}'
                       % (json.dumps(HEADER["eval"]), ",".join(samples)))
    result = convert(tmp_path, src, format="inspect")
    assert [c["id"] for c in result.cases] == ["2"]
    [reject] = result.rejects
    assert reject["row"] == 1
    assert reject["column"] == ("samples/1_epoch_1.json" if kind == "eval" else "samples[0]")
    assert reject["error"].startswith(f"The sample is nested more than {LIMIT} levels deep "
                                      "(at `$.metadata.deep[0][0]")


# -- the walk and the builder against independent readings ----------------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63) + 1, 2**63 - 1) | st.text(max_size=5)
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=30)


def _levels(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_levels(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_levels(v) for v in value), default=0)
    return 0


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _first_too_deep(value: Any, limit: int, level: int = 1, path: tuple[Any, ...] = ()
                    ) -> tuple[Any, ...] | None:
    """The recursive oracle: the first container (depth first) below level ``limit``."""
    children = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in children:
        if isinstance(child, (dict, list)):
            if level + 1 > limit:
                return (*path, key)
            found = _first_too_deep(child, limit, level + 1, (*path, key))
            if found is not None:
                return found
    return None


@settings(max_examples=300, deadline=None)
@given(JSON.filter(lambda v: isinstance(v, (dict, list))), st.integers(1, 6))
def test_walk_and_builder_find_the_first_value_past_the_limit(value: Any, limit: int) -> None:
    expected = _first_too_deep(value, limit)
    assert (expected is None) == (_levels(value) <= limit)
    assert depth.deep_path(value, limit) == expected
    events = ijson.basic_parse(io.BytesIO(json.dumps(value).encode()), use_float=True)
    first, _ = next(events)
    built = depth.build(first, events, limit)
    if expected is None:
        assert built == value  # the builder reads what the standard library reads
    else:
        assert isinstance(built, depth.Deep) and built.path == expected
        assert isinstance(_at(value, expected), (dict, list))


def test_path_in_a_text_too_deep_for_msgspec() -> None:
    assert depth.path_in(b'{"a":[1,{"b":' + _text(3_000, "[").encode() + b"}]}") == (
        "a", 1, "b", *[0] * (LIMIT - 3))
    assert depth.path_in(b'{"a":' + b"[" * 3_000) == ("a", *[0] * (LIMIT - 1))  # cut short
    assert depth.path_in(b"{{") == ()  # not JSON before the limit: no path


@pytest.mark.parametrize("opened", [0, 1, 16, 17, 255, 256, 257, 600])
@pytest.mark.parametrize("spread", ["together", "apart", "mixed"])
def test_may_be_deeper_is_the_count_of_opening_brackets(opened: int, spread: str) -> None:
    # The bound the JSON lines read and --parse-json use to skip the walk: a text that opens
    # more than the limit's arrays and objects may be deeper, one that opens fewer is not.
    brackets = "[" * opened if spread != "mixed" else "[{" * (opened // 2) + "[" * (opened % 2)
    gap = " " * (5 if spread == "apart" else 0)
    text = gap.join(brackets) + " " * (2 * depth.MAX_DEPTH + 1)
    for json_text in (text, text.encode()):
        assert depth.may_be_deeper(json_text) is (opened > depth.MAX_DEPTH)
    # JSON of at most twice the limit in characters closes what it opens: never deeper.
    assert not depth.may_be_deeper("[" * depth.MAX_DEPTH * 2)


@pytest.mark.parametrize("limit", [1, 3, 15, 16, 17])
def test_may_be_deeper_holds_for_a_limit_under_the_few_found_one_by_one(limit: int) -> None:
    for opened in range(limit + 3):
        text = "[" * opened + "]" * opened + " " * (2 * limit + 1)
        assert depth.may_be_deeper(text, limit) is (opened > limit), opened


_SCALAR = (st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False)
           | st.integers() | st.sampled_from([2**63, 2**64 - 1, 2**64, -(2**63) - 1, -0.0])
           | st.text(max_size=5))
_JSON = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=10)
_TEXT = _JSON.map(json.dumps) | st.sampled_from(
    ["1e400", '{"a": 1, "a": [2]}', '"\\ud800"', "[", "[1] x", "[" * 300 + "]" * 300,
     '[[1], {"a": {}}]', '{"a": [[]]}', "", " 1 "]) | st.text(max_size=8)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_loads_reads_a_cell_as_any_value(text: str) -> None:
    # A text is first decoded as a shallow value (depth.Shallow, spared the bound): the value,
    # its types and every error are those of a decode as any value held to the limit.
    import msgspec

    def oracle() -> Any:
        value = msgspec.json.decode(text)
        path = depth.deep_path(value)
        if path is not None:
            raise depth.too_deep("The cell", "c", path)
        return value

    try:
        expected = oracle()
    except (msgspec.DecodeError, RecursionError, depth.RowProblem) as exc:
        kind = depth.RowProblem if isinstance(exc, RecursionError) else type(exc)
        with pytest.raises(kind) as caught:
            depth.loads(text, "The cell", "c")
        if not isinstance(exc, RecursionError):
            assert str(caught.value) == str(exc)
        return
    assert repr(depth.loads(text, "The cell", "c")) == repr(expected)


def test_the_shallow_type_is_tried_until_it_misses_many_texts_in_a_row() -> None:
    # A miss costs more than reading the text as any value at once: a source whose texts
    # nest deeper (chats) stops paying it after SHALLOW_TRIES of them in a row.
    import msgspec

    tried: list[bytes] = []

    def shallow(text: bytes) -> Any:
        tried.append(text)
        return msgspec.json.Decoder(depth.Shallow).decode(text)

    read = depth.ShallowFirst(shallow, msgspec.json.decode)
    flat, nested = b'{"a": 1}', b'{"a": [{"b": 1}]}'
    for _ in range(depth.SHALLOW_TRIES - 1):
        assert read(nested) == {"a": [{"b": 1}]} and read.last is None
    assert read(flat) is read.last == {"a": 1}  # a fit: tried again as often
    for _ in range(depth.SHALLOW_TRIES + 5):
        assert read(nested) == {"a": [{"b": 1}]}
    assert len(tried) == 2 * depth.SHALLOW_TRIES and read.tries == 0
    value = read(flat)
    assert value == {"a": 1} and value is not read.last  # no longer tried: read as any value
