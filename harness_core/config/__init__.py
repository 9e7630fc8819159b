"""io.toml: four scopes, `${env:}`/`${file:}` substitution, a strict schema, and the
projection of the merged result onto the library's typed objects.

This is the only place in `harness_core` that deals with the environment, and it
reads it only from the mapping its caller passes (the CLI passes `os.environ`).
Nothing here discovers or loads a configuration on its own: `load` is the caller's
call, made once before a run.
"""

from harness_core.config._load import load
from harness_core.config._project import Config, RunSettings
from harness_core.config._schema import schema_keys
from harness_core.config._scopes import ConfigFile, Scope, discover
from harness_core.config._show import ShownValue, render

__all__ = [
    "Config",
    "ConfigFile",
    "RunSettings",
    "Scope",
    "ShownValue",
    "discover",
    "load",
    "render",
    "schema_keys",
]
