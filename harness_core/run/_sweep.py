"""Sweep what dead `io` processes left running, and record it in the store.

Called by every CLI command that opens the store (see `harness_core.sandbox._ledger`
for what is found and what is never touched).
"""

from __future__ import annotations

from harness_core.sandbox import Swept, sweep
from harness_core.store import Store

__all__ = ["sweep_leftovers"]


def sweep_leftovers(store: Store) -> list[Swept]:
    """Kill the leftovers of dead `io` processes; record each against its runs.

    Returns:
        What was killed, per dead `io` process.
    """

    def record(swept: Swept) -> None:
        for run_id in swept.runs or ("",):
            store.record_sweep(run_id, swept.owner_pid, swept.killed)

    return sweep(record=record)
