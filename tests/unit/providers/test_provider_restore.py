"""`RestoresState` for the Responses API: what a provider hands out as
`CompletionResponse.carry` and takes back with `restore` (a resumed run's provider is a
new object) gives the same requests as one provider that never stopped; state it did not
make is ignored; a fallback chain hands each state back to the provider that made it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from harness_core.errors import ProviderError
from harness_core.messages import Message, ToolResult
from harness_core.providers import (
    CarriedState,
    CompletionResponse,
    Fallback,
    RestoresState,
)
from harness_core.providers._http import HttpProvider
from tests.fakes.responses_wire import encrypted
from tests.fakes.vendor_server import (
    Fail,
    FakeCall,
    FakeVendorServer,
    Turn,
    Vendor,
    start_vendor_server,
)
from tests.unit.providers.conftest import MakeProvider, ManualClock, request

VENDOR: Vendor = "openai-responses"
FIRST = (Message.system("Be brief."), Message.user("List the files."))


@pytest.fixture
def fake() -> Iterator[FakeVendorServer]:
    server = start_vendor_server(VENDOR)
    yield server
    server.close()


def _then(messages: tuple[Message, ...], answer: CompletionResponse) -> tuple[Message, ...]:
    turn = Message.assistant(answer.text, answer.tool_calls)
    results = tuple(Message.tool(ToolResult(c.id, c.name, "out")) for c in answer.tool_calls)
    return (*messages, turn, *results)


def _state(step: int, answer: CompletionResponse, provider: str = VENDOR) -> CarriedState:
    assert answer.carry is not None
    return CarriedState(step, provider, Message.assistant(answer.text, answer.tool_calls),
                        answer.carry)


def _turn(n: int) -> Turn:
    return Turn(text=f"t{n}", tool_calls=(FakeCall(f"call_{n}", "exec", "{}"),),
                reasoning=f"why {n}")


@pytest.mark.parametrize("chained", [False, True])
def test_a_restored_provider_sends_what_the_first_would_have(
    fake: FakeVendorServer, make_provider: MakeProvider, chained: bool
) -> None:
    first = make_provider(VENDOR, fake, previous_response_id=chained)
    again = make_provider(VENDOR, fake, previous_response_id=chained)
    assert isinstance(again, RestoresState)
    fake.push(_turn(1), _turn(2), Turn(text="a"), Turn(text="b"))
    answer = first.complete(replace(request(), messages=FIRST), step=0)
    states = [_state(0, answer)]
    messages = _then(FIRST, answer)
    answer = first.complete(replace(request(), messages=messages), step=1)
    states.append(_state(1, answer))
    messages = _then(messages, answer)
    first.complete(replace(request(), messages=messages), step=2)
    # A new provider (a resumed run), given the recorded states and a rebuilt history.
    again.restore(states)
    rebuilt = tuple(Message(m.role, m.content, m.tool_calls, m.tool_call_id, m.name)
                    for m in messages)
    again.complete(replace(request(), messages=rebuilt), step=2)
    uninterrupted, resumed = fake.requests[2].body, fake.requests[3].body
    assert resumed["input"] == uninterrupted["input"]
    assert resumed.get("previous_response_id") == uninterrupted.get("previous_response_id")
    if chained:
        assert resumed["previous_response_id"] == "resp_0002"
    else:
        sent = [i["encrypted_content"] for i in resumed["input"] if i["type"] == "reasoning"]
        assert sent == [encrypted("why 1"), encrypted("why 2")]
    assert fake.violations == []


def test_a_restored_chain_is_not_taken_up_when_the_history_differs(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    first = make_provider(VENDOR, fake, previous_response_id=True)
    again = make_provider(VENDOR, fake, previous_response_id=True)
    assert isinstance(again, RestoresState)
    fake.push(_turn(1), Turn(text="done"))
    answer = first.complete(replace(request(), messages=FIRST), step=0)
    again.restore([_state(0, answer)])
    other = (Message.system("Be brief."), Message.user("List other files."))
    again.complete(replace(request(), messages=_then(other, answer)), step=1)
    body = fake.requests[1].body
    assert "previous_response_id" not in body  # whole, with the reasoning item
    assert [i["type"] for i in body["input"]] == [
        "message", "message", "reasoning", "message", "function_call", "function_call_output"]
    assert fake.violations == []


def test_state_another_provider_made_is_ignored(
    fake: FakeVendorServer, make_provider: MakeProvider
) -> None:
    first = make_provider(VENDOR, fake)
    again = make_provider(VENDOR, fake)
    fake.push(_turn(1), Turn(text="done"))
    answer = first.complete(replace(request(), messages=FIRST), step=0)
    assert isinstance(again, RestoresState)
    again.restore([_state(0, answer, provider="openai"), replace(_state(0, answer),
                                                                 carry="not json")])
    with pytest.raises(ProviderError, match="HTTP 400"):  # the fake refuses the request
        again.complete(replace(request(), messages=_then(FIRST, answer)), step=1)
    kinds = [i["type"] for i in fake.requests[1].body["input"]]
    assert "reasoning" not in kinds
    assert any("without the reasoning item 'rs_resp_0001'" in v for v in fake.violations)


def test_a_fallback_hands_state_back_to_the_provider_that_made_it(
    make_provider: MakeProvider, clock: ManualClock
) -> None:
    primary_fake, backup_fake = start_vendor_server(VENDOR), start_vendor_server(VENDOR)
    try:
        def chain() -> tuple[Fallback, HttpProvider, HttpProvider]:
            primary = make_provider(VENDOR, primary_fake, max_retries=0)
            backup = make_provider(VENDOR, backup_fake, max_retries=0)
            return Fallback([primary, backup], clock=clock), primary, backup

        served, _, _ = chain()
        primary_fake.push(Fail(400, {"error": {"message": "no"}}))
        backup_fake.push(_turn(1))
        answer = served.complete(replace(request(), messages=FIRST), step=0)
        assert answer.provider == VENDOR and answer.carry is not None
        assert json.loads(answer.carry)["fallback"] == 1
        resumed, primary, backup = chain()
        resumed.restore([_state(0, answer)])
        messages = _then(FIRST, answer)
        primary_fake.push(Turn(text="done"))
        backup_fake.push(Turn(text="done"))
        primary.complete(replace(request(), messages=messages), step=1)
        backup.complete(replace(request(), messages=messages), step=1)
        from_primary = [i["type"] for i in primary_fake.requests[-1].body["input"]]
        from_backup = [i["type"] for i in backup_fake.requests[-1].body["input"]]
        assert "reasoning" not in from_primary  # the primary never had it
        assert from_backup.count("reasoning") == 1
        assert backup_fake.violations == []
    finally:
        primary_fake.close()
        backup_fake.close()
