"""The zip guard: an Office file is measured before any document library opens it.

xlsx, docx and pptx files are zip archives, and a zip member can inflate a thousand
times its stored size. The guard reads only the central directory first (member count,
each member's declared sizes and ratio, their sum), then inflates each compressed member
in 64 KiB chunks into a counter, stopping at the first limit passed; memory stays at one
chunk whatever the member claims or holds. Only a file that passes is handed to
openpyxl, python-docx or python-pptx, whose own inflation (Python's `zipfile`, which
stops at the declared size and checks the CRC) is then bounded by what was measured.
"""

from __future__ import annotations

import io
import zipfile

from harness_core.errors import DocumentTooLarge
from harness_core.tools import DocumentLimits

__all__ = ["guard_zip"]

_CHUNK = 64 * 1024
_MIB = 1024 * 1024


def _size(n: float) -> str:
    return f"{n / _MIB:,.1f} MiB" if n >= _MIB else f"{int(n):,} bytes"


def _refuse(what: str, detail: str, key: str) -> DocumentTooLarge:
    return DocumentTooLarge(
        f"{what}: refused before parsing: {detail}; a zip bomb or a file larger than"
        f" [documents] {key} allows",
        hint=f"raise [documents] {key} in io.toml if the file is genuine")


def _check_declared(info: zipfile.ZipInfo, limits: DocumentLimits, what: str) -> None:
    name = info.filename
    if info.file_size > limits.max_member_bytes:
        raise _refuse(what, f"member {name} declares {_size(info.file_size)} unpacked (limit"
                      f" {_size(limits.max_member_bytes)})", "max_member_bytes")
    if info.file_size > limits.ratio_grace_bytes and \
            info.file_size > limits.max_ratio * max(info.compress_size, 1):
        ratio = info.file_size / max(info.compress_size, 1)
        raise _refuse(what, f"member {name} declares a {ratio:,.0f}:1 compression ratio"
                      f" ({_size(info.compress_size)} -> {_size(info.file_size)}; limit"
                      f" {limits.max_ratio:g}:1)", "max_ratio")


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: DocumentLimits,
             before: int, what: str) -> int:
    """Inflate one member into a counter; its actual size, or the first limit passed."""
    name, count = info.filename, 0
    budget = min(limits.max_member_bytes, limits.max_total_bytes - before)
    with archive.open(info) as member:
        while chunk := member.read(_CHUNK):
            count += len(chunk)
            if count > info.file_size:
                raise _refuse(what, f"member {name} inflates past its declared"
                              f" {_size(info.file_size)}", "max_member_bytes")
            if count > budget:
                key = "max_member_bytes" if budget == limits.max_member_bytes \
                    else "max_total_bytes"
                raise _refuse(what, f"member {name} inflates past {_size(budget)}", key)
            if count > limits.ratio_grace_bytes and \
                    count > limits.max_ratio * max(info.compress_size, 1):
                raise _refuse(what, f"member {name} inflates past {limits.max_ratio:g} times"
                              f" its stored {_size(info.compress_size)}", "max_ratio")
    return count


def guard_zip(data: bytes, limits: DocumentLimits | None, what: str) -> None:
    """Refuse `data` (a zip) when it would unpack past `limits`, before anything parses it.

    Args:
        data: The file's bytes.
        limits: The bounds (None: `DocumentLimits()` defaults).
        what: Names the file in the message (``docx_read: report.docx``).

    Raises:
        DocumentTooLarge: A member count, a declared or actual size, or a ratio passes
            its limit.
        zipfile.BadZipFile: `data` is not a zip archive (or a member's CRC is wrong).
    """
    limits = limits or DocumentLimits()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        if len(infos) > limits.max_members:
            raise _refuse(what, f"{len(infos):,} members (limit {limits.max_members:,})",
                          "max_members")
        for info in infos:
            _check_declared(info, limits, what)
        declared = sum(info.file_size for info in infos)
        if declared > limits.max_total_bytes:
            raise _refuse(what, f"its members declare {_size(declared)} unpacked in all"
                          f" (limit {_size(limits.max_total_bytes)})", "max_total_bytes")
        total = 0
        for info in infos:
            if info.compress_type == zipfile.ZIP_STORED or info.is_dir():
                total += info.file_size  # stored: its size is what is read, no inflation
                continue
            total += _inflate(archive, info, limits, total, what)
