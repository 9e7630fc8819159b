"""`python -m io_harness_cli`."""

from io_harness_cli.main import console

console()
