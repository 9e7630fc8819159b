"""Persistence: the SQLite store behind every run, and its checkpoint format."""

from harness_core.store._records import (
    CheckpointRecord,
    LedgerEntry,
    PolicyEventRecord,
    RunRecord,
    RunStatus,
    StepRecord,
    VerificationRecord,
)
from harness_core.store._schema import CHECKPOINT_FORMAT
from harness_core.store._store import AliveCheck, Store

__all__ = [
    "CHECKPOINT_FORMAT",
    "AliveCheck",
    "CheckpointRecord",
    "LedgerEntry",
    "PolicyEventRecord",
    "RunRecord",
    "RunStatus",
    "StepRecord",
    "Store",
    "VerificationRecord",
]
