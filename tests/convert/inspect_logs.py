"""Real inspect_ai eval logs for the tests, written by inspect_ai itself (a test dependency).

A two-sample task runs on inspect's mock model, with scripted outputs: sample ``q1`` calls a
tool that fails, then answers; sample ``2`` calls a tool that works and answers wrongly.
Two scorers (``match``, ``includes``) give labels; one custom scorer gives a partial score
(``P``), which convert does not map. ``model_graded_qa`` grades with a second mock model
whose scripted grades are ``GRADE: C`` for ``q1`` and text without a grade for ``2``, which
inspect scores as unscored: ``"value": NaN`` in the log (issue 30). A custom scorer gives
``Infinity`` and ``-Infinity``, which inspect writes as those literals.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

# The grader's answers (each sample's), as model_graded_qa's explanation holds them.
GRADES = {"q1": "The submission says 4, which meets the criterion.\nGRADE: C",
          "2": "The submission names Lyon; I cannot settle this."}


def write_logs_apart(folder: Path, runs: dict[str, tuple[str, int]]) -> dict[str, Path]:
    """``write_logs`` for each name -> (format, epochs), in a separate Python process: inspect
    runs its own event loop and warns about its dependencies, none of which belongs in the
    test process (where warnings are errors)."""
    code = ("import json, sys; from pathlib import Path; "
            "from tests.convert.inspect_logs import write_logs; "
            "runs = json.loads(sys.argv[2]); "
            "print(json.dumps({k: str(write_logs(Path(sys.argv[1]) / k, f, e)) "
            "for k, (f, e) in runs.items()}))")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, str(folder),
                           json.dumps(runs)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "INSPECT_LOG_LEVEL": "error"}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return {k: Path(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def write_logs(folder: Path, log_format: str = "eval", epochs: int = 1) -> Path:
    """Run the task once and return the path of its log (``.eval`` or ``.json``)."""
    os.environ.setdefault("INSPECT_LOG_LEVEL", "error")
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        ModelOutput,
        ModelUsage,
        get_model,
    )
    from inspect_ai.scorer import Score, Target, includes, match, model_graded_qa, scorer
    from inspect_ai.solver import TaskState, generate, system_message, use_tools
    from inspect_ai.tool import ToolCall, ToolError, tool

    @tool
    def lookup():  # type: ignore[no-untyped-def]
        async def execute(city: str) -> str:
            """Look up a city.

            Args:
                city: The city.
            """
            if city == "Atlantis":
                raise ToolError("no such city")
            return f"{city}: 21C"

        return execute

    @scorer(metrics=[])
    def partial():  # type: ignore[no-untyped-def]
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value="P", explanation="half right")

        return score

    @scorer(metrics=[])
    def extreme():  # type: ignore[no-untyped-def]
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=float("inf") if state.sample_id == "q1" else float("-inf"))

        return score

    usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)

    # Outputs written out in full (not inspect's helpers), so the texts are the test's own.
    def out(content: str, call: tuple[str, str] | None = None) -> ModelOutput:
        calls = [ToolCall(id=call[0], function="lookup", arguments={"city": call[1]})] \
            if call else None
        message = ChatMessageAssistant(content=content, tool_calls=calls, model="mockllm/model")
        return ModelOutput(model="mockllm/model", usage=usage, choices=[ChatCompletionChoice(
            message=message, stop_reason="tool_calls" if call else "stop")])

    script, grades = [], []
    for _ in range(epochs):
        script += [out("Let me look.", ("call_a", "Atlantis")), out("4"),
                   out("", ("call_b", "Paris")), out("Lyon")]
        grades += [out(GRADES["q1"]), out(GRADES["2"])]
    grader = get_model("mockllm/grader", custom_outputs=grades)
    task = Task(
        dataset=[Sample(input="What is 2+2?", target="4", id="q1",
                        metadata={"scenario": "math"}),
                 Sample(input="Weather in the capital of France?", target="Paris", id=2,
                        metadata={"scenario": "weather"})],
        solver=[system_message("Be brief."), use_tools(lookup()), generate()],
        scorer=[match(), includes(), partial(), model_graded_qa(model=grader), extreme()],
        epochs=epochs,
    )
    folder.mkdir(parents=True, exist_ok=True)
    [log] = eval(task, model=get_model("mockllm/model", custom_outputs=script),
                 log_dir=str(folder), log_format=log_format, display="none",
                 max_samples=1, max_tasks=1)
    assert log.status == "success", log.error
    return Path(log.location)
