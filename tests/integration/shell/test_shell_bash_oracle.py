"""Bash is the oracle: admitted lines run by `shell` and by real `bash -c` must agree.

Lines are generated from safe programs with quoted arguments, pipes, ``; && ||``,
redirects and ``cd`` into an existing directory. Each line runs in its own copy of
the same directory, once through the `shell` tool and once through bash; stdout, exit
status and every file must be identical. stderr is compared line by line as a multiset:
two stages of one pipeline writing to stderr at once interleave in no defined order,
in bash as here. Programs that cannot be found are kept out of the vocabulary (bash
words that error itself), as are arguments on which a bash builtin and the coreutils
binary of the same name disagree (``--help``, non-numeric ``%d``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harness_core.tools._shell_tools import Shell
from tests.unit.shell.support import ENV, context

BASH = shutil.which("bash") or "/bin/bash"
_BARE = re.compile(r"[A-Za-z0-9_./,:=+@%^-]+")
_EXPANDS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789{([@*#?-$!")

FILES = {
    "a.txt": "apple\nbanana\napple\ncherry\n",
    "b.txt": "zeta\nalpha\n\nbeta 2\nalpha\n",
    "sub/c.txt": "one two\nthree\n",
}
INPUTS = {False: ["a.txt", "b.txt", "sub/c.txt"], True: ["c.txt", "../a.txt"]}
OUTPUTS = {False: ["out1.txt", "out2.txt", "a.txt", "sub/o.txt"], True: ["o.txt", "../out1.txt"]}

words = st.text(
    alphabet=st.sampled_from(list("abcxyz AZ019._,:$*?'\"\\#~&|;<>()")), min_size=1, max_size=8
).filter(lambda w: not w.startswith("-") and w.strip() != "")


def _single(word: str) -> str | None:
    return None if "'" in word else f"'{word}'"


def _double(word: str, minimal: bool) -> str:
    out = []
    for index, char in enumerate(word):
        nxt = word[index + 1] if index + 1 < len(word) else ""
        if char in '"\\`' or (char == "$" and (not minimal or nxt in _EXPANDS)):
            out.append("\\" + char)
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _escaped(word: str) -> str:
    return "".join(c if _BARE.fullmatch(c) else "\\" + c for c in word)


@st.composite
def quoted(draw: st.DrawFn, word_strategy: st.SearchStrategy[str] = words) -> str:
    word = draw(word_strategy)
    style = draw(st.sampled_from(["bare", "single", "double", "minimal", "escaped"]))
    if style == "bare" and _BARE.fullmatch(word):
        return word
    if style == "single" and _single(word) is not None:
        return _single(word) or ""
    if style == "escaped":
        return _escaped(word)
    return _double(word, minimal=style == "minimal")


letters = st.text(alphabet="abcelnpt", min_size=1, max_size=3)


@st.composite
def command(draw: st.DrawFn, *, first: bool, in_sub: bool) -> list[str]:
    """A first stage may be any program. A later stage reads all its input: one that stops
    early (head) or never reads (echo) lets the stage before it die of SIGPIPE at a moment
    that varies from run to run, in bash as here."""
    kind = draw(st.sampled_from([
        "echo", "printf", "cat", "head", "tail", "wc", "sort", "uniq", "tr", "true", "false",
        "test", "grep", "sed",
    ] if first else ["cat", "tail", "wc", "sort", "uniq", "tr", "grep", "sed"]))
    files = st.sampled_from([*INPUTS[in_sub], "missing.txt"])
    if kind == "echo":
        return ["echo", *draw(st.lists(quoted(), max_size=3))]
    if kind == "printf":
        fmt = draw(st.sampled_from(["'%s\\n'", "'[%s]'", "'%s-%s\\n'", '"%d\\n"', "'x\\ty\\n'"]))
        if "%" not in fmt:  # coreutils warns about ignored arguments, bash's builtin does not
            return ["printf", fmt]
        args = (draw(st.lists(st.sampled_from(["1", "42", "007"]), max_size=2)) if "%d" in fmt
                else draw(st.lists(quoted(), max_size=3)))
        return ["printf", fmt, *args]
    if kind == "cat":
        return ["cat", *draw(st.lists(files, max_size=2))] if first else ["cat"]
    if kind in ("head", "tail"):
        # `tail -n 0` exits without reading its input, so as a later stage it lets the
        # stage before it die of SIGPIPE at a varying moment (seen flaky under load).
        return [kind, "-n", str(draw(st.integers(0 if first else 1, 3))),
                *([draw(files)] if first and draw(st.booleans()) else [])]
    if kind == "wc":
        return ["wc", draw(st.sampled_from(["-l", "-c", "-w"]))]
    if kind == "sort":
        return ["sort", *draw(st.sampled_from([[], ["-r"], ["-u"]]))]
    if kind == "uniq":
        return ["uniq", *draw(st.sampled_from([[], ["-c"]]))]
    if kind == "tr":
        return ["tr", *draw(st.sampled_from([["a-z", "A-Z"], ["-d", "ae"], ["' '", "_"]]))]
    if kind in ("true", "false"):
        return [kind]
    if kind == "test":
        return ["test", *draw(st.sampled_from([
            ["-f", draw(files)], ["-d", "sub"], ["-d", "a.txt"],
            [draw(quoted(letters)), "=", draw(quoted(letters))], ["-n", draw(quoted())],
        ]))]
    if kind == "grep":
        flags = draw(st.sampled_from([[], ["-c"], ["-v"], ["-n"]]))
        tail = [draw(files)] if first and draw(st.booleans()) else []
        return ["grep", *flags, draw(quoted(letters)), *tail]
    return ["sed", draw(st.sampled_from(["s/a/X/g", "-n 1p", "1d", "'s/ /_/'"]))]


@st.composite
def pipeline(draw: st.DrawFn, in_sub: bool) -> str:
    """Stages of one pipeline run at once: no file may be both read and written by them,
    nor written twice (that races in bash too), so each output is used once and never
    read in the same pipeline."""
    count = draw(st.integers(1, 3))
    commands = [draw(command(first=index == 0, in_sub=in_sub)) for index in range(count)]
    touched = {w for words_ in commands for w in words_}
    redirects: list[list[str]] = [[] for _ in commands]
    if draw(st.integers(0, 4)) == 0:
        source = draw(st.sampled_from(INPUTS[in_sub]))
        touched.add(source)
        redirects[0].append("< " + source)

    def output() -> str | None:
        free = [f for f in OUTPUTS[in_sub] if f not in touched]
        if not free:
            return None
        chosen = draw(st.sampled_from(free))
        touched.add(chosen)
        return chosen

    for index in range(count):
        if draw(st.integers(0, 3)) == 0:
            target = output()
            if target is not None:
                redirects[index].append(draw(st.sampled_from(["2>", "2>>"])) + " " + target)
    choice = draw(st.integers(0, 5))
    if choice in (0, 1):
        target = output()
        if target is not None:
            redirects[-1].append((">" if choice == 0 else ">>") + " " + target)
    elif choice == 2:
        redirects[-1].append("2>&1")
    return " | ".join(" ".join([*c, *r]) for c, r in zip(commands, redirects, strict=True))


@st.composite
def lines(draw: st.DrawFn) -> str:
    parts = []
    in_sub = draw(st.integers(0, 5)) == 0
    if in_sub:
        parts.append("cd sub &&")
    count = draw(st.integers(1, 3))
    for index in range(count):
        parts.append(draw(pipeline(in_sub)))
        if index < count - 1:
            parts.append(draw(st.sampled_from([";", "&&", "||"])))
    return " ".join(parts)


def _populate(root: Path) -> None:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath, name)
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


@settings(max_examples=300, deadline=None, database=None)
@given(line=lines())
def test_shell_agrees_with_bash(line: str) -> None:
    with tempfile.TemporaryDirectory() as temp:
        ours_root, bash_root = Path(temp, "ours"), Path(temp, "bash")
        ours_root.mkdir()
        _populate(ours_root)
        shutil.copytree(ours_root, bash_root)
        outcome = Shell().run({"line": line, "timeout_seconds": 20}, context(ours_root))
        assert outcome.refused is None, f"{line!r} was refused: {outcome.output}"
        real = subprocess.run([BASH, "-c", line], cwd=bash_root, env=ENV, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=20)
        assert outcome.data.exit_status == real.returncode, line
        assert outcome.data.stdout == real.stdout.decode("utf-8", "replace"), line
        ours_err = sorted(str(outcome.data.stderr).splitlines())
        assert ours_err == sorted(real.stderr.decode("utf-8", "replace").splitlines()), line
        assert _files(ours_root) == _files(bash_root), line


def test_examples_the_generator_might_miss_agree_with_bash() -> None:
    for line in [
        "echo \"a$\" '$HOME' \"\\$x\" \"$ y\" | tr a-z A-Z",
        "printf '%s\\n' b a c | sort | head -n 2 > out1.txt; cat out1.txt",
        "grep -c apple < a.txt && echo many || echo none",
        "cat missing.txt 2> out2.txt || wc -c out2.txt",
        "cat a.txt | uniq -c | sort -r 2>&1",
        "false && echo skipped; echo ran",
        "cd sub && cat c.txt > ../out1.txt && cat ../out1.txt",
        "> out1.txt echo redirect-first",
        "echo x > out1.txt > out2.txt",
    ]:
        test_shell_agrees_with_bash.hypothesis.inner_test(line)  # type: ignore[attr-defined]
