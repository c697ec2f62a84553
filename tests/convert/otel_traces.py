"""Production traces for the tests, written by real OpenTelemetry instrumentation.

An application calls the fake judge server (``tests/judge/fake_server.py``) with the openai
client, instrumented by ``opentelemetry-instrumentation-openai-v2`` (the GenAI semantic
conventions, content recorded on spans); its agent and tool spans are the application's own,
made with the OpenTelemetry SDK as the conventions say (``invoke_agent``, ``execute_tool``).
The SDK's OTLP/HTTP exporter sends the spans, as protobuf, to a small receiver on 127.0.0.1,
which writes each export request on one line in the OTLP JSON encoding, as the collector's
file exporter does (``resourceSpans`` > ``scopeSpans`` > ``spans``; camelCase names, trace and
span ids in hex, enums as numbers, 64-bit integers as strings): the protobuf message turned
into JSON by protobuf's own mapping (``json_format.MessageToDict``), ids then written in hex as
the OTLP specification asks. No Go collector is needed.

The traces (one trace each, in this order):

1. ``weather``: an ``invoke_agent`` span; a chat call that calls the tool ``lookup``; the
   ``execute_tool`` span (it works); a chat call that answers with the tool's result.
2. ``atlantis``: the same, but the tool fails (the ``execute_tool`` span's status is ERROR,
   ``error.type`` set) and the application sends the error text back as the tool's result.
3. ``plain``: one chat call and no parent span (the chat span is the root).
4. ``http``: an application span with no GenAI attribute (nothing to convert).
5. ``unanswered``: a chat call answered only with a tool call, never run.

Run apart (``write_traces_apart``): the instrumentation patches the openai client and sets
global providers, which belongs in no test process.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.helpers import ROOT

# How the instrumentation records content: the latest GenAI conventions, messages on spans.
ENVIRONMENT = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
               "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}


def write_traces_apart(path: Path) -> Path:
    """``write_traces(path)`` in a separate Python process; returns ``path``."""
    code = ("import sys; from pathlib import Path; "
            "from tests.convert.otel_traces import write_traces; write_traces(Path(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **ENVIRONMENT})
    assert done.returncode == 0, done.stderr[-3000:]
    return path


def to_json(request: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` in the OTLP JSON encoding: protobuf's JSON mapping,
    with trace and span ids written in hex (the mapping writes bytes in base64)."""
    from google.protobuf.json_format import MessageToDict

    data = MessageToDict(request, use_integers_for_enums=True)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        if key in link:
                            link[key] = base64.b64decode(link[key]).hex()
    return data


class _Receiver(BaseHTTPRequestHandler):
    """OTLP/HTTP: ``POST /v1/traces`` with a protobuf ``ExportTraceServiceRequest``."""

    out: Any = None
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        request = ExportTraceServiceRequest.FromString(body)
        with self.lock:
            self.out.write(json.dumps(to_json(request), separators=(",", ":")) + "\n")
            self.out.flush()
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


def write_traces(path: Path) -> None:
    """Run the application's five traces and write them to ``path`` (OTLP JSON lines)."""
    for key, value in ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    from tests.judge.support import FakeServer

    server = FakeServer("--latency", "0")
    with open(path, "w") as out:
        _Receiver.out = out
        receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        try:
            provider = TracerProvider(resource=Resource.create(
                {"service.name": "weather-app", "deployment.environment.name": "test"}))
            processor = BatchSpanProcessor(OTLPSpanExporter(
                endpoint=f"http://127.0.0.1:{receiver.server_port}/v1/traces"))
            provider.add_span_processor(processor)
            trace.set_tracer_provider(provider)
            OpenAIInstrumentor().instrument(tracer_provider=provider)
            import openai

            client = openai.OpenAI(base_url=server.url, api_key="sk-fake-otel-fixture",
                                   max_retries=0)
            tracer = trace.get_tracer("weather-app", "1.0")
            tools = [{"type": "function", "function": {
                "name": "lookup", "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]

            def agent(name: str, question: str) -> None:
                with tracer.start_as_current_span("invoke_agent weather-agent") as span:
                    span.set_attributes({"gen_ai.operation.name": "invoke_agent",
                                         "gen_ai.agent.name": "weather-agent",
                                         "gen_ai.conversation.id": f"conv-{name}",
                                         "app.user.tier": "free"})
                    messages: list[dict[str, Any]] = [
                        {"role": "system", "content": "You answer with the weather tool."},
                        {"role": "user", "content": f"{question} FAKE:toolcall"}]
                    first = client.chat.completions.create(model="gpt-4o-mini",
                                                           messages=messages, tools=tools)
                    call = first.choices[0].message.tool_calls[0]
                    messages.append(first.choices[0].message.model_dump(exclude_none=True))
                    with tracer.start_as_current_span("execute_tool lookup") as tool:
                        tool.set_attributes({"gen_ai.operation.name": "execute_tool",
                                             "gen_ai.tool.name": "lookup",
                                             "gen_ai.tool.call.id": call.id,
                                             "gen_ai.tool.type": "function"})
                        if "Atlantis" in call.function.arguments:
                            result = "Error: no such city"
                            tool.set_status(Status(StatusCode.ERROR, "no such city"))
                            tool.set_attribute("error.type", "CityNotFound")
                        else:
                            result = '{"city": "Paris", "celsius": 21}'
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                    client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                   tools=tools)

            agent("weather", "What is the weather in Paris?")
            processor.force_flush()  # a line of its own, as a collector's batch
            agent("atlantis", "What is the weather in Atlantis?")
            client.chat.completions.create(model="gpt-4o-mini", messages=[
                {"role": "user", "content": "Say hello."}])
            with tracer.start_as_current_span("GET /health") as span:
                span.set_attribute("http.request.method", "GET")
            client.chat.completions.create(model="gpt-4o-mini", tools=tools, messages=[
                {"role": "user", "content": "Weather in Rome? FAKE:toolcall"}])
            processor.force_flush()
            provider.shutdown()
        finally:
            receiver.shutdown()
            receiver.server_close()
            server.stop()
