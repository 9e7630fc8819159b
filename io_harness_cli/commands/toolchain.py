"""`io toolchain`: what the workspace's markers say about how to build, test and lint it."""

from __future__ import annotations

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt


def toolchain(workspace: WorkspaceOpt = None, config: ConfigOpt = None,
              json_out: JsonOpt = False) -> None:
    """Print the detected toolchains (root and nested), why, and what the run will use."""
    from harness_core import Workspace, survey_toolchain
    from io_harness_cli.commands._load import load_config, workspace_path
    from io_harness_cli.output import write_json

    root = workspace_path(workspace)
    cfg = load_config(root, config)
    report = survey_toolchain(Workspace(root), cfg.toolchain)
    if json_out:
        write_json(report.to_json())
        return
    import sys

    out = sys.stdout.write
    eff = report.effective
    if not report.detected and not report.overridden:
        out("no toolchain detected (no marker file found); set [toolchain] in io.toml\n")
        return
    out(f"toolchain: {eff.ecosystem or 'unknown'}"
        + (f" ({eff.package_manager})" if eff.package_manager else "") + "\n")
    for label, value in (("test", eff.test), ("build", eff.build), ("lint", eff.lint)):
        origin = " [toolchain]" if label in report.overridden else ""
        out(f"  {label:<6}{value or '-'}{origin}\n")
    if eff.reason:
        out(f"  why   {eff.reason}\n")
    if report.detected:
        out("detected:\n")
        for found in report.detected:
            tc = found.toolchain
            where = found.directory or "."
            out(f"  {where:<24}{tc.ecosystem or '?':<8}{tc.package_manager or '-':<9}"
                f"{tc.marker}: {tc.reason}\n")
