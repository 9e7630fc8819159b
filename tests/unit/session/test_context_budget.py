"""The context budget through the real loop: what the model sees stays under the ceiling
by eliding the oldest observations with a marker; the newest stay whole; the store keeps
everything."""

from __future__ import annotations

from pathlib import Path

from harness_core import Role, Runner, RunStatus, Store
from harness_core.run._context import estimate_tokens
from tests.unit.session.support import RecordingProvider, spec_for


def test_oldest_observations_are_elided_newest_kept_and_the_store_keeps_all(tmp_path: Path
                                                                            ) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(8):
        (ws / f"f{i}.txt").write_text(f"file {i} " + "x" * 2000)
    lines: list[tuple[str, list[tuple[str, dict[str, object]]]]] = [
        (f"read {i}", [("read_file", {"path": f"f{i}.txt"})]) for i in range(8)]
    lines.append(("done", []))
    provider = RecordingProvider(lines)
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider).start(
            spec_for(ws, "read them all", context_max_tokens=2500))
        assert outcome.status is RunStatus.FINISHED
        stored = [m for m in store.messages(outcome.run_id) if m.role is Role.TOOL]

    last = provider.requests[-1].messages
    seen = [m for m in last if m.role is Role.TOOL]
    assert len(seen) == 8
    elided = [m for m in seen if "elided to fit the context budget" in m.content]
    whole = [m for m in seen if m.content.startswith("file ")]
    assert elided and whole and len(elided) + len(whole) == 8
    # the elided ones are the oldest; the newest observation is always whole
    assert seen.index(elided[-1]) < seen.index(whole[0])
    assert seen[-1].content.startswith("file 7 ")
    assert "call the tool again" in elided[0].content and "read_file" in elided[0].content
    assert sum(estimate_tokens(m) for m in last) <= 2500
    # the store is intact: every observation whole, none elided
    assert len(stored) == 8 and all(m.content.startswith("file ") for m in stored)


def test_no_ceiling_means_nothing_is_elided(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in "abc":
        (ws / f"{name}.txt").write_text("y" * 5000)
    provider = RecordingProvider([("r", [("read_file", {"path": f"{name}.txt"})])
                                  for name in "abc"] + [("done", [])])
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider).start(spec_for(ws, "read"))
    assert outcome.status is RunStatus.FINISHED
    assert not any("elided" in m.content for m in provider.requests[-1].messages)
