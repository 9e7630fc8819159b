"""The `io` command line: parses argv, calls `harness_core`, renders, maps exit codes."""

__version__ = "0.1.0"
