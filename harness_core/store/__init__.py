"""Persistence: the store behind every run (SQLite, or PostgreSQL for a fleet), and its
checkpoint format."""

from harness_core.store._batches import BatchRecord, BatchTaskRecord
from harness_core.store._check import QUICK_CHECK_SECONDS, StoreReport
from harness_core.store._compactions import CompactionRecord
from harness_core.store._migrate import CopyReport, copy_store
from harness_core.store._operator import OPERATOR_KINDS, OperatorInputRecord
from harness_core.store._postgres import is_postgres_url, redact_url
from harness_core.store._records import (
    AttemptRecord,
    CheckpointRecord,
    CheckpointState,
    DriveRecord,
    EditRecord,
    InputsFate,
    LedgerEntry,
    Pause,
    PolicyEventRecord,
    RunRecord,
    RunStatus,
    StepRecord,
    VerificationRecord,
)
from harness_core.store._schema import CHECKPOINT_FORMAT
from harness_core.store._snapshots import SnapshotRecord
from harness_core.store._spend import SpendRow, SpendSums
from harness_core.store._store import AliveCheck, Store, check_store

__all__ = [
    "BatchRecord",
    "BatchTaskRecord",
    "CHECKPOINT_FORMAT",
    "AliveCheck",
    "AttemptRecord",
    "CheckpointRecord",
    "CheckpointState",
    "CompactionRecord",
    "CopyReport",
    "DriveRecord",
    "EditRecord",
    "InputsFate",
    "LedgerEntry",
    "OPERATOR_KINDS",
    "OperatorInputRecord",
    "Pause",
    "PolicyEventRecord",
    "RunRecord",
    "RunStatus",
    "SnapshotRecord",
    "SpendRow",
    "SpendSums",
    "StepRecord",
    "QUICK_CHECK_SECONDS",
    "Store",
    "StoreReport",
    "VerificationRecord",
    "check_store",
    "copy_store",
    "is_postgres_url",
    "redact_url",
]
