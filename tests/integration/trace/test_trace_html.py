"""`io trace RUN --html` opened in headless Chromium: what a person sees (the step count, a
refusal's rule, filters that hide rows, search), that hostile model text stays text, and
that the page makes no request besides its own file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_io
from tests.integration.trace.support import HOSTILE, browser, require_browser, rich_run


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    require_browser()
    root = tmp_path_factory.mktemp("trace")
    with pytest.MonkeyPatch.context() as mp:  # the per-test isolation is not up yet here
        for name, value in {"HOME": root, "XDG_CONFIG_HOME": root / "config",
                            "XDG_STATE_HOME": root / "state",
                            "IO_SYSTEM_CONFIG": root / "system.toml",
                            "IO_STORE": root / "state.db"}.items():
            mp.setenv(name, str(value))
        ws, run_id = rich_run(root / "w")
        out = root / "page.html"
        written = run_io(["trace", run_id[:6], "-w", str(ws), "--html", "-o", str(out)])
    assert written.returncode == 0, written.stderr
    assert f"wrote {out}" in written.stderr
    return out, run_id


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from browser(tmp_path_factory.mktemp("chromium"))


@pytest.fixture()
def opened(page_file: tuple[Path, str], context: Any) -> Iterator[tuple[Any, list[str]]]:
    path, _ = page_file
    requests: list[str] = []

    def record(route: Any) -> None:
        requests.append(route.request.url)
        if route.request.url == path.as_uri():
            route.continue_()
        else:
            route.abort()

    page = context.new_page()
    page.route("**/*", record)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    yield page, requests
    page.close()


def test_the_page_shows_the_step_count_and_each_step(opened: tuple[Any, list[str]]) -> None:
    page, _ = opened
    assert page.locator(".step-count").inner_text() == "4 steps"
    assert page.locator("li.step").count() == 4
    assert page.locator("li.step").nth(2).locator(".step-head").inner_text().startswith("step 2")


def test_a_refusal_shows_its_rule_and_layer(opened: tuple[Any, list[str]]) -> None:
    page, _ = opened
    refusal = page.locator(".ev.refusal")
    assert refusal.count() == 1
    assert refusal.locator("code.rule").inner_text() == "secrets/**"
    assert "layer project" in refusal.inner_text()
    assert refusal.is_visible()


def test_refusals_only_hides_every_other_row(opened: tuple[Any, list[str]]) -> None:
    page, _ = opened
    echo = page.locator(".ev.call", has_text='"echo"')
    assert echo.is_visible()
    before = page.locator("#shown").inner_text()
    page.locator("#f-refusals").check()
    assert not echo.is_visible()
    assert page.locator(".ev.refusal").is_visible()
    assert page.locator("li.step").nth(0).is_hidden()  # no refusal in step 0
    assert page.locator("#shown").inner_text() != before
    page.locator("#f-refusals").uncheck()
    assert echo.is_visible()


def test_one_tool_and_errors_only_filter_rows(opened: tuple[Any, list[str]]) -> None:
    page, _ = opened
    page.locator("#f-tool").select_option("edit_file")
    visible = [c for c in page.locator(".ev.call").all() if c.is_visible()]
    assert [c.locator(".name").inner_text() for c in visible] == ["edit_file"]
    page.locator("#f-tool").select_option("")
    page.locator("#f-errors").check()
    names = [c.locator(".name").inner_text() for c in page.locator(".ev.call").all()
             if c.is_visible()]
    assert names == ["write_file", "exec"]  # the refused write and `false`
    page.locator("#f-errors").uncheck()


def test_search_narrows_rows_without_a_server(opened: tuple[Any, list[str]]) -> None:
    page, _ = opened
    page.locator("#q").fill("secrets/x")
    visible = [r for r in page.locator(".ev:not(.step-head)").all() if r.is_visible()]
    assert visible and all("secrets/x" in r.text_content() for r in visible)
    assert not page.locator(".ev.call", has_text='"echo"').is_visible()
    page.locator("#q").fill("")


def test_hostile_model_text_is_shown_as_text_and_never_runs(
        opened: tuple[Any, list[str]]) -> None:
    page, requests = opened
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("pre.says").first.inner_text() == HOSTILE
    assert page.locator("main img").count() == 0
    assert page.locator("main script").count() == 0
    assert "look <b>around</b>" in page.locator(".ev.plan").first.inner_text()


def test_no_request_leaves_the_page(opened: tuple[Any, list[str]],
                                    page_file: tuple[Path, str]) -> None:
    page, requests = opened
    toggle = page.locator(".ev.call", has_text='"echo"').locator(".toggle").first
    body = toggle.locator("xpath=following-sibling::pre[1]")
    assert body.is_hidden()
    toggle.click()
    assert body.is_visible() and '"argv"' in body.inner_text()
    toggle.click()
    assert body.is_hidden()
    assert requests == [page_file[0].as_uri()]


def test_plan_gates_cost_and_changes_are_on_the_page(opened: tuple[Any, list[str]]) -> None:
    page, _ = opened
    body = page.locator("main").inner_text()
    assert "revision 2" in body  # the plan as it changed
    assert "gate true: passed" in body
    assert "as of 2026-11-01" in body and "4 calls have no price" in body
    page.locator("summary", has_text="a.txt").click()
    diff = page.locator("pre.diff").last.inner_text()
    assert "-two" in diff and "+three" in diff


def test_html_options_that_do_not_fit_are_usage_errors(tmp_path: Path) -> None:
    from tests.integration.cli.helpers import make_workspace, replay_line

    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    assert run_io(["run", "goal", "-w", str(ws)]).returncode == 0
    run_id = json.loads(run_io(["runs", "-w", str(ws), "--json"]).stdout.splitlines()[0])["run_id"]
    for args, message in ((["-o", "x.html"], "--output is for --html"),
                          (["--html", "--json"], "cannot be combined"),
                          (["--html", "--plan"], "cannot be combined")):
        done = run_io(["trace", run_id, "-w", str(ws), *args])
        assert done.returncode == 2 and message in done.stderr, done.stderr
    missing = run_io(["trace", "nosuchrun", "-w", str(ws), "--html"])
    assert missing.returncode == 2 and not list(tmp_path.glob("**/io-trace-*.html"))
    page = run_io(["trace", run_id, "-w", str(ws), "--html", "-o", "-"])
    assert page.returncode == 0 and page.stdout.startswith("<!doctype html>")
    assert page.stdout.rstrip().endswith("</html>")


def test_the_page_of_a_root_holds_its_whole_tree(tmp_path: Path) -> None:
    from tests.integration.cli.helpers import make_workspace, replay_line

    ws = make_workspace(tmp_path / "w", [
        replay_line("", ("spawn_agent", {"goal": "sub <task>"})),
        replay_line("child done"),
        replay_line("root done"),
    ])
    done = run_io(["run", "lead", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    root = json.loads(done.stdout.splitlines()[-1])["run_id"]
    page = run_io(["trace", root, "-w", str(ws), "--html", "-o", "-"]).stdout
    assert page.count('<section class="run"') == 2
    assert '<nav class="tree"' in page and "sub &lt;task&gt;" in page
    sections = page.split('<section class="run"')[1:]
    assert f'id="run-{root}" data-depth="0"' in sections[0]
    assert 'data-depth="1"' in sections[1] and f'href="#run-{root}"' in sections[1]
    child = sections[1].split('id="run-', 1)[1].split('"', 1)[0]
    assert f'child run <a href="#run-{child}">' in sections[0]  # the spawn call links to it
