"""Tool names: prefixed, sanitised, at most 64 characters, unique within a session."""

from __future__ import annotations

import re

from harness_core.mcp import MAX_TOOL_NAME, McpCallResult, McpToolInfo, tool_name
from harness_core.tools import RESERVED_TOOL_NAMES


def test_a_name_is_the_prefix_the_server_and_the_tool() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"


def test_no_mcp_tool_can_take_a_builtin_name_whatever_the_server_calls_it() -> None:
    for builtin in RESERVED_TOOL_NAMES:
        assert tool_name("srv", builtin) not in RESERVED_TOOL_NAMES
    assert not any(name.startswith("mcp__") for name in RESERVED_TOOL_NAMES)


def test_characters_outside_the_allowed_set_become_underscores() -> None:
    assert tool_name("my server", "files/read.v2") == "mcp__my_server__files_read_v2"


def test_a_long_name_is_cut_to_64_with_a_stable_hash() -> None:
    name = tool_name("a-very-long-server-name", "and_an_even_longer_tool_name_" * 3)
    assert len(name) == MAX_TOOL_NAME
    assert re.fullmatch(r"[A-Za-z0-9_-]+", name)
    assert name == tool_name("a-very-long-server-name", "and_an_even_longer_tool_name_" * 3)
    assert name != tool_name("a-very-long-server-name", "and_an_even_longer_tool_name_" * 4)


def test_two_tools_that_sanitise_alike_get_distinct_names() -> None:
    first = tool_name("s", "a.b")
    second = tool_name("s", "a_b", taken={first})
    assert first == "mcp__s__a_b" and second != first and second.startswith("mcp__s__a_b_")


def test_a_listing_entry_without_a_schema_gets_an_empty_object_schema() -> None:
    info = McpToolInfo.from_json({"name": "ping"})
    assert info == McpToolInfo("ping", "", {"type": "object", "properties": {}})
    assert McpToolInfo.from_json({"description": "no name"}) is None


def test_a_result_with_only_structured_content_shows_it_as_json() -> None:
    result = McpCallResult.from_json({"content": [], "structuredContent": {"a": 1}})
    assert result.text == '{"a": 1}' and not result.is_error
    assert McpCallResult.from_json({"content": []}).text == "(no output)"
    assert McpCallResult.from_json({"content": [], "isError": True}).is_error


def test_resource_blocks_are_summarised() -> None:
    result = McpCallResult.from_json({"content": [
        {"type": "resource_link", "uri": "file:///x", "name": "x"},
        {"type": "resource", "resource": {"uri": "file:///y", "text": "hello"}},
        {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        {"type": "future_kind"},
    ]})
    assert result.text.splitlines() == [
        "[resource link: x <file:///x>]", "[resource file:///y]", "hello",
        "[audio content: audio/wav, about 3 bytes]", "[future_kind content not shown]",
    ]
