"""Sessions: conversations whose turns are runs, in an append-only tree."""

from harness_core.session._history import HISTORY_SHARE, branch_history
from harness_core.session._operator import Queued, interrupt_run, steer_run
from harness_core.session._session import Session, SessionTree
from harness_core.store._sessions import SessionRecord, TurnRecord

__all__ = [
    "HISTORY_SHARE",
    "Queued",
    "Session",
    "SessionRecord",
    "SessionTree",
    "TurnRecord",
    "branch_history",
    "interrupt_run",
    "steer_run",
]
