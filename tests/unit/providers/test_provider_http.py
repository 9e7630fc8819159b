"""The shared HTTP pieces: retry-after, backoff, redaction, SSE framing."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness_core.providers._redact import Redactor
from harness_core.providers._retry import (
    RetryPolicy,
    backoff_delay,
    is_retryable_status,
    parse_retry_after,
)
from harness_core.providers._sse import SSEEvent, iter_sse
from harness_core.providers._wire import tool_arguments

NOW = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": " 2.5 "}, 2.5),
        ({"retry-after": "Thu, 01 Jan 2026 00:00:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 31 Dec 2025 23:00:00 GMT"}, 0.0),  # a date in the past: no wait
        ({"retry-after": "soon"}, None),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({}, None),
    ],
)
def test_retry_after_reads_seconds_dates_and_milliseconds(
    headers: dict[str, str], expected: float | None
) -> None:
    assert parse_retry_after(headers, NOW) == expected


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (429, True),
        (500, True),
        (503, True),
        (529, True),
        (400, False),
        (401, False),
        (404, False),
        (408, False),
    ],
)
def test_which_statuses_are_retried(status: int, retryable: bool) -> None:
    assert is_retryable_status(status) is retryable


def test_backoff_doubles_caps_and_jitters() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    assert [backoff_delay(n, policy, lambda: 1.0, None) for n in range(5)] == [
        1.0,
        2.0,
        4.0,
        5.0,
        5.0,
    ]
    assert [backoff_delay(n, policy, lambda: 0.0, None) for n in range(3)] == [0.5, 1.0, 2.0]
    assert (
        backoff_delay(0, policy, lambda: 0.0, 12.0) == 12.0
    )  # the vendor's wait is honoured as is


KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


@pytest.mark.parametrize(
    "text",
    [
        f"bad key {KEY}",
        f"key starts {KEY[:12]}…",
        f"echoed {KEY[:20]}****",
        f"basic {base64.b64encode(KEY.encode()).decode()}",
        f"urlsafe {base64.urlsafe_b64encode(KEY.encode()).decode().rstrip('=')}",
        f"twice {KEY} and {KEY[:14]}",
    ],
)
def test_redactor_removes_the_key_its_prefix_and_base64(text: str) -> None:
    redacted = Redactor(KEY)(text)
    assert KEY[:12] not in redacted
    assert base64.b64encode(KEY.encode()).decode().rstrip("=") not in redacted
    assert "[REDACTED]" in redacted


def test_redactor_removes_an_echoed_prefix_as_far_as_it_goes() -> None:
    assert Redactor(KEY)(f"got {KEY[:20]}****") == "got [REDACTED]****"


def test_redactor_leaves_other_text_alone() -> None:
    assert Redactor(KEY)("rate limited, try later") == "rate limited, try later"
    assert Redactor("")("anything") == "anything"
    assert "sk-ant" not in repr(Redactor(KEY))


# Keys are drawn from the characters vendors use; the brackets of the marker cannot occur.
KEY_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"


@given(
    st.text(alphabet=KEY_ALPHABET, min_size=16, max_size=60),
    st.text(max_size=30),
    st.text(max_size=30),
)
def test_redacted_text_never_contains_the_key_or_its_head(
    key: str, before: str, after: str
) -> None:
    out = Redactor(key)(before + key + after + key[:12] + before)
    assert key not in out and key[:12] not in out


def test_sse_framing_follows_the_event_stream_rules() -> None:
    lines = [
        ": comment",
        "event: message_start",
        'data: {"a": 1}',
        "",
        "data: line one",
        "data:line two",
        "id: 7",
        "retry: 100",
        "",
        "",
        "event: dangling",
        "data: never terminated",
    ]
    assert list(iter_sse(lines)) == [
        SSEEvent("message_start", '{"a": 1}'),
        SSEEvent("message", "line one\nline two"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', ({"a": 1}, None)),
        ("", ({}, None)),
        ("   ", ({}, None)),
        ('{"a": ', ({}, '{"a": ')),
        ("[1, 2]", ({}, "[1, 2]")),
        ("null", ({}, "null")),
    ],
)
def test_tool_arguments_keep_what_is_not_an_object_as_raw_text(
    text: str, expected: tuple[object, object]
) -> None:
    assert tool_arguments(text) == expected
