"""The host boundary: every process io starts outside the sandbox, and every file it
writes for the operator, goes through this package.

`_process` decides where a host process starts (never in the workspace), which programs
and scripts it may name (none the agent can write or could create), and which search
paths it inherits; `_files` writes reports, the last message and the HTML trace without
following a link the agent could plant. tests/test_architecture.py fails when any other
module starts a process or opens a host file for writing, except the call sites it
lists with their reasons. docs/ARCHITECTURE.md draws the boundary.
"""

from __future__ import annotations

from harness_core.host._files import write_operator_file
from harness_core.host._process import (
    SEARCH_PATH_VARIABLES,
    check_host_command,
    host_dir,
    host_environment,
    host_launcher,
    is_inside,
    missing_files,
    run_helper,
    script_arguments,
    stdio_transport,
)
from harness_core.host._python import safe_python_argv

__all__ = [
    "SEARCH_PATH_VARIABLES",
    "check_host_command",
    "host_dir",
    "host_environment",
    "host_launcher",
    "is_inside",
    "missing_files",
    "run_helper",
    "safe_python_argv",
    "script_arguments",
    "stdio_transport",
    "write_operator_file",
]
