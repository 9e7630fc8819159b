"""One test module per section of docs/CONTRACT.md, for the claims no other test pinned
(docs/contract-tests.md maps every claim to the test that would fail if it stopped
holding)."""
