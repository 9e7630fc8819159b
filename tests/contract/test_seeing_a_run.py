"""docs/CONTRACT.md, "Seeing a run": an observation is cut at 4,000 characters on the
HTML page with its full length stated, while the store keeps all of it; the page's
Content Security Policy is `default-src 'none'` with its one script allowed by hash
(real run, real store, real `io trace --html`)."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from harness_core import Store
from harness_core.trace import OUTPUT_LIMIT
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def test_the_page_cuts_an_observation_at_4000_characters_and_states_its_length(
        tmp_path: Path, isolated_env: Path) -> None:
    assert OUTPUT_LIMIT == 4000
    body = "".join(f"{i:05d}\n" for i in range(1500))  # 9,000 characters, each line unique
    ws = make_workspace(tmp_path / "w", [replay_line("read", ("read_file", {"path": "big.txt"})),
                                         replay_line("done")], files={"big.txt": body})
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    run_id = str(json_lines(result.stdout)[-1]["run_id"])
    with Store(isolated_env / "state" / "io" / "state.db") as store:
        kept = store.ledger(run_id)[0].observation or ""
    assert "01499" in kept and len(kept) >= 9000  # the store keeps all
    page = tmp_path / "page.html"
    written = run_io(["trace", run_id, "-w", str(ws), "--html", "-o", str(page)])
    assert written.returncode == 0, written.stderr
    html = page.read_text()
    assert f"output (4,000 characters, cut from {len(kept):,})" in html
    assert "00600" in html and "01499" not in html  # line 600 starts past 3,600; 1,499 past 4,000


def test_the_page_s_policy_forbids_every_request_and_allows_only_its_own_script(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    run_id = str(json_lines(result.stdout)[-1]["run_id"])
    page = tmp_path / "page.html"
    assert run_io(["trace", run_id, "-w", str(ws), "--html", "-o", str(page)]).returncode == 0
    html = page.read_text()
    found = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    assert found is not None
    csp = {d.split()[0]: d.split()[1:] for d in
           (part.strip() for part in found.group(1).replace("&#x27;", "'").split(";")) if d}
    assert csp["default-src"] == ["'none'"]
    scripts = re.findall(r"<script>(.*?)</script>", html, re.DOTALL)
    assert len(scripts) == 1 and "<script src" not in html
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert csp["script-src"] == [f"'sha256-{digest}'"]  # the one inline script, by hash
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # nothing to fetch
