"""The OpenAI Responses API side of the loopback vendor fake (`vendor_server`).

`render_responses` turns a vendor-neutral turn into a Responses answer: a JSON body
(``object: "response"`` with its ``output`` items and usage) or the semantic event
stream (``response.created`` … ``response.output_item.added``,
``response.output_text.delta``, ``response.function_call_arguments.delta``,
``response.output_item.done`` … ``response.completed``; no ``[DONE]``), every event with
its ``event:`` line, ``type`` and ``sequence_number``. A turn's `reasoning` becomes a
reasoning item whose ``encrypted_content`` the fake can recognise later.

`ResponsesLedger.check` holds the invariants of a request: the model and input are
there, tool shapes are right, every ``function_call_output`` answers a
``function_call`` made earlier in the input (or by the response that
``previous_response_id`` names, which must be one this fake stored), every call is
answered before the next message, and a reasoning item sent back carries the
``encrypted_content`` this fake issued (when ``store`` is false it is the only copy),
and a ``function_call`` the fake made with reasoning is sent back after that reasoning
item (OpenAI's guidance: reasoning items go back with the calls they led to; a client
that forgot them, a resumed run say, fails here).

`request_differences` is the golden comparison of two request bodies (an uninterrupted
run's and a resumed run's request for the same step): what differs, field by field and
input item by input item.
"""

from __future__ import annotations

import json
import re
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.vendor_server import Turn

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def responses_error(code: str, message: str) -> dict[str, Any]:
    """An ``error`` stream event (``server_error`` is the retryable kind)."""
    return {"type": "error", "code": code, "message": message, "param": None}


def _usage(turn: Turn) -> dict[str, Any]:
    if turn.usage is not None:
        return dict(turn.usage)
    return {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    step = -(-len(text) // max(1, min(pieces, len(text))))
    return [text[i : i + step] for i in range(0, len(text), step)]


def encrypted(reasoning: str) -> str:
    """The opaque blob the fake issues for a reasoning summary (checked when it returns)."""
    return "enc:" + reasoning[::-1]


def _items(turn: Turn, response_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{response_id}",
                "summary": [{"type": "summary_text", "text": turn.reasoning}],
                "encrypted_content": encrypted(turn.reasoning),
            }
        )
    for i, (name, action) in enumerate(turn.server_tools):
        items.append(
            {"type": "web_search_call", "id": f"ws_{i}", "status": "completed", "action": action}
        )
        del name
    if turn.text or turn.citations:
        annotations = [
            {
                "type": "url_citation",
                "url": c["url"],
                "title": c.get("title", ""),
                "start_index": 0,
                "end_index": len(turn.text),
            }
            for c in turn.citations
        ]
        items.append(
            {
                "type": "message",
                "id": f"msg_{response_id}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": annotations}],
            }
        )
    for call in turn.tool_calls:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{call.id}",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "status": "completed",
            }
        )
    return items


def render_responses(
    turn: Turn, model: str, stream: bool, response_id: str
) -> dict[str, Any] | list[str]:
    """A Responses answer of `turn`: a body, or the SSE events of a stream."""
    output = _items(turn, response_id)
    status = "incomplete" if turn.stop_reason == "max_output_tokens" else "completed"
    final: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": turn.model or model,
        "output": output,
        "usage": _usage(turn),
    }
    if status == "incomplete":
        final["incomplete_details"] = {"reason": "max_output_tokens"}
    if not stream:
        return final
    return _Stream(turn, final).events()


class _Stream:
    def __init__(self, turn: Turn, final: dict[str, Any]) -> None:
        self.turn = turn
        self.final = final
        self.out: list[str] = []
        self.seq = 0

    def emit(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        self.out.append(f"event: {kind}\ndata: {json.dumps(data)}\n\n")

    def events(self) -> list[str]:
        started = {**self.final, "status": "in_progress", "output": [], "usage": None}
        self.emit("response.created", response=started)
        self.out.extend(self.turn.extra_events)
        self.emit("response.in_progress", response=started)
        for index, item in enumerate(self.final["output"]):
            self._item(index, item)
        terminal = "response.incomplete" if self.final["status"] == "incomplete" else "response.completed"
        self.emit(terminal, response=self.final)
        return self.out

    def _item(self, index: int, item: dict[str, Any]) -> None:
        kind = item["type"]
        if kind == "function_call":
            self.emit("response.output_item.added", output_index=index,
                      item={**item, "arguments": "", "status": "in_progress"})
            for piece in _split(item["arguments"], self.turn.pieces):
                self.emit("response.function_call_arguments.delta", item_id=item["id"],
                          output_index=index, delta=piece)
            self.emit("response.function_call_arguments.done", item_id=item["id"],
                      output_index=index, arguments=item["arguments"])
        elif kind == "message":
            self.emit("response.output_item.added", output_index=index,
                      item={**item, "content": [], "status": "in_progress"})
            part = item["content"][0]
            self.emit("response.content_part.added", item_id=item["id"], output_index=index,
                      content_index=0, part={"type": "output_text", "text": "", "annotations": []})
            for piece in _split(part["text"], self.turn.pieces):
                self.emit("response.output_text.delta", item_id=item["id"], output_index=index,
                          content_index=0, delta=piece, logprobs=[])
            for n, note in enumerate(part["annotations"]):
                self.emit("response.output_text.annotation.added", item_id=item["id"],
                          output_index=index, content_index=0, annotation_index=n,
                          annotation=note)
            self.emit("response.output_text.done", item_id=item["id"], output_index=index,
                      content_index=0, text=part["text"])
            self.emit("response.content_part.done", item_id=item["id"], output_index=index,
                      content_index=0, part=part)
        elif kind == "web_search_call":
            self.emit("response.output_item.added", output_index=index,
                      item={**item, "status": "in_progress"})
            self.emit("response.web_search_call.searching", item_id=item["id"],
                      output_index=index)
            self.emit("response.web_search_call.completed", item_id=item["id"],
                      output_index=index)
        else:
            self.emit("response.output_item.added", output_index=index,
                      item={**item, "summary": [], "encrypted_content": None})
        self.emit("response.output_item.done", output_index=index, item=item)


class ResponsesLedger:
    """What the fake remembers between requests: stored responses and issued reasoning."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stored: dict[str, list[dict[str, Any]]] = {}
        self.issued: dict[str, str] = {}
        self.reasoned: dict[str, str] = {}
        """call_id -> the id of the reasoning item issued with the call."""
        self._count = 0

    def next_id(self) -> str:
        with self._lock:
            self._count += 1
            return f"resp_{self._count:04d}"

    def remember(self, response_id: str, body: Any, rendered: dict[str, Any] | list[str],
                 turn: Turn) -> None:
        output = _items(turn, response_id)
        with self._lock:
            if isinstance(body, dict) and body.get("store"):
                self.stored[response_id] = output
            reasoning = [i["id"] for i in output if i["type"] == "reasoning"]
            for item in output:
                if item["type"] == "reasoning":
                    self.issued[item["id"]] = item["encrypted_content"]
                elif item["type"] == "function_call" and reasoning:
                    self.reasoned[item["call_id"]] = reasoning[-1]
        del rendered

    def check(self, headers: dict[str, str], body: Any) -> list[str]:
        """Every broken invariant of one request (empty when it is well-formed)."""
        problems: list[str] = []
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or len(auth) <= len("Bearer "):
            problems.append("missing Bearer authorization header")
        if not isinstance(body, dict):
            return problems + ["body is not a JSON object"]
        if not isinstance(body.get("model"), str) or not body["model"]:
            problems.append("model missing")
        if "messages" in body or "max_tokens" in body:
            problems.append("a Chat Completions field sent to the Responses API")
        problems.extend(_check_tools(body.get("tools") or ()))
        if "prompt_cache_key" in body and (
            not isinstance(body["prompt_cache_key"], str) or not body["prompt_cache_key"]):
            problems.append("prompt_cache_key is not a non-empty string")
        items = body.get("input")
        if not isinstance(items, list) or not items:
            return problems + ["input missing or empty"]
        pending: set[str] = set()
        previous = body.get("previous_response_id")
        if previous is not None:
            with self._lock:
                stored = self.stored.get(previous)
            if stored is None:
                problems.append(f"previous_response_id {previous!r} is not a stored response")
            else:
                pending = {i["call_id"] for i in stored if i["type"] == "function_call"}
        problems.extend(self._check_items(items, pending, store=bool(body.get("store"))))
        return problems

    def _check_items(self, items: list[Any], pending: set[str], *, store: bool) -> list[str]:
        problems: list[str] = []
        answered_all = set(pending)
        reasoning_sent: set[str] = set()
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                problems.append(f"input item {n} is not an object")
                continue
            kind = item.get("type", "message")
            if kind == "function_call_output":
                call_id = item.get("call_id")
                if call_id not in pending:
                    problems.append(f"function_call_output {call_id!r} has no matching call")
                pending.discard(call_id)
                if not isinstance(item.get("output"), str):
                    problems.append("function_call_output output must be a string")
                continue
            if pending and kind != "function_call":
                problems.append(f"function calls {sorted(pending)} were never answered")
                pending = set()
            if kind == "function_call":
                if not item.get("call_id") or not _TOOL_NAME.match(str(item.get("name", ""))):
                    problems.append(f"bad function_call {item!r}")
                if not isinstance(item.get("arguments"), str):
                    problems.append("function_call arguments must be a string")
                pending.add(item.get("call_id"))
                answered_all.add(item.get("call_id"))
                problems.extend(self._check_reasoned(item, reasoning_sent))
            elif kind == "reasoning":
                problems.extend(self._check_reasoning(item, store=store))
                reasoning_sent.add(str(item.get("id")))
            elif kind == "message":
                if item.get("role") not in ("system", "developer", "user", "assistant"):
                    problems.append(f"input item {n} has role {item.get('role')!r}")
                if not isinstance(item.get("content"), str | list):
                    problems.append(f"input item {n} has no content")
            else:
                problems.append(f"input item {n} has unknown type {kind!r}")
        if pending:
            problems.append(f"function calls {sorted(pending)} were never answered")
        return problems

    def _check_reasoned(self, call: dict[str, Any], sent: set[str]) -> list[str]:
        with self._lock:
            reasoning = self.reasoned.get(str(call.get("call_id")))
        if reasoning is None or reasoning in sent:
            return []
        return [f"function_call {call.get('call_id')!r} was sent back without the reasoning"
                f" item {reasoning!r} issued with it"]

    def _check_reasoning(self, item: dict[str, Any], *, store: bool) -> list[str]:
        with self._lock:
            issued = self.issued.get(str(item.get("id")))
        if issued is None:
            return [f"reasoning item {item.get('id')!r} was never issued"]
        if item.get("encrypted_content") != issued and not store:
            return [f"reasoning item {item.get('id')!r} lost its encrypted_content"]
        return []


def _check_tools(tools: Any) -> list[str]:
    problems: list[str] = []
    for tool in tools:
        if tool.get("type") == "web_search":
            continue
        if tool.get("type") != "function" or not _TOOL_NAME.match(str(tool.get("name", ""))):
            problems.append(f"bad tool {tool!r}")
        elif "function" in tool:
            problems.append("a Chat Completions tool shape sent to the Responses API")
        elif not isinstance(tool.get("parameters"), dict):
            problems.append(f"tool {tool.get('name')!r} has no parameters")
    return problems


def request_differences(expected: Any, actual: Any) -> list[str]:
    """How request body `actual` differs from `expected` (empty: the same request).

    Every top-level field is compared; ``input`` item by item, so a lost reasoning item
    is named by its position and id rather than as one long unequal list.
    """
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return [] if expected == actual else ["a body is not a JSON object"]
    found: list[str] = []
    for name in sorted(set(expected) | set(actual)):
        if name == "input":
            continue
        if expected.get(name) != actual.get(name):
            found.append(f"{name}: {expected.get(name)!r} != {actual.get(name)!r}")
    want, got = expected.get("input") or [], actual.get("input") or []
    for n in range(max(len(want), len(got))):
        a = want[n] if n < len(want) else None
        b = got[n] if n < len(got) else None
        if a != b:
            found.append(f"input item {n}: {_describe(a)} != {_describe(b)}")
    return found


def _describe(item: Any) -> str:
    if not isinstance(item, dict):
        return repr(item)
    return f"{item.get('type', 'message')} {item.get('id') or item.get('call_id') or ''}".strip()
