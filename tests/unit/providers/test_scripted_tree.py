"""One scripted replay for a whole tree: the split is depth-first, static and
deterministic; a call refused before a child starts owns no lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_core import CompletionRequest, ProviderConfig, ScriptedProvider, ScriptExhausted


def _spawn(goal: str) -> dict[str, object]:
    return {"name": "spawn_agent", "arguments": {"goal": goal}}


def _provider(tmp_path: Path, lines: list[dict[str, object]]) -> ScriptedProvider:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return ScriptedProvider(ProviderConfig(kind="scripted", script=path))


def _texts(p: ScriptedProvider, steps: int) -> list[str]:
    request = CompletionRequest(model="m", messages=())
    return [p.complete(request, step=s).text for s in range(steps)]


def test_children_read_the_lines_after_their_spawn_depth_first(tmp_path: Path) -> None:
    p = _provider(tmp_path, [
        {"text": "r0", "tool_calls": [_spawn("a"), _spawn("b")]},
        {"text": "a0", "tool_calls": [_spawn("a1")]},
        {"text": "a1-0"},
        {"text": "a1"},
        {"text": "b0"},
        {"text": "r1"},
    ])
    p.plan_tree(lambda args, depth, spawned: True)
    assert _texts(p, 2) == ["r0", "r1"]
    a, b = p.for_child(0, 0), p.for_child(0, 1)
    assert _texts(a, 2) == ["a0", "a1"] and _texts(b, 1) == ["b0"]
    assert _texts(a.for_child(0, 0), 1) == ["a1-0"]
    # the split depends on the file only: asking again, in another order, reads the same
    assert _texts(p.for_child(0, 1), 1) == ["b0"]


def test_a_refused_spawn_owns_no_lines(tmp_path: Path) -> None:
    p = _provider(tmp_path, [
        {"text": "r0", "tool_calls": [_spawn("refused"), _spawn("ok")]},
        {"text": "ok0"},
        {"text": "r1"},
    ])
    p.plan_tree(lambda args, depth, spawned: isinstance(args, dict) and args["goal"] == "ok")
    assert _texts(p, 2) == ["r0", "r1"]
    assert _texts(p.for_child(0, 1), 1) == ["ok0"]
    with pytest.raises(ScriptExhausted):
        p.for_child(0, 0)


def test_without_a_tree_plan_line_k_is_step_k(tmp_path: Path) -> None:
    p = _provider(tmp_path, [{"text": "x", "tool_calls": [_spawn("a")]}, {"text": "y"}])
    assert _texts(p, 2) == ["x", "y"]
