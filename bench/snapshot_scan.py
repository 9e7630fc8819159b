"""The rewind snapshot's workspace scan: what one step's `before`/`after` scan costs.

Builds a workspace of `--files` small files in folders of 40 (with a `.gitignore`
ignoring `*.log` at the top and a few ignored files), then times `Scanner.scan` with
`trust_stat=True` (a step's scan: every file stat'ed, none read again) and with
`trust_stat=False` (undo/rewind's check: every file read and hashed). Prints the median
and best of `--repeat` runs in ms. `--against DIR` runs the same measurement with
`DIR` first on the import path (e.g. a `git archive` of another commit), side by side.

    python bench/snapshot_scan.py --files 2000 --repeat 9 --against /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _workspace(root: Path, files: int) -> None:
    (root / ".gitignore").write_text("*.log\n")
    for i in range(files):
        folder = root / f"d{i // 40:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.txt").write_text(f"line {i}\n" * 20)
        if i % 100 == 0:
            (folder / f"x{i:05d}.log").write_text("ignored\n")


def _measure(files: int, repeat: int) -> dict[str, list[float]]:
    from harness_core.run import _snapshots

    scanner_type = getattr(_snapshots, "Scanner", None)
    if scanner_type is None:
        from harness_core.run._scanner import Scanner as scanner_type  # type: ignore[no-redef]
    out: dict[str, list[float]] = {"step": [], "check": []}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        _workspace(ws, files)
        scanner = scanner_type(ws, Path(tmp) / "blobs")
        scanner.scan()  # the baseline: every blob written once
        for _ in range(repeat):
            started = time.perf_counter()
            scanner.scan()
            out["step"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            scanner_type(ws).scan(trust_stat=False)
            out["check"].append((time.perf_counter() - started) * 1000)
    return out


def _line(label: str, figures: dict[str, list[float]]) -> str:
    return "  ".join(f"{kind} median {statistics.median(v):7.2f} ms (best {min(v):7.2f})"
                     for kind, v in figures.items()) + f"  [{label}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--against", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    figures = _measure(args.files, args.repeat)
    if args.json:
        print(json.dumps(figures))
        return
    print(f"snapshot scan, {args.files} files, {args.repeat} runs")
    print(_line("this tree", figures))
    if args.against is not None:
        env = dict(os.environ, PYTHONPATH=str(args.against))
        other = subprocess.run([sys.executable, __file__, "--files", str(args.files),
                                "--repeat", str(args.repeat), "--json"], env=env,
                               capture_output=True, text=True, check=True)
        print(_line(str(args.against), json.loads(other.stdout)))


if __name__ == "__main__":
    main()
