"""Every `--json` line is documented and valid (issue 37): the event schema shipped in
the package describes every kind, docs/guide/events.md is made from it, and every line
of a corpus of real runs (finished, paused for approval and for a question, stopped,
interrupted, errored, compacted, a rejected answer, a tree, a batch, a session turn)
validates against it, with no field the schema does not name. The human output of the
same corpus holds no Python repr."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness_core import EVENT_SCHEMA, EventKind, event_json_schema
from tests.conftest import REPO
from tests.integration.output.corpus import Corpus, build_corpus
from tests.integration.output.events_page import render_page

SCENARIOS = {"finished", "paused_approval", "paused_question", "stopped", "stalled",
             "interrupted",
             "errored", "compacted", "schema", "tree", "batch", "session"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("corpus"))


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with no field beyond those it names, kind by kind (the shipped schema
    lets consumers meet fields a newer io adds; the test holds io to its page)."""
    strict = copy.deepcopy(schema)
    for name, definition in strict["$defs"].items():
        if name not in ("run_event", "usage"):
            definition["unevaluatedProperties"] = False
    return strict


def test_the_shipped_schema_is_a_json_schema_naming_every_event_kind() -> None:
    schema = event_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    named = {str(r["then"]["$ref"]).rsplit("/", 1)[-1] for r in schema["allOf"]}
    assert {k.value for k in EventKind} | {"batch_task", "batch_finished"} == named
    assert schema["properties"]["schema"] == {"const": EVENT_SCHEMA}
    event_json_schema()["$defs"].clear()  # a copy each time: the caller may change it
    assert event_json_schema()["$defs"]


def test_the_events_page_is_made_from_the_schema() -> None:
    page = (REPO / "docs" / "guide" / "events.md").read_text(encoding="utf-8")
    assert page == render_page(event_json_schema()), (
        "docs/guide/events.md is out of date: python -m tests.integration.output.events_page"
        " > docs/guide/events.md")


def test_every_line_of_the_corpus_is_valid_under_the_schema(corpus: Corpus) -> None:
    assert set(corpus.json) == SCENARIOS
    validator = jsonschema.Draft202012Validator(_strict(event_json_schema()))
    kinds: dict[str, set[str]] = {}
    for name, line in corpus.lines():
        event = json.loads(line)
        assert event.get("schema") == EVENT_SCHEMA, (name, line)
        errors = sorted(validator.iter_errors(event), key=lambda e: list(e.path))
        assert not errors, f"{name}: {errors[0].message} in {line[:300]}"
        kinds.setdefault(str(event["kind"]), set()).add(name)
    expected = {"run_started", "step_started", "completion", "tool_call", "tool_result",
                "refusal", "approval", "question", "plan", "checkpoint", "verification",
                "stall", "warning", "spawn", "compaction", "answer_rejected", "run_finished",
                "batch_task", "batch_finished"}
    assert expected <= set(kinds), expected - set(kinds)
    for name in SCENARIOS - {"batch"}:
        last = json.loads(corpus.json[name].splitlines()[-1])
        assert last["kind"] == "run_finished", name


def test_each_ending_has_its_status_and_only_a_finished_run_an_answer(corpus: Corpus) -> None:
    endings = {name: json.loads(corpus.json[name].splitlines()[-1])
               for name in SCENARIOS - {"batch"}}
    status = {name: e["status"] for name, e in endings.items()}
    assert status == {"finished": "finished", "paused_approval": "paused",
                      "paused_question": "paused", "stopped": "stopped", "stalled": "stopped",
                      "interrupted": "interrupted", "errored": "errored",
                      "compacted": "finished", "schema": "finished", "tree": "finished",
                      "session": "finished"}
    for name, ending in endings.items():
        assert bool(ending["answer"]) == (ending["status"] == "finished"), name
        assert ("resume" in ending) == (ending["status"] not in ("finished", "failed")), name


_REPR = re.compile(r"\{'|\['|\bNone\b|\bTrue\b|\bFalse\b|object at 0x|<[A-Za-z_]+\.[A-Za-z_.]+")
"""What a Python repr leaves in text: a dict or list of strings, None/True/False, an
object's default repr."""


def test_no_python_repr_in_the_human_output_of_the_corpus(corpus: Corpus) -> None:
    assert set(corpus.human) == SCENARIOS
    for name, text in corpus.human.items():
        assert "Traceback" not in text, name
        found = [line for line in text.splitlines() if _REPR.search(line)]
        assert not found, f"{name}: {found[:3]}"


def test_the_human_trace_shows_compaction_and_the_pause_on_stdout(corpus: Corpus) -> None:
    assert "compacting the history before step" in corpus.live["compacted"]
    assert "compacted: " in corpus.live["compacted"]
    assert "paused at step 0: waits for approval of exec touch m" in corpus.human[
        "paused_approval"]
    assert "paused at step 0: waits for an answer to: Which colour?" in corpus.human[
        "paused_question"]


def test_a_refusal_is_printed_once_in_the_live_trace(corpus: Corpus) -> None:
    text = corpus.live["finished"]
    assert text.count("⛔ refused exec rm -rf /tmp/x") == 1
    assert "✗ refused:" not in text


def test_the_schema_file_is_in_the_package_data() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"schemas/*.json"' in pyproject
    assert (Path(REPO) / "harness_core" / "schemas" / "events.schema.json").is_file()


def test_an_interrupted_run_says_how_to_continue(corpus: Corpus) -> None:
    ending = json.loads(corpus.json["interrupted"].splitlines()[-1])
    assert ending["resume"] == f"io resume {ending['run_id']}"
    assert "continue with: io resume " in corpus.live["interrupted"]
