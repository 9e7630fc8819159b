"""`--output-schema` resolves references inside the schema only (issue 34): io fetches
nothing. A schema whose ``$ref`` names another document is refused when it is loaded,
and a validator never retrieves one, checked against a real HTTP server on 127.0.0.1
that counts the requests it gets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness_core import UsageError, check_answer_schema
from harness_core.run._answer import check_answer
from tests.conftest import run_io
from tests.integration.cli.helpers import make_workspace, replay_line

_REMOTE_SCHEMA = json.dumps({"type": "string"}).encode()


class _Server(ThreadingHTTPServer):
    requests: list[str]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(_REMOTE_SCHEMA)))
        self.end_headers()
        self.wfile.write(_REMOTE_SCHEMA)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.requests = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _remote(server: _Server) -> dict[str, Any]:
    url = f"http://127.0.0.1:{server.server_address[1]}/item.json"
    return {"type": "object", "properties": {"n": {"$ref": url}}}


def test_a_remote_ref_is_refused_at_load_and_nothing_is_fetched(server: _Server) -> None:
    with pytest.raises(UsageError, match="names another document"):
        check_answer_schema(_remote(server))
    assert server.requests == []


@pytest.mark.parametrize("ref", ["item.json", "./item.json#/x", "file:///etc/passwd",
                                 "urn:example:item", "//127.0.0.1/x"])
def test_any_reference_outside_the_schema_is_refused(ref: str) -> None:
    schema = {"type": "object", "properties": {"n": {"$ref": ref}}}
    with pytest.raises(UsageError, match="names another document"):
        check_answer_schema(schema)


def test_a_dynamic_ref_outside_the_schema_is_refused() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "items": {"$dynamicRef": "https://example.invalid/s#node"}}
    with pytest.raises(UsageError, match=r"\$dynamicRef"):
        check_answer_schema(schema)


def test_a_local_ref_to_nothing_is_refused() -> None:
    schema = {"$defs": {"item": {"type": "string"}},
              "properties": {"n": {"$ref": "#/$defs/missing"}}}
    with pytest.raises(UsageError, match="names nothing in the schema"):
        check_answer_schema(schema)


def test_local_refs_resolve_and_judge_the_answer() -> None:
    schema = {"$defs": {"item": {"type": "integer"}, "list": {
        "type": "array", "items": {"$ref": "#/$defs/item"}}},
              "type": "object", "required": ["n"],
              "properties": {"n": {"$ref": "#/$defs/list"}, "self": {"$ref": "#"}}}
    assert check_answer_schema(schema) is schema
    assert check_answer('{"n": [1, 2]}', schema).problem is None
    problem = check_answer('{"n": [1, "two"]}', schema).problem
    assert problem is not None and "not of type 'integer'" in problem


def test_a_ref_key_inside_data_is_not_a_reference() -> None:
    schema = {"const": {"$ref": "https://example.invalid/x"},
              "enum": [{"$ref": "elsewhere.json"}]}
    assert check_answer_schema(schema) is schema


def test_a_ref_under_a_nested_id_resolves_against_that_resource() -> None:
    schema = {"$id": "https://example.invalid/root.json", "properties": {
        "n": {"$id": "https://example.invalid/inner.json", "$defs": {"x": {"type": "string"}},
              "$ref": "#/$defs/x"}}}
    assert check_answer_schema(schema) is schema
    assert check_answer('{"n": "s"}', schema).problem is None


def test_a_stored_schema_with_a_remote_ref_is_never_fetched(server: _Server) -> None:
    # A schema recorded before the load refused such references reaches the validator
    # unchecked: the reference is reported, and the server is never asked.
    problem = check_answer('{"n": 1}', _remote(server)).problem
    assert problem is not None and "does not resolve" in problem
    assert server.requests == []


def test_io_run_refuses_a_remote_ref_with_exit_2(tmp_path: Path, server: _Server) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line('{"n": 1}')])
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(_remote(server)))
    result = run_io(["run", "count", "-w", str(ws), "--output-schema", str(schema)])
    assert result.returncode == 2, result.stderr
    assert "names another document" in result.stderr and "Traceback" not in result.stderr
    assert server.requests == []
