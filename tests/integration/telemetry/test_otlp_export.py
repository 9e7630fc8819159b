"""OpenTelemetry export of real `io run`s to an in-process OTLP/HTTP receiver on loopback
(decoded with the official proto package): span names, parentage, GenAI attributes,
refusals as span events, and what may never cross the wire (the provider key, header
credentials, file contents unless `include_content`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import run_io
from tests.fakes.otlp_receiver import OtlpReceiver, Span
from tests.fakes.vendor_server import (
    FakeCall,
    FakeVendorServer,
    RecordedRequest,
    Reply,
    Turn,
    tool_results_in,
)
from tests.integration.cli.helpers import make_workspace, replay_line
from tests.integration.providers.conftest import (  # noqa: F401 - fixtures
    CANARY_KEY,
    SERVED,
    Cli,
    cli,
    fakes,
    provider_toml,
    write_workspace,
)

FILE_MARKER = "FILE-CONTENT-7f3a9c"
"""What the agent writes into a file: file contents, never exported by default."""


@pytest.fixture()
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver().start()
    yield r
    r.close()


def _by_name(spans: list[Span]) -> dict[str, list[Span]]:
    out: dict[str, list[Span]] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


def _scripted(root: Path, telemetry: str) -> Path:
    return make_workspace(root, [
        replay_line("look", ("exec", {"argv": ["echo", "hi"]}),
                    ("write_file", {"path": "secrets/k", "content": FILE_MARKER}),
                    ("write_file", {"path": "notes.txt", "content": FILE_MARKER})),
        replay_line("done"),
    ], toml_extra='[policy]\ndeny_write = ["secrets/**"]\nallow_exec = ["echo*"]\n\n'
                  + telemetry, verify="true")


def test_a_run_exports_run_step_model_tool_and_gate_spans_with_parentage(
        tmp_path: Path, receiver: OtlpReceiver) -> None:
    ws = _scripted(tmp_path / "w", f'[telemetry]\notlp_endpoint = "{receiver.url}"\n')
    done = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout.splitlines()[-1])["run_id"]
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    spans = receiver.spans()
    names = _by_name(spans)
    [run] = names["invoke_agent io"]
    steps = names["io.step"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    tools = {s.attributes["gen_ai.tool.name"]: s for s in spans
             if s.name.startswith("execute_tool ")}
    [gate] = names["io.gate"]
    assert len({s.trace_id for s in spans}) == 1
    assert run.parent_id == b"" and run.attributes["io.run.id"] == run_id
    assert run.attributes["io.run.status"] == "finished"
    assert len(steps) == 2 and all(s.parent_id == run.span_id for s in steps)
    assert [s.attributes["io.step.index"] for s in steps] == [0, 1]
    assert len(chats) == 2 and {c.parent_id for c in chats} == {s.span_id for s in steps}
    chat = chats[0]
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.system"] == "scripted"
    assert chat.attributes["gen_ai.request.model"] == chat.attributes["gen_ai.response.model"]
    assert chat.name == f"chat {chat.attributes['gen_ai.request.model']}"
    assert (chat.attributes["gen_ai.usage.input_tokens"],
            chat.attributes["gen_ai.usage.output_tokens"]) == (10, 1)
    assert set(tools) == {"exec", "write_file"}
    exec_span = tools["exec"]
    assert exec_span.parent_id == steps[0].span_id
    assert exec_span.start >= steps[0].start and exec_span.end <= steps[0].end
    assert gate.parent_id == run.span_id and gate.attributes["io.gate.passed"] is True
    assert gate.attributes["io.gate.command"] == "true"
    refused = [s for s in spans if s.name == "execute_tool write_file"
               and s.attributes.get("io.tool.refused")]
    [refusal] = [e for s in refused for e in s.events if e[0] == "io.refusal"]
    assert refusal[1]["io.policy.rule"] == "secrets/**"
    assert refusal[1]["io.policy.layer"] == "project"
    assert refused[0].status_code == 2  # STATUS_CODE_ERROR
    assert receiver.resources()[0]["service.name"] == "io"


def test_file_contents_and_model_text_stay_home_unless_include_content(
        tmp_path: Path, receiver: OtlpReceiver) -> None:
    ws = _scripted(tmp_path / "w", f'[telemetry]\notlp_endpoint = "{receiver.url}"\n')
    assert run_io(["run", "goal", "-w", str(ws)]).returncode == 0
    wire = b"".join(receiver.bodies)
    assert wire and FILE_MARKER.encode() not in wire and b"look" not in wire

    second = OtlpReceiver().start()
    try:
        ws2 = _scripted(tmp_path / "w2", f'[telemetry]\notlp_endpoint = "{second.url}"\n'
                                          "include_content = true\n")
        assert run_io(["run", "goal", "-w", str(ws2)]).returncode == 0
        spans = second.spans()
    finally:
        second.close()
    writes = [s for s in spans if s.name == "execute_tool write_file"]
    assert any(FILE_MARKER in s.attributes.get("gen_ai.tool.call.arguments", "")
               for s in writes)


def test_the_standard_otel_variables_turn_export_on(tmp_path: Path,
                                                    receiver: OtlpReceiver) -> None:
    ws = _scripted(tmp_path / "w", "")
    done = run_io(["run", "goal", "-w", str(ws)],
                  env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                       "OTEL_EXPORTER_OTLP_HEADERS": "x-team-token=tok%3Den-42",
                       "OTEL_SERVICE_NAME": "io-ci"})
    assert done.returncode == 0, done.stderr
    assert {s.name for s in receiver.spans()} >= {"invoke_agent io", "io.step", "io.gate"}
    assert receiver.headers[0]["x-team-token"] == "tok=en-42"
    assert receiver.resources()[0]["service.name"] == "io-ci"
    assert b"tok=en-42" not in b"".join(receiver.bodies)
    off = run_io(["run", "goal", "-w", str(_scripted(tmp_path / "w2", ""))],
                 env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SDK_DISABLED": "true"})
    assert off.returncode == 0
    assert len({s.trace_id for s in receiver.spans()}) == 1  # the second run sent nothing


def test_a_bad_endpoint_is_a_configuration_error(tmp_path: Path) -> None:
    ws = _scripted(tmp_path / "w", '[telemetry]\notlp_endpoint = "localhost:4318"\n')
    done = run_io(["run", "goal", "-w", str(ws)])
    assert done.returncode == 2
    assert "otlp_endpoint must be an http(s) URL" in done.stderr
    grpc = run_io(["run", "goal", "-w", str(_scripted(tmp_path / "w2", ""))],
                  env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
                       "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert grpc.returncode == 2 and "not supported" in grpc.stderr


def _conversation(request: RecordedRequest) -> Reply:
    if tool_results_in(request) == 0:
        return Turn(text=f"my key is {CANARY_KEY}", model=SERVED, pieces=2,
                    tool_calls=(FakeCall("c0", "exec", json.dumps({"argv": ["env"]})),),
                    usage={"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})
    return Turn(text="done", model=SERVED, usage={"prompt_tokens": 20, "completion_tokens": 1,
                                                  "total_tokens": 21})


@pytest.mark.parametrize("include_content", [False, True])
def test_the_provider_key_never_reaches_the_exported_bytes(
        tmp_path: Path, receiver: OtlpReceiver, cli: Cli,  # noqa: F811 - fixture
        fakes: Callable[..., FakeVendorServer], include_content: bool) -> None:  # noqa: F811
    fake = fakes("openai", responder=_conversation)
    telemetry = (f'[telemetry]\notlp_endpoint = "{receiver.url}"\n'
                 f"include_content = {'true' if include_content else 'false'}\n"
                 'headers = { authorization = "Bearer ${env:CANARY_KEY}" }\n')
    ws = write_workspace(tmp_path / "ws", provider_toml("openai", fake), telemetry)
    done = cli("run", "echo the environment", "-w", str(ws))
    assert done.returncode == 0, done.stderr
    spans = receiver.spans()
    [chat] = [s for s in spans if s.name.startswith("chat ")][:1]
    assert chat.attributes["gen_ai.system"] == "openai"
    assert chat.attributes["gen_ai.request.model"] == "model-asked"
    assert chat.attributes["gen_ai.response.model"] == SERVED
    assert chat.attributes["gen_ai.usage.input_tokens"] == 12
    wire = b"".join(receiver.bodies)
    for form in (CANARY_KEY.encode(), CANARY_KEY[:12].encode()):
        assert form not in wire
    assert receiver.headers[0]["authorization"] == f"Bearer {CANARY_KEY}"
    if include_content:
        # The model's text is recorded redacted ([REDACTED], the store's one redactor)
        # before telemetry sees it; telemetry's own mask is *** for what reaches it whole.
        assert any(marker in s.attributes.get("io.completion.text", "")
                   for s in spans for marker in ("my key is ***", "my key is [REDACTED]"))
    assert os.environ.get("CANARY_KEY") is None  # the key lived only in the child's env


def test_a_tree_exports_the_child_run_under_the_parents_spawn_call(
        tmp_path: Path, receiver: OtlpReceiver) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("", ("spawn_agent", {"goal": "sub task"})),
        replay_line("", ("exec", {"argv": ["echo", "child"]})),
        replay_line("child done"),
        replay_line("root done"),
    ], toml_extra='[policy]\nallow_exec = ["echo*"]\n\n'
                  f'[telemetry]\notlp_endpoint = "{receiver.url}"\n')
    done = run_io(["run", "lead", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    spans = receiver.spans()
    runs = {s.attributes["io.run.id"]: s for s in spans if s.name == "invoke_agent io"}
    assert len(runs) == 2
    [child] = [s for s in runs.values() if s.attributes.get("io.run.parent_id")]
    root = runs[child.attributes["io.run.parent_id"]]
    [spawn] = [s for s in spans if s.name == "execute_tool spawn_agent"]
    assert child.parent_id == spawn.span_id and spawn.trace_id == root.trace_id
    assert child.trace_id == root.trace_id and root.parent_id == b""
    [echo] = [s for s in spans if s.name == "execute_tool exec"]
    child_steps = {s.span_id for s in spans if s.name == "io.step" and s.parent_id == child.span_id}
    assert echo.parent_id in child_steps
    assert {r.attributes["io.run.status"] for r in runs.values()} == {"finished"}
