"""The one way an Office file's bytes reach openpyxl, python-docx or python-pptx.

A password-protected .xlsx/.docx/.pptx is not a zip: Office wraps the encrypted package
in an OLE compound file. Such a file is reported as password-protected (never "not a
zip file"), and opened with msoffcrypto-tool when the caller gives its `password`. What
comes out, like any other Office file, passes the zip guard before a library sees it.
"""

from __future__ import annotations

import io
from typing import Any

from harness_core.documents._zipguard import guard_zip
from harness_core.errors import DocumentEncrypted, InvalidToolArguments
from harness_core.tools import DocumentLimits, ToolContext

__all__ = ["OLE_MAGIC", "context_limits", "encrypt", "office_bytes", "opt_password"]

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""The first eight bytes of an OLE compound file (encrypted OOXML, legacy .doc/.xls/.ppt)."""

_LEGACY = {"docx": ".doc", "xlsx": ".xls", "pptx": ".ppt"}


def context_limits(ctx: ToolContext) -> DocumentLimits:
    """The run's `[documents]` limits, or the defaults outside a configured run."""
    return ctx.services.documents or DocumentLimits()


def opt_password(args: dict[str, Any], tool: str) -> str | None:
    value = args.get("password")
    if value is not None and not isinstance(value, str):
        raise InvalidToolArguments(f"{tool}: argument 'password' must be a string")
    return value


def _decrypt(data: bytes, kind: str, password: str | None, what: str) -> bytes:
    try:
        import msoffcrypto
        from msoffcrypto.exceptions import FileFormatError, InvalidKeyError
    except ImportError:
        raise DocumentEncrypted(
            f"{what} is password-protected (an encrypted {kind}); opening it needs"
            " msoffcrypto-tool", hint=f"pip install 'io-harness[{kind}]'") from None
    try:
        office = msoffcrypto.OfficeFile(io.BytesIO(data))
        encrypted = office.is_encrypted()
    except (FileFormatError, OSError, ValueError, KeyError):
        encrypted = False
    if not encrypted:
        raise _legacy(kind, what)
    if password is None:
        raise DocumentEncrypted(f"{what} is password-protected; pass its `password` to"
                                " open it")
    out = io.BytesIO()
    try:
        office.load_key(password=password)
        office.decrypt(out)
    except InvalidKeyError:
        raise DocumentEncrypted(f"{what} is password-protected and the `password` given is"
                                " wrong") from None
    return out.getvalue()


def _legacy(kind: str, what: str) -> DocumentEncrypted:
    return DocumentEncrypted(
        f"{what} is an OLE compound file, not a {kind}: a legacy {_LEGACY[kind]} file or a"
        f" damaged one; convert it first (soffice --headless --convert-to {kind} FILE)")


def office_bytes(data: bytes, kind: str, limits: DocumentLimits | None, what: str,
                 password: str | None = None) -> bytes:
    """The zip bytes a library may open: decrypted when needed, always zip-guarded.

    Args:
        data: The file as read.
        kind: ``xlsx``, ``docx`` or ``pptx``.
        limits: The zip guard's bounds (None: the defaults).
        what: Names the file in messages (``docx_read: a.docx``).
        password: Opens an encrypted file.

    Raises:
        DocumentEncrypted: Encrypted without the right password, or a legacy OLE file.
        DocumentTooLarge: The (decrypted) zip would unpack past `limits`.
        zipfile.BadZipFile: Not a zip archive.
    """
    if data[:8] == OLE_MAGIC:
        data = _decrypt(data, kind, password, what)
    guard_zip(data, limits, what)
    return data


def encrypt(data: bytes, password: str) -> bytes:
    """`data` (an Office zip) encrypted with `password`, as Office writes it (agile
    encryption in an OLE container): an edit of a protected file stays protected."""
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(data)).encrypt(password, out)
    return out.getvalue()
