"""Persistence: the store behind every run (SQLite, or PostgreSQL for a fleet), and its
checkpoint format."""

from harness_core.store._postgres import is_postgres_url, redact_url
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
    "is_postgres_url",
    "redact_url",
]
