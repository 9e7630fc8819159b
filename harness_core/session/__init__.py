"""Sessions: conversations whose turns are runs, in an append-only tree."""
