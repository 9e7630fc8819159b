"""The secret redactor: every form of every secret, across stream chunks, nothing else (#22)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from harness_core.events import Event, EventKind
from harness_core.messages import Message
from harness_core.redaction import REDACTED, RedactingSink, SecretRedactor
from harness_core.store import Store

KEY = "sk-ant-api03-Zx9\"quote\\slash-é-tail"
OTHER = "deploy-token-0123456789"
REDACT = SecretRedactor([KEY, OTHER, "short", ""])


def test_every_form_of_a_secret_is_replaced() -> None:
    raw = KEY.encode()
    for form in (KEY, json.dumps(KEY)[1:-1], json.dumps(KEY, ensure_ascii=False)[1:-1],
                 base64.b64encode(raw).decode().rstrip("="),
                 base64.urlsafe_b64encode(raw).decode().rstrip("=")):
        assert REDACT(f"a {form} b") == f"a {REDACTED} b"
    assert REDACT(json.dumps({"out": f"x{OTHER}y"})) == json.dumps({"out": f"x{REDACTED}y"})


def test_ordinary_text_and_short_values_are_unchanged() -> None:
    text = "short text, no secrets: sk-ant-api03 deploy-token-012345678 é \"q\""
    assert REDACT(text) == text
    assert SecretRedactor([])(text) == text
    assert not SecretRedactor(["tiny"])
    assert "<" in repr(REDACT) and KEY not in repr(REDACT)


def test_json_values_are_redacted_recursively() -> None:
    value = {"a": [OTHER, {"b": f"{KEY}!"}], "n": 3, OTHER: None}
    assert REDACT.value(value) == {"a": [REDACTED, {"b": f"{REDACTED}!"}], "n": 3,
                                   REDACTED: None}


@pytest.mark.parametrize("cut", range(1, len(OTHER)))
def test_a_secret_split_across_two_chunks_is_caught(cut: int) -> None:
    stream = REDACT.stream()
    text = f"before {OTHER} after"
    at = len("before ") + cut
    out = stream.feed(text[:at]) + stream.feed(text[at:]) + stream.flush()
    assert out == f"before {REDACTED} after"


def test_a_secret_split_into_single_characters_is_caught() -> None:
    stream = REDACT.stream()
    out = "".join(stream.feed(c) for c in f"<{KEY}>") + stream.flush()
    assert out == f"<{REDACTED}>"


def test_a_stream_without_secrets_comes_out_unchanged() -> None:
    stream = REDACT.stream()
    chunks = ["deploy-", "tok", "en is not here; sk-", "ant-api03 neither", ""]
    out = "".join(stream.feed(c) for c in chunks) + stream.flush()
    assert out == "".join(chunks)


def test_the_sink_redacts_token_streams_and_flushes_before_the_next_event() -> None:
    seen: list[Event] = []
    sink = RedactingSink(seen.append, REDACT)
    for piece in ("the key: dep", "loy-token-01", "2345", "6789 ok", " deploy-"):
        sink(Event(EventKind.TOKEN, "r1", {"text": piece, "step": 1}))
    sink(Event(EventKind.COMPLETION, "r1", {"step": 1, "text": f"the key: {OTHER} ok"}))
    tokens = "".join(e.data["text"] for e in seen if e.kind is EventKind.TOKEN)
    assert tokens == f"the key: {REDACTED} ok deploy-"
    assert seen[-1].kind is EventKind.COMPLETION
    assert seen[-1].data["text"] == f"the key: {REDACTED} ok"
    assert all(OTHER not in json.dumps(e.to_json()) for e in seen)


def _create(store: Store, run_id: str, goal: str) -> None:
    store.create_run(run_id, goal=goal, workspace="/ws", model="m", settings={"note": goal},
                     policy={}, sandbox=None, messages=[Message.user(goal)])


def test_the_store_redacts_every_write_and_so_does_its_reopened_twin(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with Store(path) as store:
        store.redact_with(REDACT)
        _create(store, "run1", f"use {OTHER} and {KEY}")
        twin = store.reopen()
        try:
            _create(twin, "run2", f"again {OTHER}")
        finally:
            twin.close()
        assert store.run("run1").goal == f"use {REDACTED} and {REDACTED}"
        store.redact_with(None)
        _create(store, "run3", "ordinary goal stays")  # negative control: no redactor
        assert store.run("run3").goal == "ordinary goal stays"
    raw = b"".join(f.read_bytes() for f in tmp_path.glob("state.db*"))
    assert OTHER.encode() not in raw
    assert KEY.encode() not in raw and json.dumps(KEY).encode() not in raw
    assert b"ordinary goal stays" in raw


def test_a_postgresql_store_redacts_its_writes_too(postgres_url: str) -> None:
    with Store(postgres_url) as store:
        store.redact_with(REDACT)
        _create(store, "run1", f"use {OTHER}")
        assert store.run("run1").goal == f"use {REDACTED}"


LONG = "sk-ant-api03-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789" * 2


def test_a_secret_cut_by_an_output_cap_loses_both_pieces() -> None:
    redact = SecretRedactor([LONG])
    capped = f"head {LONG[:30]}\n[… 5 bytes of stdout omitted …]\n{LONG[30:]} tail"
    assert redact(capped) == f"head {REDACTED}\n[… 5 bytes of stdout omitted …]\n{REDACTED} tail"
    in_json = json.dumps({"stdout": capped})
    assert LONG[:30] not in redact(in_json) and LONG[30:] not in redact(in_json)
    assert redact(LONG[:20]) == REDACTED  # a head that ends the text
    assert redact(f'"{LONG[-20:]}') == f'"{REDACTED}'  # a tail that starts a JSON string


def test_short_or_inner_pieces_and_lookalikes_stay() -> None:
    redact = SecretRedactor([LONG])
    for text in (f"{LONG[:11]}\n{LONG[-11:]}", "sk-ant-api0 and sk-ant-ap",
                 f"{LONG[:40]} in the middle of a line"):
        assert redact(text) == text


def test_a_text_without_a_form_or_an_anchor_is_returned_as_it_is_and_others_as_before() -> None:
    """The probe that spares most texts the replacing and cutting decides as they would:
    texts built from pieces of every form, cut at every place, against the full work."""
    from harness_core.redaction import _cut_pieces

    redact = SecretRedactor([LONG, OTHER, KEY])
    forms: tuple[str, ...] = redact._forms
    pattern = redact._pattern
    assert pattern is not None
    texts = ["", "plain", "2026-12-04T18:25:53+00:00", json.dumps({"argv": ["echo", "hi"]})]
    for form in forms:
        for cut in range(0, len(form) + 1, 3):
            for left, right in (("", ""), ("x ", " y"), ('"', "\n"), ("\\n", '"')):
                texts += [f"{left}{form[:cut]}{right}", f"{left}{form[cut:]}{right}",
                          f"{left}{form[:cut]}{right}{form[cut:]}"]
    changed = 0
    for text in texts:
        full = _cut_pieces(pattern.sub(REDACTED, text), forms) if text else text
        assert redact(text) == full, text
        changed += full != text
    assert changed > len(texts) // 3  # the pieces were long enough to be cut
    unchanged = "ordinary output " * 100
    assert redact(unchanged) is unchanged
