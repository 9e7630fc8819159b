"""docs/CONTRACT.md, "Providers and numbers": a child run of a tree gets an HTTP provider
of its own over the parent's client (real providers against a loopback vendor fake)."""

from __future__ import annotations

from harness_core.providers import ProviderConfig, build_provider
from tests.fakes.vendor_server import Turn, start_vendor_server
from tests.unit.providers.conftest import ManualClock, request


def test_a_child_provider_is_its_own_over_the_parents_client() -> None:
    with start_vendor_server("openai") as fake:
        config = ProviderConfig(kind="openai", model="m", base_url=fake.base_url)
        parent = build_provider(config, env={"OPENAI_API_KEY": "k"}, clock=ManualClock())
        child = parent.for_child(0, 0)
        try:
            assert child is not parent and type(child) is type(parent)
            assert child.client is parent.client  # one client (and pool) per run
            fake.push(Turn(text="from child"))
            assert child.complete(request(), step=0).text == "from child"
            child.close()  # closing the child leaves the run's client open
            assert not parent.client.is_closed
            fake.push(Turn(text="from parent"))
            assert parent.complete(request(), step=0).text == "from parent"
        finally:
            parent.close()
        assert [r.headers["authorization"] for r in fake.requests] == ["Bearer k"] * 2
