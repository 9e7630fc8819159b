"""Every command of docs/guide/ci.md runs: the workflow's `run:` steps are executed in
order, job by job, with bash, in a workspace whose scripted model pauses for an approval,
the way GitHub Actions would (`${{ ... }}` expressions, `GITHUB_OUTPUT`,
`GITHUB_STEP_SUMMARY`, `needs.*.outputs`). Steps that install io (`pip install`) are
skipped: io is already installed here. `io doctor` runs like every other step."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO
from tests.integration.cli.helpers import make_workspace, replay_line

GUIDE = REPO / "docs" / "guide" / "ci.md"


def _workflow() -> dict[str, Any]:
    block = re.search(r"```yaml\n(.*?)```", GUIDE.read_text(), re.S)
    assert block is not None
    return dict(yaml.safe_load(block.group(1)))


def _expand(text: str, context: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        return context[match.group(1).strip()]
    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def _io_shim(bin_dir: Path) -> None:
    bin_dir.mkdir()
    shim = bin_dir / "io"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m io_harness_cli "$@"\n')
    shim.chmod(0o755)


def _run_job(job: dict[str, Any], ws: Path, env: dict[str, str], context: dict[str, str],
             outputs: Path) -> list[tuple[str, int, str]]:
    ran = []
    for step in job["steps"]:
        script = step.get("run")
        if script is None or script.startswith("pip install"):
            continue
        step_env = dict(env)
        for key, value in (step.get("env") or {}).items():
            step_env[key] = _expand(str(value), context)
        result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", _expand(script, context)],
                                cwd=ws, env=step_env, capture_output=True, text=True,
                                timeout=300)
        ran.append((script, result.returncode, result.stdout + result.stderr))
        assert result.returncode == 0, (script, result.stdout, result.stderr)
    return ran


def test_the_ci_guide_workflow_runs_and_resumes_a_paused_run(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "repo", [
        replay_line("make it", ("exec", {"argv": ["touch", "approved.txt"]})),
        replay_line("done"),
    ], verify="test -f approved.txt")
    bin_dir = tmp_path / "bin"
    _io_shim(bin_dir)
    workflow = _workflow()
    summary = tmp_path / "summary.md"
    context = {"github.workspace": str(ws), "secrets.ANTHROPIC_API_KEY": "",
               "inputs.goal": "make approved.txt"}
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "GITHUB_STEP_SUMMARY": str(summary), "NO_COLOR": "1"}
    for key, value in workflow["env"].items():
        env[key] = _expand(str(value), context)
    outputs: dict[str, dict[str, str]] = {}
    for name, job in workflow["jobs"].items():
        condition = job.get("if")
        if condition is not None:
            needed = re.fullmatch(r"needs\.(\w+)\.outputs\.(\w+) == '(\w+)'", condition)
            assert needed is not None, condition
            if outputs[needed.group(1)].get(needed.group(2)) != needed.group(3):
                continue
        for need in [job["needs"]] if isinstance(job.get("needs"), str) else job.get("needs", []):
            for key, value in outputs[need].items():
                context[f"needs.{need}.outputs.{key}"] = value
        out_file = tmp_path / f"{name}.out"
        out_file.write_text("")
        _run_job(job, ws, {**env, "GITHUB_OUTPUT": str(out_file)}, context, out_file)
        written = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if line)
        outputs[name] = {key: _expand(str(value).replace("steps.agent.outputs.", "step:"),
                                      {f"step:{k}": v for k, v in written.items()})
                         for key, value in (job.get("outputs") or {}).items()}
    assert outputs["run"]["exit"] == "4"  # the run paused for the approval …
    assert "approve" in outputs  # … so the approve job ran,
    assert (ws / "approved.txt").exists()  # approved the act,
    for name in ("events.jsonl", "resumed.jsonl"):  # jq reads every line the jobs wrote
        for line in (ws / name).read_text().splitlines():
            parsed = subprocess.run(["jq", "-e", 'type == "object" and .schema == 1'],
                                    input=line, capture_output=True, text=True, check=False)
            assert parsed.returncode == 0, (name, line, parsed.stderr)
    resumed = json.loads((ws / "resumed.jsonl").read_text().splitlines()[-1])
    assert (resumed["exit_code"], resumed["verified"]) == (0, True)  # and the gate passed
    assert (ws / "io-gates.xml").read_text().count("<testcase") == 1
    assert (ws / "answer.txt").exists()
    assert summary.read_text().count("io run `") == 2  # the pause and the resume


def test_the_guide_s_answer_path_runs_the_resume_command_run_finished_names(
        tmp_path: Path) -> None:
    """"To answer a question instead … resume with `--answer "…"`: the `resume` field of
    `run_finished` holds the command the run waits for." The run job's step pauses on a
    question; the command from `resume`, with the answer put in, finishes the run."""
    ws = make_workspace(tmp_path / "repo", [
        replay_line("asking", ("ask_question", {"question": "which file?"})),
        replay_line("made it", ("write_file", {"path": "approved.txt", "content": "x"})),
        replay_line("done"),
    ], verify="test -f approved.txt")
    guide = " ".join(GUIDE.read_text().split())
    assert 'resume with `--answer "…"`: the `resume` field of `run_finished`' in guide
    bin_dir = tmp_path / "bin"
    _io_shim(bin_dir)
    workflow = _workflow()
    context = {"github.workspace": str(ws), "secrets.ANTHROPIC_API_KEY": "",
               "inputs.goal": "make approved.txt"}
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1",
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    for key, value in workflow["env"].items():
        env[key] = _expand(str(value), context)
    out_file = tmp_path / "run.out"
    out_file.write_text("")
    _run_job(workflow["jobs"]["run"], ws, {**env, "GITHUB_OUTPUT": str(out_file)}, context,
             out_file)
    assert "exit=4" in out_file.read_text()
    paused = json.loads((ws / "events.jsonl").read_text().splitlines()[-1])
    assert paused["pause"]["kind"] == "question"
    command = str(paused["resume"]).replace("…", "approved.txt, please")
    resumed = subprocess.run(["bash", "-e", "-c", command + " --json"], cwd=ws, env=env,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["verified"] is True
