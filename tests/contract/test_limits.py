"""docs/CONTRACT.md, "Limits that hold today" and the numbers other sections state: each
number the page gives is the number the code uses (the behaviour at each limit is
tested where the feature is; these pin the values those tests take from the code), and
the pins the page names hold in pyproject.toml."""

from __future__ import annotations

import re
import tomllib

from harness_core import Budget, ContextBudget
from harness_core.documents._image import MAX_IMAGE_BYTES, MAX_IMAGE_EDGE
from harness_core.documents._pdf import PDF_READ_SECONDS
from harness_core.documents._pdf_worker import _MEMORY_BYTES
from harness_core.messages import Message, Role
from harness_core.run._context import estimate_tokens
from harness_core.run._inputs import _MAX_BINDS
from harness_core.store import QUICK_CHECK_SECONDS
from harness_core.tools import GitSettings
from harness_core.tools._files import MAX_READ_BYTES
from tests.conftest import REPO

CONTRACT = (REPO / "docs" / "CONTRACT.md").read_text()


def test_the_budget_defaults_are_the_pages() -> None:
    budget = Budget()
    assert "`max_steps = 50` and `wall_seconds = 1800`" in CONTRACT
    assert (budget.max_steps, budget.wall_seconds) == (50, 1800)
    assert budget.max_tokens is None and budget.max_cost_usd is None
    assert "`cache_read_weight`, default 0.1" in CONTRACT
    assert budget.cache_read_weight == 0.1


def test_context_tokens_are_estimated_at_four_characters_a_token() -> None:
    small = estimate_tokens(Message(role=Role.USER, content="x" * 400))
    large = estimate_tokens(Message(role=Role.USER, content="x" * 4400))
    assert large - small == 1000  # 4,000 more characters are 1,000 more tokens
    assert ContextBudget(None).max_tokens is None  # no ceiling unless one is set


def test_the_read_file_limit_is_64_mib() -> None:
    assert "a file over 64 MiB for\n`read_file`" in CONTRACT
    assert MAX_READ_BYTES == 64 * 1024 * 1024


def test_view_image_limits_are_1568_px_and_3_75_mb() -> None:
    assert "1568 px and 3.75 MB" in CONTRACT
    assert (MAX_IMAGE_EDGE, MAX_IMAGE_BYTES) == (1568, 3_750_000)


def test_pdf_extraction_has_a_60_s_deadline_and_a_2_gib_cap() -> None:
    assert "60 s deadline and\n  a 2 GiB address-space cap" in CONTRACT
    assert PDF_READ_SECONDS == 60.0 and _MEMORY_BYTES == 2 * 1024**3


def test_at_most_256_gate_input_paths_are_bound() -> None:
    assert "at most 256 paths are\nbound" in CONTRACT
    assert _MAX_BINDS == 256


def test_git_commit_searches_200_commits_by_default() -> None:
    assert "`[git] history_depth` (200)" in CONTRACT
    assert GitSettings().history_depth == 200


def test_the_quick_check_budget_is_half_a_second() -> None:
    assert "`PRAGMA quick_check` once per file per process within 0.5 s" in CONTRACT
    assert QUICK_CHECK_SECONDS == 0.5


def test_typer_is_held_below_0_29() -> None:
    assert "typer is held below 0.29" in CONTRACT
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    typer = [d for d in project["dependencies"] if re.match(r"typer\b", d)]
    assert len(typer) == 1 and "<0.29" in typer[0]


def test_the_start_up_figures_are_the_bench_readme_s() -> None:
    """The page quotes measured figures; they must be the ones bench/README.md records
    (its latest pass: io installed as the README installs it, on two interpreters)."""
    stated = re.search(r"one-step `io run` against a loopback\s+OpenAI-compatible server takes "
                       r"(\d+)-(\d+) ms wall \(target 0\.25 s: met\); `io --help` takes\s+"
                       r"([\d.]+)-([\d.]+)x", CONTRACT)
    assert stated is not None
    rss = re.search(r"peak RSS of a 20-step run is\s+([\d.]+) MiB", CONTRACT)
    gaps = re.search(r"is ([\d.]+) / ([\d.]+) ms at 20 / 100 steps unsandboxed[^)]*\) and "
                     r"([\d.]+) / ([\d.]+) ms with\s+the native sandbox", CONTRACT)
    assert rss is not None and gaps is not None
    bench = (REPO / "bench" / "README.md").read_text().split(
        "### Third pass: io as the README installs it", 1)[1].split("\n## ", 1)[0]
    wall = re.search(r"\| one-step `io run`, wall \| (\d+) ms \(best \d+\) \| (\d+) ms", bench)
    assert wall is not None
    assert sorted(wall.groups(), key=int) == [stated.group(1), stated.group(2)]
    helps = re.search(r"\| `io --help` / `python3 -c pass` \(the console script\) \| "
                      r"([\d.]+)x \| ([\d.]+)x", bench)
    assert helps is not None
    assert sorted(helps.groups(), key=float) == [stated.group(3), stated.group(4)]
    assert f"| peak RSS, 20-step run | {rss.group(1)} MiB" in bench
    assert (f"| per-step gap, 20 / 100 steps, unsandboxed | {gaps.group(1)} / {gaps.group(2)}"
            " ms") in bench
    assert (f"| per-step gap, 20 / 100 steps, native sandbox | {gaps.group(3)} /"
            f" {gaps.group(4)} ms") in bench


def test_the_shell_planning_figures_are_the_bench_readme_s() -> None:
    stated = re.search(r"plans and checks at ([\d,–]+)\s+lines/s; a line never seen before "
                       r"at ([\d,–]+) lines/s", CONTRACT)
    assert stated is not None
    bench = (REPO / "bench" / "README.md").read_text()
    assert f"| plan + check, warm | {stated.group(1)} lines/s" in bench
    assert f"| plan + check, cold | {stated.group(2)} lines/s" in bench


def test_mutation_testing_covers_the_targets_the_page_names() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_mutation", REPO / "bench" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    targets: dict[str, list[tuple[list[str], list[str]]]] = module.TARGETS
    assert set(targets) == {"run", "store", "policy", "sandbox", "workspace"}
    mutated: dict[str, list[str]] = {}
    for name, groups in targets.items():
        for sources, tests in groups:
            assert all((REPO / path).exists() for path in [*sources, *tests]), (sources, tests)
            mutated.setdefault(name, []).extend(sources)
    assert any("_progress.py" in s for s in mutated["run"])  # the stall detector
    assert any("_context.py" in s for s in mutated["run"])   # the context budget
    assert any("_loop.py" in s for s in mutated["run"])      # stops, resume, replay
    for part in ("_check", "_codec", "_steps", "_checkpoints", "_runs", "_store", "_records",
                 "_sessions", "_questions"):
        assert any(f"store/{part}.py" in s for s in mutated["store"]), part
    assert any("_held_files.py" in s for s in mutated["store"])
    assert any("sandbox/_placeholders.py" in s for s in mutated["sandbox"])
    bench = (REPO / "bench" / "README.md").read_text()
    for name in targets:
        assert re.search(rf"^\| {name} \| .+\| \d+ \| \d+ \| \d+ \|", bench, re.MULTILINE), name
