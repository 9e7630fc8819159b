"""Sweep what dead `io` processes left running, and record it in the store.

Called by every CLI command that opens the store (see `harness_core.sandbox._ledger`
for what is found and what is never touched).
"""

from __future__ import annotations

from harness_core.sandbox import Swept, sweep
from harness_core.store import Store

__all__ = ["store_key", "sweep_leftovers"]


def store_key(store: Store) -> str:
    """How a ledger names a store: the resolved file, or the (redacted) server location."""
    if store.backend == "sqlite":
        return str(store.path.resolve())
    return store.location


def sweep_leftovers(store: Store) -> list[Swept]:
    """Kill the leftovers of dead `io` processes of this store; record each against its runs.

    Leftovers of an `io` that drove no run (`io tool`) are swept by any store.

    Returns:
        What was killed, per dead `io` process.
    """

    def record(swept: Swept) -> None:
        for run_id in swept.runs or ("",):
            store.record_sweep(run_id, swept.owner_pid, swept.killed)

    return sweep(store=store_key(store), record=record)
