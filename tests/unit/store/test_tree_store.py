"""The tree columns of `runs` (migration 0008_agent_trees) and `Store.reopen`."""

from __future__ import annotations

import threading
from pathlib import Path

from harness_core import Message, Store
from harness_core.store._tree import TreePlace


def _run(store: Store, run_id: str, place: TreePlace | None = None,
         parent: str | None = None) -> None:
    store.create_run(run_id, goal=run_id, workspace="/w", model="m", settings={}, policy={},
                     sandbox=None, messages=[Message.user(run_id)], parent_run_id=parent,
                     tree=place)


def test_a_child_is_found_by_its_spawning_call_and_its_tree_by_the_root(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _run(store, "root")
        _run(store, "c1", TreePlace("root", 1, 0, 0, "reviewer"), "root")
        _run(store, "c2", TreePlace("root", 1, 0, 1), "root")
        _run(store, "g1", TreePlace("root", 2, 3, 0), "c1")
        _run(store, "other")
        assert store.child_run("root", 0, 1).run_id == "c2"  # type: ignore[union-attr]
        assert store.child_run("root", 1, 0) is None
        assert [r.run_id for r in store.tree_runs("root")] == ["root", "c1", "c2", "g1"]
        assert store.count_children("root") == 2 and store.count_children("c1") == 1
        child = store.run("c1")
        assert (child.depth, child.root_run_id, child.agent) == (1, "root", "reviewer")
        plain = store.run("other")
        assert (plain.depth, plain.root_run_id, plain.agent) == (0, "other", None)


def test_reopen_gives_each_thread_its_own_connection_while_others_write(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _run(store, "root")
        errors: list[BaseException] = []

        def writer(n: int) -> None:
            try:
                with store.reopen() as twin:
                    for i in range(30):
                        _run(twin, f"t{n}-{i}", TreePlace("root", 1, n, i), "root")
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert store.count_children("root") == 120
