"""The batch endpoints of the fake judge server (``fake_server.py``): OpenAI's files and
batches, Anthropic's message batches, answering every request by the same rules as a live
request (the same ``FAKE:<fault>`` markers, the same answer bytes), so that a batch verdict and
a live verdict of the same state can be compared byte for byte (a pairwise state's request
as the live server answers it with no bias).

- ``POST /v1/files`` (multipart, ``purpose=batch``), ``GET /v1/files/{id}/content``;
  ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (``limit``, ``after``).
- ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``,
  ``GET /v1/messages/batches/{id}/results``.

A batch ends at the ``--batch-polls``-th time it is asked for (1: at once). Its results come
back sorted by ``custom_id``, not in request order. Batch-only markers: ``FAKE:batcherror``
(an errored request: OpenAI an error-file line with status 500, Anthropic ``errored``),
``FAKE:expired``, ``FAKE:canceled``, ``FAKE:vllmerror`` (a vLLM-style inline error, a plain
string), ``FAKE:batchfail`` (OpenAI: the whole batch fails validation; ``FAKE:echofail``: with
the key it was created with in the error's message). ``FAKE:<fault>xN``
markers (failures a provider retries) are answered normally; ``FAKE:400`` and ``FAKE:echokey``
are errored requests (``echokey`` repeating the key it was created with); ``FAKE:echoescaped``
answers ``pass`` with that key JSON-escaped in its reason; a batch with a ``FAKE:redirect``
answers its results (Anthropic) or output file (OpenAI) with a 302 to another origin, one with
a ``FAKE:deepbatch`` is shown as JSON nested 100,000 deep when it is asked for; the
live server's other hostile markers are answered ``pass``. Batches that never end well (for
``batch status --wait``): ``FAKE:endcrash`` crashes the server's handler while it makes the
batch's results, which leaves the batch ``in_progress`` for ever (the fault first seen);
``FAKE:oddstatus`` is shown with a status no provider documents, for ever;
``FAKE:nostatus`` is shown without its status; ``FAKE:batch500`` is answered HTTP 500
whenever it is asked for; ``FAKE:nofile`` ends with result files that are not there (404).
Results that do not account for every request: ``FAKE:nofiles`` (OpenAI) ends ``completed``
with neither an output file nor an error file; ``FAKE:dropped`` leaves its request out of
the result files of a batch that says it completed it. With ``--lose-create N`` the first
N create calls make the batch but cut the connection before answering.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec

from tests.judge.fake_server import _ANSWERS, _pairwise, escaped, preference
from tests.judge.fake_server import _MARK as MARK
from tests.judge.fake_server import _anthropic as anthropic_message
from tests.judge.fake_server import _content as content
from tests.judge.fake_server import _openai as openai_completion

_BATCH_ONLY = {"batcherror", "expired", "canceled", "vllmerror", "batchfail", "echofail",
               "deepbatch", "endcrash", "oddstatus", "nostatus", "batch500", "nofile",
               "nofiles", "dropped"}
_LIVE_ONLY = {"cut", "slow", "429", "500", "503", "429zone", "redirect", "huge", "deep", "garbled",
              "deeperror", "hugeheader", "manyheaders"}  # a batch provider retries these, or they are about one response


class _Line(msgspec.Struct):
    custom_id: str
    body: msgspec.Raw = msgspec.Raw()
    params: msgspec.Raw = msgspec.Raw()


class _AnthropicCreate(msgspec.Struct):
    requests: list[_Line]


class Batches:
    """The batch state of one fake server."""

    def __init__(self, polls: int, lose_create: int) -> None:
        self.polls = polls
        self.lose_create = lose_create
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}  # id -> object (and private fields)
        self.order: list[str] = []
        self.calls: Counter[str] = Counter()
        self.created = 0
        self.redirected: set[str] = set()  # batches and files answered with a redirect
        self.missing: set[str] = set()  # result files answered 404 (FAKE:nofile)
        self.foreign_port = 0

    def stats(self) -> dict[str, Any]:
        return {"batch_calls": dict(self.calls), "batches_created": self.created,
                "files_uploaded": len(self.files)}

    def reset(self) -> None:
        self.calls.clear()
        self.created = 0

    # -- routing ---------------------------------------------------------------------------------
    def handles(self, method: str, path: str) -> bool:
        route = urlsplit(_azure(path)).path
        return route.startswith(("/v1/files", "/v1/batches", "/v1/messages/batches"))

    def route(self, method: str, path: str, headers: dict[str, str], body: bytes,
              key: str | None, port: int) -> tuple[int, bytes, bool]:
        """(status, body, cut): ``cut`` closes the connection without an answer."""
        path = _azure(path)
        parts = urlsplit(path)
        route = re.sub(r"/(file|batch|msgbatch)_[0-9a-f]+", "/{id}", parts.path)
        self.calls[f"{method} {route}"] += 1
        sent = headers.get("x-api-key") if route.startswith("/v1/messages") else \
            headers.get("api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if key is not None and sent != key:
            return 401, _error("invalid api key"), False
        segments = parts.path.strip("/").split("/")
        if method == "POST" and parts.path == "/v1/files":
            return self._upload(headers, body)
        if method == "GET" and len(segments) == 4 and segments[:2] == ["v1", "files"] \
                and segments[3] == "content":
            data = self.files.get(segments[2])
            if segments[2] in self.missing:
                data = None
            if segments[2] in self.redirected:
                return 302, b"", False
            return (200, data, False) if data is not None else (404, _error("no such file"),
                                                                 False)
        if method == "POST" and parts.path == "/v1/batches":
            return self._create_openai(body, sent)
        if method == "GET" and parts.path == "/v1/batches":
            return self._list(parse_qs(parts.query))
        if method == "GET" and len(segments) == 3 and segments[:2] == ["v1", "batches"]:
            return self._get(segments[2], port)
        if method == "POST" and parts.path == "/v1/messages/batches":
            return self._create_anthropic(body, sent, port)
        if method == "GET" and len(segments) == 4 and segments[:3] == ["v1", "messages",
                                                                      "batches"]:
            return self._get(segments[3], port)
        if method == "GET" and len(segments) == 5 and segments[4] == "results":
            batch = self.batches.get(segments[3])
            if batch is None or batch["processing_status"] != "ended":
                return 404, _error("no results yet"), False
            if segments[3] in self.redirected:
                return 302, b"", False
            if _marked(batch, "nofile"):
                return 404, _error("no such results"), False
            return 200, batch["_results"], False
        return 404, _error("no such route"), False

    # -- OpenAI ----------------------------------------------------------------------------------
    def _upload(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes, bool]:
        fields = _multipart(headers.get("content-type", ""), body)
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return 400, _error("purpose=batch and a file are required"), False
        file_id = "file_" + hashlib.sha256(fields["file"]).hexdigest()[:24] + \
            f"{len(self.files):04x}"
        self.files[file_id] = fields["file"]
        return 200, json.dumps({"id": file_id, "object": "file", "bytes": len(fields["file"]),
                                "purpose": "batch"}).encode(), False

    def _create_openai(self, body: bytes, key: str | None) -> tuple[int, bytes, bool]:
        request = json.loads(body)
        data = self.files.get(request.get("input_file_id", ""))
        if data is None or request.get("endpoint") not in ("/v1/chat/completions",
                                                           "/chat/completions") \
                or request.get("completion_window") != "24h":
            return 400, _error("bad batch request"), False
        lines = [msgspec.json.decode(x, type=_Line) for x in data.splitlines() if x.strip()]
        batch_id = f"batch_{len(self.batches) + 1:08x}"
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": request["endpoint"],
            "input_file_id": request["input_file_id"], "completion_window": "24h",
            "status": "validating", "output_file_id": None, "error_file_id": None,
            "metadata": request.get("metadata"), "errors": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "_lines": lines, "_key": key, "_polls": 0, "_provider": "openai"}
        return self._created(batch_id)

    def _created(self, batch_id: str) -> tuple[int, bytes, bool]:
        self.created += 1
        self.order.insert(0, batch_id)
        if self.lose_create > 0:
            self.lose_create -= 1
            return 200, b"", True
        return 200, json.dumps(_public(self.batches[batch_id])).encode(), False

    def _list(self, query: dict[str, list[str]]) -> tuple[int, bytes, bool]:
        limit = int(query.get("limit", ["20"])[0])
        after = query.get("after", [None])[0]
        ids = [b for b in self.order if self.batches[b]["_provider"] == "openai"]
        if after in ids:
            ids = ids[ids.index(after) + 1:]
        page = ids[:limit]
        return 200, json.dumps({"object": "list",
                                "data": [_public(self.batches[b]) for b in page],
                                "first_id": page[0] if page else None,
                                "last_id": page[-1] if page else None,
                                "has_more": len(ids) > limit}).encode(), False

    def _get(self, batch_id: str, port: int) -> tuple[int, bytes, bool]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return 404, _error("no such batch"), False
        batch["_polls"] += 1
        if _marked(batch, "deepbatch"):
            return 200, b'{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}", False
        if _marked(batch, "batch500"):
            return 500, _error("fake server error"), False
        if batch["_polls"] >= self.polls:
            self._end(batch, port)
        elif batch["_provider"] == "openai":
            batch["status"] = "in_progress"
        shown = _public(batch)
        if _marked(batch, "oddstatus"):
            shown["status" if "status" in shown else "processing_status"] = "paused_for_review"
        if _marked(batch, "nostatus"):
            shown.pop("status", None)
            shown.pop("processing_status", None)
        return 200, json.dumps(shown).encode(), False

    # -- Anthropic -------------------------------------------------------------------------------
    def _create_anthropic(self, body: bytes, key: str | None,
                          port: int) -> tuple[int, bytes, bool]:
        try:
            request = msgspec.json.decode(body, type=_AnthropicCreate)
        except msgspec.DecodeError as exc:
            return 400, _error(f"bad batch request: {exc}"), False
        batch_id = f"msgbatch_{len(self.batches) + 1:08x}"
        self.batches[batch_id] = {
            "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(request.requests), "succeeded": 0,
                               "errored": 0, "canceled": 0, "expired": 0},
            "results_url": None, "_lines": request.requests, "_key": key, "_polls": 0,
            "_provider": "anthropic"}
        return self._created(batch_id)

    # -- ending a batch: every request answered by the live rules ---------------------------------
    def _end(self, batch: dict[str, Any], port: int) -> None:
        if batch.get("_ended"):
            return
        batch["_ended"] = True
        if _marked(batch, "endcrash"):  # after _ended: the batch stays in_progress for ever
            raise RuntimeError("fake crash while making a batch's results")
        anthropic = batch["_provider"] == "anthropic"
        out, errors = [], []
        counts: Counter[str] = Counter()
        redirect = False
        for i, line in enumerate(batch["_lines"]):
            body = bytes(line.params if anthropic else line.body)
            fault = _fault(body)
            redirect = redirect or fault == "redirect"
            if fault in ("batchfail", "echofail") and not anthropic:
                message = "fake validation failure" + (
                    f" for key {batch['_key']}" if fault == "echofail" else "")
                batch.update(status="failed", errors={"object": "list", "data": [
                    {"code": "invalid_request", "message": message, "line": i + 1}]})
                return
            result, kind = _answer(anthropic, line.custom_id, body, fault, batch["_key"], i)
            counts[kind] += 1
            if fault == "dropped":
                continue  # counted as done, in no result file
            (out if kind == "succeeded" or anthropic or fault == "vllmerror"
             else errors).append(result)
        out.sort(key=_custom_id)
        errors.sort(key=_custom_id)
        if anthropic:
            batch.update(processing_status="ended", request_counts={
                "processing": 0, **{t: counts[t] for t in ("succeeded", "errored", "canceled",
                                                            "expired")}},
                results_url=f"http://127.0.0.1:{port}/v1/messages/batches/{batch['id']}/results",
                _results=_jsonl(out, batch["_key"]))
            if redirect:
                self.redirected.add(batch["id"])
            return
        status = "expired" if counts["expired"] else "cancelled" if counts["canceled"] else \
            "completed"
        batch.update(status=status, request_counts={
            "total": len(batch["_lines"]), "completed": counts["succeeded"],
            "failed": len(batch["_lines"]) - counts["succeeded"]})
        if _marked(batch, "nofiles"):
            return  # completed, and neither file id given
        if out:
            batch["output_file_id"] = self._save(_jsonl(out, batch["_key"]))
            if redirect:
                self.redirected.add(batch["output_file_id"])
        if errors:
            batch["error_file_id"] = self._save(_jsonl(errors, batch["_key"]))
        if _marked(batch, "nofile"):
            self.missing.update({batch["output_file_id"], batch["error_file_id"]} - {None})

    def _save(self, data: bytes) -> str:
        file_id = "file_" + hashlib.sha256(data).hexdigest()[:24] + f"{len(self.files):04x}"
        self.files[file_id] = data
        return file_id


def _marked(batch: dict[str, Any], fault: str) -> bool:
    """Whether a request of the batch carries ``FAKE:<fault>``."""
    mark = f"FAKE:{fault}".encode()
    return any(mark in bytes(line.params or line.body) for line in batch["_lines"])


def _azure(path: str) -> str:
    """An Azure batch call's path as OpenAI's: ``/v1/openai/files?api-version=V`` is
    ``/v1/files`` (the fake's base URL ends in /v1)."""
    parts = urlsplit(path)
    query = "&".join(q for q in parts.query.split("&") if q and not q.startswith("api-version="))
    return parts.path.replace("/v1/openai/", "/v1/", 1) + (f"?{query}" if query else "")


def _fault(body: bytes) -> str:
    found = MARK.search(body)
    if not found:
        return "pass"
    fault = found[1].decode()
    if found[2]:  # fails N attempts, then answers: a batch provider retries it
        return "pass"
    return fault


def _answer(anthropic: bool, custom_id: str, body: bytes, fault: str, key: str | None,
            i: int) -> tuple[dict[str, Any], str]:
    digest = hashlib.sha256(body).hexdigest()
    rid = "breq_" + digest[:20]
    if fault in _LIVE_ONLY:
        fault = "pass"  # transient for a live request; a batch provider retries it
    if fault in ("expired", "canceled"):
        if anthropic:
            return {"custom_id": custom_id, "result": {"type": fault}}, fault
        code = "batch_expired" if fault == "expired" else "batch_cancelled"
        return {"id": f"batch_req_{i}", "custom_id": custom_id, "response": None,
                "error": {"code": code, "message": f"fake {fault}"}}, fault
    if fault in ("batcherror", "400", "401", "echokey", "vllmerror"):
        message = f"bad request from key {key}" if fault == "echokey" else f"fake {fault}"
        status = 500 if fault == "batcherror" else 400
        if anthropic:
            return {"custom_id": custom_id, "result": {"type": "errored", "error": {
                "type": "error", "error": {"type": "api_error" if status == 500 else
                                           "invalid_request_error", "message": message}}}}, \
                "errored"
        if fault == "vllmerror":
            return {"id": f"vllm-{i}", "custom_id": custom_id, "response": {
                "status_code": 400, "request_id": f"vllm-batch-{i}", "body": None},
                "error": message}, "errored"
        return {"id": f"batch_req_{i}", "custom_id": custom_id, "response": {
            "status_code": status, "request_id": rid,
            "body": {"error": {"message": message, "type": "fake_error"}}},
            "error": None}, "errored"
    if fault in _BATCH_ONLY:
        fault = "pass"
    request = json.loads(body)
    text, finish = content(fault, digest, key)
    if _pairwise(request) and fault in _ANSWERS:  # a pairwise state (issue 28): no bias
        text = json.dumps(preference(request, digest))
    usage_in, usage_out = len(body) // 4, max(1, len(text or "") // 4)
    if fault == "negusage":
        usage_in, usage_out = -1_000_000, -1_000_000
    if anthropic:
        message = anthropic_message(request, fault, text, rid, usage_in, usage_out)
        # the tool input holds the key decoded: written escaped (``_jsonl``)
        return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message},
                **({"_escape_key": True} if fault == "echoescaped" else {})}, "succeeded"
    completion = openai_completion(request, fault, text, finish, rid, usage_in, usage_out)
    return {"id": f"batch_req_{i}", "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": rid, "body": completion},
            "error": None}, "succeeded"


def _custom_id(result: dict[str, Any]) -> str:
    return str(result["custom_id"])


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _jsonl(rows: list[dict[str, Any]], key: str | None = None) -> bytes:
    """The rows as JSON lines; in a row marked ``_escape_key``, the key JSON-escaped."""
    out = []
    for row in rows:
        line = json.dumps({k: v for k, v in row.items() if k != "_escape_key"}).encode()
        if row.get("_escape_key") and key:
            line = line.replace(key.encode(), escaped(key).encode())
        out.append(line + b"\n")
    return b"".join(out)


def _error(message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": "fake_error",
                                                  "message": message}}).encode()


def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body (enough for what clients send)."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if not found:
        return {}
    fields = {}
    for part in body.split(b"--" + found[1].encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, value = part.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head)
        if name:
            fields[name[1].decode()] = value.removesuffix(b"\r\n")
    return fields
