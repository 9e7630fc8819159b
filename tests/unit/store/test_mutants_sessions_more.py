"""Sessions and questions, what mutation testing left (`store/_sessions.py`,
`store/_questions.py`): their timestamps are UTC with the offset written, and a run id
that is itself the prefix of another turn's finds its own turn, not neither."""

from __future__ import annotations

from pathlib import Path

from harness_core import Store
from tests.unit.store.test_mutants_sessions import _turn


def test_sessions_and_questions_are_stamped_in_utc(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        made = store.create_session("sess", workspace="/w")
        assert made.created_at.endswith("+00:00")
        store.record_question("r1", 0, 0, "c0", "which?")
        (asked,) = store.questions("r1")
        assert asked.asked_at.endswith("+00:00")


def test_a_run_id_that_prefixes_another_finds_its_own_turn(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.create_session("sess", workspace="/w")
        _turn(store, "sess", "abc")
        _turn(store, "sess", "abcd", parent="abc")
        own = store.find_turn("sess", "abc")
        assert own is not None and (own.run_id, own.number) == ("abc", 1)
        longer = store.find_turn("sess", "abcd")
        assert longer is not None and (longer.run_id, longer.number) == ("abcd", 2)
        assert store.find_turn("sess", "ab") is None  # two turns start so: neither
