"""``--from inspect``: inspect_ai eval logs -> one case a sample, scores as imported labels.

Read from the documented log formats without inspect_ai: an ``.eval`` log is a zip of JSON
members (``header.json`` or ``_journal/start.json`` for the eval, one
``samples/<id>_epoch_<n>.json`` a sample; members are deflated in older logs and
zstd-compressed, method 93, in newer ones); a ``.json`` log is one JSON object whose
``samples`` array is streamed with ijson. One sample is in memory at a time, and only the
fields a case needs are decoded (the events, usually most of a sample, are skipped).

Mapping (docs/convert.md, the ``inspect`` table): ``id`` the sample id (``<id>.epoch-<n>`` when
eval ran more than one epoch), or ``--id-from`` (a template of the sample's fields: ``{id}``,
``{epoch}``, ``{#}`` its number in inspect's order, ``{metadata.KEY}``), as for any source;
``input`` the sample input (its last user message when the
input is a list of messages); ``output`` the model output's completion, else the last
assistant message with text; ``messages`` the sample's messages with ids ``m1``, ``m2``...
(inspect's own message ids are random per run); ``toolEvents`` from assistant tool calls and
their tool messages (status ``failure`` when the tool message has an ``error``);
``expected`` one label a scorer, source ``imported``: ``C``, true, 1 -> pass; ``I``, false,
0 -> fail; ``N`` -> na; any other value (``P``, 0.5, a dict) is not mapped and counted, and so
is ``NaN`` (inspect's unscored score, ``Score.unscored()``), ``Infinity`` and ``-Infinity``,
which the log writes as those literals (read through ``nonfinite``); ``metadata`` the sample
metadata plus ``inspect``: task, model, the sample id, epoch, target and each score's value
(null for a non-finite one: JSON has no such number), answer, explanation, reason and
metadata.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import msgspec

from evalstream._cases import schema
from evalstream._convert import depth, nonfinite
from evalstream._convert.chat import ROLES, TOOL_CALL_PREFIX, arguments, content_text
from evalstream._convert.formats.base import Format, Given, Source
from evalstream._convert.rows import Built, CasePath, Notes, Row, RowProblem
from evalstream.errors import InputError

_ZSTD_METHOD = 93
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")


class Sample(msgspec.Struct):
    """The parts of an inspect_ai sample a case is made of (the rest is skipped unread)."""

    id: int | str
    epoch: int = 1
    input: Any = None
    target: Any = None
    messages: list[Any] = []
    output: Any = None
    scores: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    error: Any = None


class EvalHeader(msgspec.Struct):
    """The eval a log describes: task, model and epochs."""

    task: str | None = None
    model: str | None = None
    config: dict[str, Any] = {}


class _Start(msgspec.Struct):
    eval: EvalHeader


_sample = msgspec.json.Decoder(Sample).decode
_start = msgspec.json.Decoder(_Start).decode


# What a sample becomes: a case (``build``) or its verdicts (``inspect_grades.build``).
BuildSample = Callable[[dict[str, Any], Notes, EvalHeader, bool], Built]


def open_samples(given: Given, build_one: BuildSample) -> Source:
    """A log's samples as a convert source, each built by ``build_one``, with the sample id as
    its case id unless ``--id-from`` makes the ids."""
    header, rows = read(given.path)
    given.stack.callback(getattr(rows, "close", lambda: None))
    remapped = given.id_from is not None  # then the run makes each id, as for any source

    def build_sample(values: dict[str, Any], notes: Notes) -> Built:
        return build_one(values, notes, header, not remapped)

    if remapped:
        return Source(rows, build_sample, None, given.ids_from)
    return Source(rows, build_sample, None, "the sample id", own_ids=True)


def _open(given: Given) -> Source:
    return open_samples(given, build)


FORMAT = Format(
    "inspect", "an inspect_ai eval log (.eval or .json): one case a sample, scores as "
    "imported labels", _open, options=("id_from",),
    refuses={"mapping": "inspect has its own fixed mapping (see docs/convert.md)",
             "tool_failure_when": "in an inspect log a tool message records its own error"},
    suffixes=(".eval",), kinds=("inspect-eval", "inspect-json"),
    magic="an inspect_ai eval log")


def read(path: str) -> tuple[EvalHeader, Iterator[Row]]:
    """The eval and its samples as rows (values: the sample's fields), in inspect's order
    (by epoch, then id)."""
    if path.lower().endswith(".json"):
        return _read_json(path)
    return _read_zip(path)


def _read_zip(path: str) -> tuple[EvalHeader, Iterator[Row]]:
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot read {path} as an inspect_ai .eval log: {exc}") from exc
    names = set(archive.namelist())
    head_name = next((n for n in ("header.json", "_journal/start.json") if n in names), None)
    if head_name is None:
        archive.close()
        raise InputError(f"{path} is a zip without header.json or _journal/start.json: not an "
                         "inspect_ai .eval log.")
    try:
        header = _start(_member(archive, path, head_name)).eval
    except msgspec.DecodeError as exc:
        archive.close()
        raise InputError(f"cannot read the eval in {path} ({head_name}): {exc}") from exc
    members = sorted((n for n in names if n.startswith("samples/") and n.endswith(".json")),
                     key=_sample_order)

    def rows() -> Iterator[Row]:
        with archive:
            for number, name in enumerate(members, 1):
                data = _member(archive, path, name)
                try:
                    values = _decode_sample(data)
                except msgspec.DecodeError as exc:
                    yield Row(number, None, RowProblem(
                        f"The sample `{name}` cannot be read as an inspect_ai sample: {exc}.",
                        name, "$", kind="bad sample"))
                    continue
                except RecursionError:
                    yield _too_deep(number, name, depth.path_in(data), data)
                    continue
                # Fewer opening brackets than the limit cannot nest deeper (a count in C).
                if data.count(b"[") + data.count(b"{") > depth.MAX_DEPTH:
                    found = depth.deep_path(values)
                    if found is not None:
                        yield _too_deep(number, name, found, data)
                        continue
                yield Row(number, values)

    return header, rows()


def _decode_sample(data: bytes) -> dict[str, Any]:
    """A sample member's fields; ``NaN``/``Infinity`` (inspect's unscored scores) read as
    floats (``nonfinite``), which msgspec alone refuses as malformed JSON."""
    try:
        return msgspec.structs.asdict(_sample(data))
    except msgspec.DecodeError as exc:
        rewritten, count = nonfinite.rewrite(data)
        if not count:
            raise
        try:
            values: dict[str, Any] = msgspec.structs.asdict(_sample(rewritten))
        except msgspec.DecodeError as again:  # broken otherwise: said at its own byte
            raise type(again)(nonfinite.in_original(str(again), rewritten)) from exc
    return nonfinite.restore(values)


def _sample_order(name: str) -> tuple[int, str]:
    # inspect sorts samples by epoch, then id (numeric ids zero-filled to 20 places).
    stem = name.removeprefix("samples/").removesuffix(".json")
    sample_id, _, epoch = stem.rpartition("_epoch_")
    key = sample_id.zfill(20) if sample_id.isdigit() else sample_id
    return (int(epoch) if epoch.isdigit() else 0, key)


def _member(archive: zipfile.ZipFile, path: str, name: str) -> bytes:
    """One member's bytes: deflated or stored through zipfile, zstd (which zipfile cannot
    read before Python 3.14) through zstandard."""
    info = archive.getinfo(name)
    try:
        if info.compress_type != _ZSTD_METHOD:
            return archive.read(name)
        import zstandard

        with open(path, "rb") as f:
            f.seek(info.header_offset)
            fields = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
            f.seek(info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10])
            data = f.read(info.compress_size)
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data),
                                                            read_across_frames=True)
        return reader.read()
    except (OSError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
        raise InputError(f"cannot read {name} in {path}: {exc}") from exc
    except Exception as exc:  # zstandard.ZstdError, zlib.error: damaged data
        raise InputError(f"cannot read {name} in {path}: damaged data ({exc})") from exc


def _too_deep(number: int, name: str, found: depth.Path, data: bytes) -> Row:
    return Row(number, None, depth.too_deep("The sample", name, found), raw=data[:8_000])


def _events(f: BinaryIO, literals: bool) -> depth.Events:
    """ijson's parse events of a log, read through ``nonfinite`` when it holds literals."""
    import ijson

    stream: BinaryIO = f
    if literals:
        stream = io.BufferedReader(nonfinite.RewrittenStream(f))
    return iter(ijson.basic_parse(stream, use_float=True))


def _read_json(path: str) -> tuple[EvalHeader, Iterator[Row]]:
    import ijson

    try:
        # NaN and Infinity (inspect's unscored scores) are read through a rewriter, which
        # only a log that holds them pays for.
        literals = nonfinite.file_has_literal(path)
        with open(path, "rb") as f:
            found = nonfinite.restore(depth.member(_events(f, literals), "eval"))
    except (OSError, ijson.JSONError, StopIteration) as exc:
        raise InputError(f"cannot read {path} as an inspect_ai JSON log: {exc}") from exc
    if isinstance(found, depth.Deep):
        raise InputError(f"cannot read {path}: its `eval` object is nested more than "
                         f"{depth.MAX_DEPTH:,} levels deep.")
    if not isinstance(found, dict):
        raise InputError(f"{path} has no `eval` object: not an inspect_ai JSON log.")
    header = msgspec.convert(found, EvalHeader, strict=False)

    def rows() -> Iterator[Row]:
        number = 0
        try:
            with open(path, "rb") as f:
                events = _events(f, literals)
                next(events)  # the log's start_map
                if depth.find_key(events, "samples") != ("start_array", None):
                    return
                for value in depth.elements(events):
                    number += 1
                    name = f"samples[{number - 1}]"
                    if isinstance(value, depth.Deep):
                        yield _too_deep(number, name, value.path,
                                        msgspec.json.encode(value.partial))
                        continue
                    if literals:
                        nonfinite.restore(value)
                    try:
                        sample = msgspec.convert(value, Sample, strict=False)
                    except msgspec.ValidationError as exc:
                        yield Row(number, None, RowProblem(
                            f"Sample {number} cannot be read as an inspect_ai sample: {exc}.",
                            name, "$", kind="bad sample"))
                        continue
                    yield Row(number, msgspec.structs.asdict(sample))
        except (OSError, ijson.JSONError, StopIteration) as exc:
            raise InputError(f"cannot read {path} after sample {number}: {exc}") from exc

    return header, rows()


# -- a sample -> a case ----------------------------------------------------------------------------
PASS_VALUES = ("C", True, 1)
FAIL_VALUES = ("I", False, 0)
NA_VALUES = ("N",)


def label_of(value: Any) -> str | None:
    """The label status an inspect score value means, or None when it maps to none."""
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, (int, float)) and value in (0, 1):
        return "pass" if value == 1 else "fail"
    if value in ("C", "I", "N"):
        return {"C": "pass", "I": "fail", "N": "na"}[value]
    return None


def sample_case_id(values: dict[str, Any], header: EvalHeader) -> str:
    """A sample's case id without ``--id-from``: its id (``<id>.epoch-<n>`` when the eval ran
    more than one epoch), or a RowProblem saying how to remap it when it is not a valid id
    (inspect allows `/` and spaces in sample ids)."""
    epochs = header.config.get("epochs") or 1
    sample_id = str(values["id"])
    case_id = sample_id if epochs == 1 else f"{sample_id}.epoch-{values['epoch']}"
    if not schema.is_id(case_id):
        raise RowProblem(
            f"The sample id {sample_id[:80]!r} is not a valid case id ({schema.ID_RULE}); give "
            "--id-from a template of the sample's fields, e.g. --id-from 'TASK.{#}' (the "
            "sample's number), 'TASK.{metadata.KEY}' or 'TASK.{#}.epoch-{epoch}' (the sample "
            "id stays in metadata.inspect.id).", "id", "$.id", kind="invalid id")
    return case_id


def build(values: dict[str, Any], notes: Notes, header: EvalHeader,
          with_id: bool = True) -> Built:
    """A case from one sample (``values``: the fields of ``Sample``), with its id unless the
    run makes ids (``--id-from``; ``with_id`` false)."""
    case_id = sample_case_id(values, header) if with_id else None
    if values.get("error"):
        error = values["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise RowProblem(f"The sample ended in an error ({str(message)[:200]}); it has no answer "
                         "to convert.", "error", "$", kind="sample error", case_id=case_id)
    origin: dict[CasePath, str] = {("id",): "id"} if with_id else {}
    messages, events = _transcript(values.get("messages") or [], notes, origin)
    notes.add("generated_ids", "messages", n=len(messages))  # inspect's ids: random per run
    output = _completion(values.get("output"))
    origin[("output",)] = "output.completion"
    if not output:
        last = next((i for i in range(len(messages) - 1, -1, -1)
                     if messages[i]["role"] == "assistant" and messages[i]["own"].strip()), None)
        if last is None:
            raise RowProblem("The sample has no output completion and no assistant message "
                             "with text: nothing to take as `output`.", "output", "$.output",
                             kind="no answer", case_id=case_id)
        output = messages[last]["own"]
        origin[("output",)] = f"messages[{last}].content"
    user = _input_text(values.get("input"), notes)
    origin[("input",)] = "input"
    case: dict[str, Any] = {"id": case_id} if with_id else {}
    case.update({"input": user, "output": output,
                 "messages": [{k: m[k] for k in ("id", "role", "content")} for m in messages]})
    if events:
        case["toolEvents"] = events
    scores = values.get("scores") or {}
    metadata = dict(values.get("metadata") or {})
    if "inspect" in metadata:
        raise RowProblem("The sample metadata has a key `inspect`, where convert puts the "
                         "task, model, epoch, target and scores; rename that key.", "metadata",
                         "$.metadata.inspect", kind="metadata clash", case_id=case_id)
    metadata["inspect"] = {"task": header.task, "model": header.model, "id": values["id"],
                           "epoch": values.get("epoch"), "target": values.get("target"),
                           "scores": {name: _score_fields(score)
                                      for name, score in scores.items()}}
    case["metadata"] = metadata
    origin[("metadata",)] = "metadata"
    expected = {}
    for scorer, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else score
        status = label_of(value)
        if status is None:
            notes.unmapped_score(scorer, shown_value(value))
            continue
        notes.label(scorer, status)
        expected[scorer] = {"status": status, "source": "imported"}
        origin[("expected", scorer)] = f"scores.{scorer}.value"
    if expected:
        case["expected"] = expected
    return Built(case, origin)


SCORE_FIELDS = ("value", "answer", "explanation", "reason", "metadata")


def shown_value(value: Any) -> str:
    """A score value as the report counts it: its JSON (40 characters), or ``NaN``,
    ``Infinity``, ``-Infinity`` as the log spells them (JSON has no such number)."""
    if nonfinite.is_nonfinite(value):
        return nonfinite.spelled(value)
    return msgspec.json.encode(value).decode()[:40]


def _score_fields(score: Any) -> Any:
    """The documented fields of a score (its edit history and internals are left out)."""
    if not isinstance(score, dict):
        return score
    return {k: score[k] for k in SCORE_FIELDS if score.get(k) is not None}


def _completion(output: Any) -> str:
    if isinstance(output, dict) and isinstance(output.get("completion"), str):
        return str(output["completion"])
    return ""


def _input_text(value: Any, notes: Notes) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        for m in reversed(value):
            if isinstance(m, dict) and m.get("role") == "user":
                return content_text(m.get("content"), "input", notes)
    raise RowProblem("The sample input is neither text nor a list with a user message.",
                     "input", "$.input", kind="no user turn")


def _transcript(raw: list[Any], notes: Notes, origin: dict[CasePath, str]
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        role = ROLES.get(str(m.get("role"))) if isinstance(m, dict) else None
        if role is None:
            raise RowProblem(f"`{where}` is not a chat message with a known role.", where,
                             f"$.messages[{i}]", kind="bad message")
        own = content_text(m.get("content"), f"{where}.content", notes)
        text = own
        if role == "assistant" and m.get("tool_calls"):
            lines = [own] if own else []
            for c, call in enumerate(m["tool_calls"]):
                name, args = call.get("function"), call.get("arguments")
                call_id = call.get("id") or f"t{len(events) + 1}"
                if not call.get("id"):
                    notes.add("generated_ids", "tool_events")
                event = {"id": call_id, "name": name, "status": None,
                         "input": arguments(args, f"{where}.tool_calls[{c}].arguments")}
                shown = args if isinstance(args, str) else msgspec.json.encode(args).decode()
                lines.append(f"{TOOL_CALL_PREFIX} {name} {shown}")
                origin[("toolEvents", len(events))] = f"{where}.tool_calls[{c}]"
                events.append(event)
                pending[call_id] = event
            text = "\n".join(lines)
        if role == "tool":
            event = pending.pop(m.get("tool_call_id"), None)  # type: ignore[arg-type]
            if event is None:
                raise RowProblem(f"`{where}` is a tool result for {m.get('tool_call_id')!r}, "
                                 "which no earlier assistant tool call has.",
                                 f"{where}.tool_call_id", kind="tool call missing")
            event["output"] = arguments(own, f"{where}.content")
            error = m.get("error")
            if error:
                event["status"] = "failure"
                event["error"] = str(error.get("message") if isinstance(error, dict) else error)
            else:
                event["status"] = "success"
            notes.add("tool_events", event["status"])
        messages.append({"id": f"m{i + 1}", "role": role, "content": text, "own": own})
        origin[("messages", i)] = where
    if pending:
        event = next(iter(pending.values()))
        raise RowProblem(f"The tool call `{event['id']}` (`{event['name']}`) has no tool message "
                         "with its result, so its status cannot be known.", "messages",
                         kind="tool result missing")
    return messages, events
