"""`DocumentLimits`: how far a document tool may inflate a zip-based file before it
refuses it (the `[documents]` table of io.toml)."""

from __future__ import annotations

from harness_core._record import record

__all__ = ["DocumentLimits"]


@record
class DocumentLimits:
    """Bounds on what an Office file (xlsx, docx, pptx: each a zip) may unpack to.

    Checked before any document library opens the file: each member's declared sizes
    first, then its actual size while it is inflated in chunks, so a member whose header
    lies is stopped at the limit, never inflated whole.

    Attributes:
        max_member_bytes: Largest uncompressed size of one member.
        max_total_bytes: Largest uncompressed size of all members together.
        max_ratio: Largest uncompressed/compressed ratio of a member, once it has
            inflated past `ratio_grace_bytes` (small, very regular parts compress well).
        max_members: Most members one file may hold.
        ratio_grace_bytes: Uncompressed bytes a member may reach before its ratio counts.
    """

    max_member_bytes: int = 256 * 1024 * 1024
    max_total_bytes: int = 1024 * 1024 * 1024
    max_ratio: float = 100.0
    max_members: int = 10_000
    ratio_grace_bytes: int = 1024 * 1024
