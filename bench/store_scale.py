"""A store that grows for years (issue 40): what `io` commands cost on a store of 1,
20,000 and 200,000 runs, on SQLite (and PostgreSQL with IO_TEST_POSTGRES_URL set).

1. One real run: the quick start (examples/quickstart: four steps, a read, an edit, a
   test run and the answer, its gate passing) run by `io run` into a fresh store.
2. The store grows by copying that run's rows, table by table, in the database
   (``INSERT … SELECT``): each copy is a run of its own, the root of its own tree, in a
   workspace of its own (``/ci/copy-N``, as a CI fleet's jobs each check out afresh),
   with every step, completion, ledger entry, checkpoint and drive of the original.
   The benchmarked workspace keeps its one run.
3. At each size, each command runs as the real CLI (a child process) `--repeat` times,
   the commands alternating; the figure is the median wall time and the largest peak
   RSS (the child's VmHWM). The first `io runs` after the growth is printed apart: the
   bench wrote the file behind io's back, so that open runs `quick_check` (as after an
   unclean close), and it records the clean close that later opens compare with.

Commands: `io runs -w WS`, `io trace RUN -w WS`, `io spend -w WS`, `io spend --by tree
-w WS`, a new one-step `io run --scratch` (a one-line scripted replay), and, with no
target, `io spend --all` (every completion of the store, summed in the database).

Targets: at 20,000 runs each command within 1.3x of the 1-run store, at 200,000 within
2x; peak RSS flat; stored bytes per short run halved (issue 40 measured 16 KB for a
4-step run). `--code DIR` or `--baseline REF` measure another source tree the same way.

Run: python bench/store_scale.py [--sizes 20000,200000] [--repeat 5] [--baseline REF]
         [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from installed import RSS_REPORT  # noqa: E402
from loop_overhead import child_env, export_tree  # noqa: E402

_BOOT = RSS_REPORT + """
import runpy
runpy.run_module("io_harness_cli", run_name="__main__", alter_sys=True)
"""
_BATCH = 2000
MIB = 1024 * 1024


@dataclass
class Figure:
    wall: float
    rss: int


@dataclass
class Scene:
    """Where the bench works: the tree it times, the store and the two workspaces."""

    code: Path
    tmp: Path
    store: str
    quick: Path
    one: Path
    run_id: str = ""

    def env(self) -> dict[str, str]:
        env = child_env(self.tmp / "state.db")
        env["IO_STORE"] = self.store
        env["PYTHONPATH"] = str(self.code)
        env["IO_BENCH_RSS"] = str(self.tmp / "rss.txt")
        return env

    def io(self, argv: Sequence[str], *, check: bool = True) -> tuple[Figure, str]:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _BOOT, *argv], env=self.env(),
                              capture_output=True, text=True, cwd=str(self.code))
        wall = time.perf_counter() - start
        if check and done.returncode != 0:
            raise SystemExit(f"io {' '.join(argv)} failed ({done.returncode}):"
                             f" {done.stderr[-2000:]}")
        rss = int((self.tmp / "rss.txt").read_text()) * 1024
        return Figure(wall, rss), done.stdout


def _scene(code: Path, tmp: Path, store: str) -> Scene:
    quick = tmp / "quickstart"
    shutil.copytree(ROOT / "examples" / "quickstart", quick)
    one = tmp / "one"
    one.mkdir()
    (one / "replay.jsonl").write_text('{"text": "done", "usage": {"prompt_tokens": 9,'
                                      ' "completion_tokens": 1}}\n')
    (one / "io.toml").write_text('[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n')
    return Scene(code, tmp, store, quick, one)


def _first_run(scene: Scene) -> None:
    scene.io(["run", "-w", str(scene.quick), "--json"])
    _, out = scene.io(["runs", "-w", str(scene.quick), "--json"])
    scene.run_id = json.loads(out.splitlines()[0])["run_id"]


def _commands(scene: Scene) -> dict[str, list[str]]:
    ws = str(scene.quick)
    if "--all" not in scene.io(["spend", "--help"])[1]:
        # A tree from before issue 40: its `io spend` summed the whole store.
        return {"io runs -w": ["runs", "-w", ws], "io trace": ["trace", scene.run_id, "-w", ws],
                "io spend (whole store)": ["spend", "-w", ws],
                "io spend --by tree (whole store)": ["spend", "--by", "tree", "-w", ws],
                "new one-step run": ["run", "--scratch", "-w", str(scene.one), "hello"]}
    return {
        "io runs -w": ["runs", "-w", ws],
        "io trace": ["trace", scene.run_id, "-w", ws],
        "io spend": ["spend", "-w", ws],
        "io spend --by tree": ["spend", "--by", "tree", "-w", ws],
        "new one-step run": ["run", "--scratch", "-w", str(scene.one), "hello"],
        "io spend --all": ["spend", "--all"],
    }


def _measure(scene: Scene, repeat: int) -> dict[str, Figure]:
    commands = _commands(scene)
    figures: dict[str, list[Figure]] = {name: [] for name in commands}
    for argv in commands.values():  # warm the page cache and the bytecode
        scene.io(argv)
    for _ in range(repeat):
        for name, argv in commands.items():
            figures[name].append(scene.io(argv)[0])
    return {name: Figure(statistics.median(f.wall for f in runs), max(f.rss for f in runs))
            for name, runs in figures.items()}


# --- growing the store, in the database -------------------------------------------------


Columns = Callable[[Any, str], list[str]]


def _sqlite_columns(conn: Any, table: str) -> list[str]:
    rows = conn.execute(f"PRAGMA table_info({table})").fetchall()
    # An INTEGER PRIMARY KEY is the rowid: the copy gets a new one.
    return [str(r[1]) for r in rows if not (r[5] == 1 and str(r[2]).upper() == "INTEGER")]


def _pg_columns(conn: Any, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT column_name, is_identity FROM information_schema.columns WHERE"
        " table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
        (table,)).fetchall()
    return [str(r[0]) for r in rows if r[0] != "rowid" and r[1] != "YES"]


def _copy_statements(conn: Any, tables: list[str], columns: Columns, mark: str
                     ) -> list[str]:
    out: list[str] = []
    for table in tables:
        names = columns(conn, table)
        if "run_id" not in names:
            continue
        picked = []
        for name in names:
            if name in ("run_id", "root_run_id"):
                picked.append("ids.new_id")
            elif table == "runs" and name == "workspace":
                picked.append("'/ci/' || ids.new_id")
            else:
                picked.append(f"t.{name}")
        # Catalogue names only; the run id is a parameter.
        out.append(f"INSERT INTO {table}({', '.join(names)})"  # noqa: S608
                   f" SELECT {', '.join(picked)} FROM {table} t, ids WHERE t.run_id = {mark}")
    return out


def grow_sqlite(path: Path, run_id: str, have: int, want: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    tables = [str(r[0]) for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    statements = _copy_statements(conn, tables, _sqlite_columns, "?")
    conn.execute("CREATE TEMP TABLE ids (new_id TEXT PRIMARY KEY)")
    for start in range(have, want, _BATCH):
        conn.execute("BEGIN")
        conn.execute("DELETE FROM ids")
        conn.executemany("INSERT INTO ids VALUES (?)",
                         [(f"copy-{i:07d}",) for i in range(start, min(want, start + _BATCH))])
        for sql in statements:
            conn.execute(sql, (run_id,))
        conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def grow_postgres(url: str, run_id: str, have: int, want: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [str(r[0]) for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema ="
            " current_schema() AND table_type = 'BASE TABLE'").fetchall()]
        statements = _copy_statements(conn, tables, _pg_columns, "%s")
        conn.execute("CREATE TEMP TABLE ids (new_id TEXT PRIMARY KEY)")
        for start in range(have, want, _BATCH):
            with conn.transaction():
                conn.execute("DELETE FROM ids")
                with conn.cursor() as cur:
                    cur.executemany("INSERT INTO ids VALUES (%s)", [
                        (f"copy-{i:07d}",) for i in range(start, min(want, start + _BATCH))])
                for sql in statements:
                    conn.execute(sql, (run_id,))
        conn.execute("ANALYZE")


def _bytes(scene: Scene) -> int | None:
    if scene.store.startswith("postgresql"):
        return None
    path = Path(scene.store)
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal"))
               if p.exists())


# --- one backend, every size --------------------------------------------------------------


def bench(scene: Scene, sizes: list[int], repeat: int, label: str) -> None:
    grow = (grow_sqlite if not scene.store.startswith("postgresql") else grow_postgres)
    _first_run(scene)
    results: dict[int, dict[str, Figure]] = {1: _measure(scene, repeat)}
    sizes_bytes: dict[int, int | None] = {1: _bytes(scene)}
    firsts: dict[int, Figure] = {}
    have = 1
    for size in sizes:
        start = time.perf_counter()
        target: Any = Path(scene.store) if grow is grow_sqlite else scene.store
        grow(target, scene.run_id, have, size)
        print(f"  [{label}] grew to {size:,} runs in {time.perf_counter() - start:.0f} s",
              flush=True)
        have = size
        firsts[size] = scene.io(["runs", "-w", str(scene.quick)])[0]
        sizes_bytes[size] = _bytes(scene)
        results[size] = _measure(scene, repeat)
    _print(label, results, firsts, sizes_bytes)


def _print(label: str, results: dict[int, dict[str, Figure]], firsts: dict[int, Figure],
           sizes_bytes: dict[int, int | None]) -> None:
    sizes = sorted(results)
    print(f"\n{label}: median wall / peak RSS (ratio to the 1-run store)")
    print("| command | " + " | ".join(f"{s:,} run{'s' if s > 1 else ''}" for s in sizes)
          + " |")
    print("|---" * (len(sizes) + 1) + "|")
    for name in results[1]:
        base = results[1][name]
        cells = [f"{base.wall:.3f} s, {base.rss / MIB:.0f} MiB"]
        for size in sizes[1:]:
            fig = results[size][name]
            cells.append(f"{fig.wall:.3f} s ({fig.wall / base.wall:.2f}x),"
                         f" {fig.rss / MIB:.0f} MiB")
        print(f"| {name} | " + " | ".join(cells) + " |")
    for size, fig in sorted(firsts.items()):
        print(f"first io runs after growing to {size:,} (quick_check: the bench wrote the"
              f" file): {fig.wall:.3f} s, {fig.rss / MIB:.0f} MiB")
    known = {s: b for s, b in sizes_bytes.items() if b is not None}
    if len(known) > 1:
        top = max(known)
        per_run = (known[top] - known[1]) / (top - 1)
        print(f"stored bytes per run (file + log, {top:,} runs vs 1): {per_run:,.0f}")


def _schema_url(base: str) -> tuple[str, str]:
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:8]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    return schema, f"{base}{sep}options=-csearch_path%3D{schema}"


def _drop(base: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,200000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--code", type=Path, default=ROOT, help="the source tree to time")
    parser.add_argument("--baseline", help="time the source of this commit instead")
    parser.add_argument("--postgres", default=os.environ.get("IO_TEST_POSTGRES_URL"))
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="io-store-scale-") as name:
        tmp = Path(name)
        code = args.code
        label = "this tree" if code == ROOT else str(code)
        if args.baseline:
            commit, code = export_tree(args.baseline, tmp)
            label = f"commit {commit}"
        print(f"store scale: {label}, sizes {sizes}, {args.repeat} runs per command,"
              f" {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
        if not args.skip_sqlite:
            (tmp / "sqlite").mkdir()
            bench(_scene(code, tmp / "sqlite", str(tmp / "sqlite" / "state.db")), sizes,
                  args.repeat, f"SQLite ({label})")
        if args.postgres:
            schema, url = _schema_url(args.postgres)
            try:
                (tmp / "pg").mkdir()
                bench(_scene(code, tmp / "pg", url), sizes, args.repeat,
                      f"PostgreSQL ({label})")
            finally:
                _drop(args.postgres, schema)
        else:
            print("\nPostgreSQL: skipped (set IO_TEST_POSTGRES_URL or --postgres URL)")


if __name__ == "__main__":
    main()
