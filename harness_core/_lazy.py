"""A module imported on its first use, not at import: what a command never touches costs
it nothing.

    if TYPE_CHECKING:
        import psutil
    else:
        from harness_core._lazy import psutil

`psutil` (about 10 ms and 2.6 MiB) is needed only to signal, list or inspect other
processes; a plain `io run` whose commands all exit never loads it.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

__all__ = ["LazyModule", "psutil"]


class LazyModule(types.ModuleType):
    """Stands for module `name`; the first attribute read imports it and copies its
    namespace in, so later reads cost what a module's own do."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__dict__["_lazy_target"] = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__dict__["_lazy_target"])
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


psutil = LazyModule("psutil")
