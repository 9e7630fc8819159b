"""What a repository's configuration may say before io's git reads it: a table of
key = value -> the program it names (or None), and the parsing of `git config --list`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core.errors import GitRefused
from harness_core.tools._git_config import (
    ConfigEntry,
    check_attributes,
    check_entries,
    include_target,
    parse_config_list,
    program_rule,
)

NAMES = [
    ("filter.x.clean", "sh hook.sh"), ("filter.x.smudge", "x"), ("filter.x.process", "x"),
    ("filter.x.newthing", "x"), ("diff.x.textconv", "cat"), ("diff.x.command", "x"),
    ("diff.external", "x"), ("merge.x.driver", "x"), ("core.fsmonitor", "/bin/hook"),
    ("core.hookspath", ".husky"), ("core.sshcommand", "ssh -i k"), ("core.editor", "vim"),
    ("core.pager", "less"), ("core.askpass", "x"), ("core.gitproxy", "x"),
    ("sequence.editor", "x"), ("pager.log", "less"), ("gpg.program", "gpg2"),
    ("gpg.ssh.program", "x"), ("gpg.x509.program", "x"), ("commit.gpgsign", "true"),
    ("commit.gpgsign", None), ("tag.gpgsign", "yes"), ("log.showsignature", "on"),
    ("credential.helper", "store"), ("credential.https://h.helper", "x"),
    ("uploadpack.packobjectshook", "x"), ("alias.st", "!sh -c x"),
    ("submodule.s.update", "!x"), ("remote.origin.vcs", "x"), ("interactive.difffilter", "x"),
    ("mergetool.m.cmd", "x"), ("trailer.t.command", "x"), ("some.tool.newcommand", "x"),
    ("some.x.program", "x"), ("remote.my.dotted.name.receivepack", "x"),
]

SAFE = [
    ("core.fsmonitor", "false"), ("core.fsmonitor", "true"), ("core.hookspath", ""),
    ("pager.log", "false"), ("commit.gpgsign", "false"), ("alias.st", "status"),
    ("filter.lfs.required", "true"), ("credential.helper", ""), ("remote.origin.url", "u"),
    ("branch.main.merge", "refs/heads/main"), ("user.name", "A"), ("diff.x.xfuncname", "^d"),
    ("lfs.repositoryformatversion", "0"), ("include.path", "x"), ("core.bare", None),
]


@pytest.mark.parametrize(("key", "value"), NAMES)
def test_a_program_setting_is_named(key: str, value: str | None) -> None:
    assert program_rule(key, value) is not None


@pytest.mark.parametrize(("key", "value"), SAFE)
def test_a_setting_that_names_no_program_passes(key: str, value: str | None) -> None:
    assert program_rule(key, value) is None


def test_config_list_is_parsed_with_bare_keys_and_newlines_in_values() -> None:
    raw = b"file:/r/.git/config\0core.bare\nfalse\0file:/r/.git/config\0core.flag\0" \
          b"file:/x.cfg\0alias.two\nline one\nline two\0"
    assert parse_config_list(raw) == [
        ConfigEntry("file:/r/.git/config", "core.bare", "false"),
        ConfigEntry("file:/r/.git/config", "core.flag", None),
        ConfigEntry("file:/x.cfg", "alias.two", "line one\nline two"),
    ]


def test_every_program_is_named_in_one_refusal(tmp_path: Path) -> None:
    entries = [ConfigEntry(f"file:{tmp_path}/.git/config", "core.pager", "less"),
               ConfigEntry(f"file:{tmp_path}/.git/config", "user.name", "A"),
               ConfigEntry(f"file:{tmp_path}/.git/config", "diff.external", "x")]
    with pytest.raises(GitRefused) as caught:
        check_entries(entries, tmp_path, lambda rel: rel == ".git/config")
    assert caught.value.key == "core.pager"
    assert "core.pager = 'less'" in caught.value.reason and "diff.external" in caught.value.reason


def test_configuration_from_a_file_the_agent_writes_is_refused(tmp_path: Path) -> None:
    entries = [ConfigEntry(f"file:{tmp_path}/.git/../cfg/extra", "user.name", "A")]
    with pytest.raises(GitRefused) as caught:
        check_entries(entries, tmp_path, lambda rel: rel == ".git/config")
    assert "cfg/extra" in caught.value.reason and caught.value.file == f"{tmp_path}/cfg/extra"
    check_entries(entries, tmp_path / "elsewhere", lambda rel: False)  # outside: read


def test_an_origin_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GitRefused):
        check_entries([ConfigEntry("blob:abc", "user.name", "A")], tmp_path, lambda r: True)


def test_attribute_files_selecting_a_filter_are_refused(tmp_path: Path) -> None:
    ok = tmp_path / "ok"
    ok.write_text("# filter=x in a comment\n*.bin -text diff\n[attr]bin -diff -merge\n")
    missing = tmp_path / "missing"
    check_attributes([ok, missing])
    bad = tmp_path / "bad"
    bad.write_text("*.txt text\n[attr]lfs filter=lfs -text\n")
    with pytest.raises(GitRefused) as caught:
        check_attributes([ok, bad])
    assert "line 2" in caught.value.reason
    link = tmp_path / "link"
    link.symlink_to(bad)
    check_attributes([link])  # git does not follow a symbolic link in the work tree


def test_an_include_naming_a_workspace_file_is_refused_even_when_missing(tmp_path: Path) -> None:
    origin = f"file:{tmp_path}/.git/config"
    for key, value in (("include.path", "../later.cfg"), ("includeif.onbranch:x.path",
                                                          f"{tmp_path}/sub/later.cfg")):
        with pytest.raises(GitRefused) as caught:
            check_entries([ConfigEntry(origin, key, value)], tmp_path,
                          lambda rel: rel == ".git/config")
        assert "later.cfg" in caught.value.reason and not Path(caught.value.file).exists()
    # `~/` is git's home (io's empty one), not the workspace; outside paths are read.
    check_entries([ConfigEntry(origin, "include.path", "~/x.cfg")], tmp_path,
                  lambda rel: rel == ".git/config", home=str(tmp_path.parent / "home"))
    check_entries([ConfigEntry(origin, "include.path", "/etc/x.cfg")], tmp_path,
                  lambda rel: rel == ".git/config")


def test_include_target_resolves_like_git(tmp_path: Path) -> None:
    origin = f"file:{tmp_path}/.git/config"
    assert include_target(ConfigEntry(origin, "include.path", "../a.cfg"), "/h") == \
        Path(os.path.realpath(tmp_path / "a.cfg"))
    assert include_target(ConfigEntry(origin, "include.path", "~/b.cfg"), "/h") == Path("/h/b.cfg")
    assert include_target(ConfigEntry(origin, "includeIf.gitdir:/.path", "/c.cfg"), "/h") == \
        Path("/c.cfg")
    assert include_target(ConfigEntry(origin, "core.path", "x"), "/h") is None
