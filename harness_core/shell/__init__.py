"""The `shell` mechanism (being written)."""
