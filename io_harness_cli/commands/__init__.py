"""One module per `io` command; each imports `harness_core` inside its function."""
