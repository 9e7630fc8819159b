"""Each policy test compiles its patterns afresh.

The pattern compilers keep an `lru_cache`; a test must not pass because an earlier
test (in the same process) left a compiled pattern behind. Mutation testing forks every
mutant from a process that already ran the suite once, so without this a mutant of a
compiler would be tested against the cached, unmutated result.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness_core.policy import _patterns


@pytest.fixture(autouse=True)
def _fresh_pattern_caches() -> Iterator[None]:
    for cached in (_patterns.compile_path, _patterns.compile_command, _patterns.compile_host,
                   _patterns._net_pattern):
        cached.cache_clear()
    yield
