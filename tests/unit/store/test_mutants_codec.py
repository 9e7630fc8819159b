"""What the store's JSON payloads hold, byte for byte, and that every field of a message
comes back from the store as it went in (mutation testing's survivors in
`store/_codec.py`). docs/CONTRACT.md ("The store") promises the payload form: compact
JSON, UTF-8 text as is, ASCII escapes only for a payload holding a lone surrogate."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from harness_core import Message, Role, Store, ToolCall, ToolResult
from harness_core.messages import Media
from harness_core.store._codec import dumps, loads, message_from_json, message_to_json


def _store(path: Path, **extra: Any) -> Store:
    store = Store(path)
    fields: dict[str, Any] = {"goal": "g", "workspace": "/w", "model": "m", "settings": {},
                              "policy": {}, "sandbox": None,
                              "messages": [Message.system("s"), Message.user("g")]}
    fields.update(extra)
    store.create_run("r1", **fields)
    return store


def _column(path: Path, sql: str) -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def test_payloads_are_compact_json_with_utf8_text_kept_as_is() -> None:
    assert dumps({"a": [1, 2], "b": {"c": None}}) == '{"a":[1,2],"b":{"c":null}}'
    assert dumps({"name": "café ☕"}) == '{"name":"café ☕"}'
    assert dumps("x") == '"x"'


def test_a_payload_with_a_lone_surrogate_falls_back_to_compact_ascii_escapes() -> None:
    text = dumps({"name": "caf\udce9", "other": "é", "list": [1, 2]})
    assert text == '{"name":"caf\\udce9","other":"\\u00e9","list":[1,2]}'
    assert loads(text) == {"name": "caf\udce9", "other": "é", "list": [1, 2]}


def test_values_json_cannot_hold_are_stored_as_their_text() -> None:
    assert dumps({"path": Path("/w/a.txt")}) == '{"path":"/w/a.txt"}'
    assert dumps({"path": Path("/w/caf\udce9")}) == '{"path":"/w/caf\\udce9"}'


def test_loads_of_nothing_is_none() -> None:
    assert loads(None) is None
    assert loads("[]") == []


def test_the_store_writes_exactly_those_bytes(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.db", settings={"goal": "café", "n": [1, 2]},
                   policy={"rules": {"at": Path("/w")}})
    store.record_intent("r1", 0, 0, ToolCall("c1", "list_dir", {"path": "caf\udce9"}))
    store.close()
    # Documents are kept once, by reference (#40): the bytes are the document's.
    assert _column(tmp_path / "s.db", "SELECT d.body FROM runs r JOIN documents d"
                                      " ON d.hash = r.settings") == ['{"goal":"café","n":[1,2]}']
    assert _column(tmp_path / "s.db", "SELECT d.body FROM runs r JOIN documents d"
                                      " ON d.hash = r.policy") == ['{"rules":{"at":"/w"}}']
    assert _column(tmp_path / "s.db", "SELECT arguments FROM ledger") == [
        '{"path":"caf\\udce9"}']
    with Store(tmp_path / "s.db") as again:
        assert again.run("r1").settings == {"goal": "café", "n": [1, 2]}
        assert again.ledger("r1")[0].arguments == {"path": "caf\udce9"}


def test_a_message_keeps_only_the_keys_it_uses() -> None:
    assert message_to_json(Message.user("hi")) == {"role": "user", "content": "hi"}
    call = ToolCall("c1", "read_file", {"path": "a"})
    assert message_to_json(Message.assistant("", (call,))) == {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a"}}]}
    assert message_to_json(Message.tool(ToolResult("c1", "read_file", "boom", True))) == {
        "role": "tool", "content": "boom", "tool_call_id": "c1", "name": "read_file",
        "is_error": True}
    assert message_to_json(Message.tool(ToolResult("c1", "read_file", "ok"))) == {
        "role": "tool", "content": "ok", "tool_call_id": "c1", "name": "read_file"}


def test_a_message_with_an_image_keeps_its_hash_and_path_never_its_bytes() -> None:
    image = Media("image/png", data=b"\x89PNG...", path="shot.png", source_sha256="ab" * 32,
                  width=4, height=3)
    message = Message.tool(ToolResult("c9", "view_image", "an image", media=(image,)))
    out = message_to_json(message)
    assert out["media"] == [{"media_type": "image/png", "path": "shot.png",
                             "source_sha256": "ab" * 32, "width": 4, "height": 3, "bytes": 7}]
    back = message_from_json(out)
    assert back.media == (Media("image/png", path="shot.png", source_sha256="ab" * 32,
                                width=4, height=3),)
    assert (back.role, back.content, back.tool_call_id, back.name, back.is_error) == (
        Role.TOOL, "an image", "c9", "view_image", False)


def test_a_message_read_back_fills_what_was_left_out() -> None:
    bare = message_from_json({"role": "user"})
    assert (bare.role, bare.content, bare.tool_calls, bare.tool_call_id, bare.name,
            bare.is_error, bare.media) == (Role.USER, "", (), None, None, False, ())
    odd = message_from_json({"role": "tool", "content": 7, "is_error": 1,
                             "media": ["not an object", {"media_type": "image/gif"}]})
    assert (odd.content, odd.is_error, odd.media) == ("7", True, (Media("image/gif"),))


def test_every_kind_of_message_comes_back_from_the_store_equal(tmp_path: Path) -> None:
    call = ToolCall("c1", "read_file", {"path": "a"})
    messages = [Message.system("sys"), Message.user("do it"),
                Message.assistant("thinking", (call,)),
                Message.tool(ToolResult("c1", "read_file", "failed", True)),
                Message.tool(ToolResult("c2", "list_dir", "fine"))]
    store = _store(tmp_path / "s.db", messages=messages[:2])
    store.append_messages("r1", 0, messages[2:])
    assert store.messages("r1") == messages
    store.close()
