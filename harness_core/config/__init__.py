"""io.toml: four scopes, `${env:}`/`${file:}` substitution, one schema declared as
pydantic models, the projection of the merged result onto the library's typed objects,
and the assembly of a run from it.

This is the only place in `harness_core` that deals with the environment, and it
reads it only from the mapping its caller passes (the CLI passes `os.environ`).
Nothing here discovers or loads a configuration on its own: `load` is the caller's
call, made once before a run. Pydantic is imported by `load` (and the schema
functions), never by importing this package.
"""

from harness_core.config._assemble import (
    RunAssembly,
    assemble_run,
    build_run_spec,
    check_runnable,
    secret_redactor,
)
from harness_core.config._config import Config, ContextSettings, RewindSettings, RunSettings
from harness_core.config._load import json_schema, load, schema_keys
from harness_core.config._requirements import McpAllowed, Requirements
from harness_core.config._restore import note_operator_file, rewind_run, undo_run
from harness_core.config._scopes import ConfigFile, Scope, discover
from harness_core.config._show import ShownValue, render
from harness_core.config._toml import STARTER_PROVIDERS, STARTER_SCRIPT, starter_config
from harness_core.run._rewind import Restored

__all__ = [
    "Config",
    "ConfigFile",
    "ContextSettings",
    "McpAllowed",
    "Requirements",
    "Restored",
    "RewindSettings",
    "RunAssembly",
    "RunSettings",
    "Scope",
    "ShownValue",
    "assemble_run",
    "build_run_spec",
    "check_runnable",
    "discover",
    "json_schema",
    "load",
    "note_operator_file",
    "render",
    "rewind_run",
    "schema_keys",
    "secret_redactor",
    "starter_config",
    "undo_run",
    "STARTER_PROVIDERS",
    "STARTER_SCRIPT",
]
