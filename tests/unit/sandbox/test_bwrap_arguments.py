"""The bubblewrap command line and the protected-path plan, as data."""

from __future__ import annotations

from pathlib import Path

from harness_core.sandbox._linux import BwrapInfo, ProtectionPlan, bwrap_arguments, plan_protection

INFO = BwrapInfo("/usr/bin/bwrap", "bubblewrap 0.8.0", can_disable_userns=True)


def args_for(tmp_path: Path, **overrides: object) -> list[str]:
    params: dict[str, object] = {
        "workdir": tmp_path,
        "cwd": tmp_path,
        "network": False,
        "plan": ProtectionPlan(),
        "env": {"PATH": "/usr/bin", "HOME": "/root"},
        "command": ["/usr/bin/true", "--flag"],
        "seccomp_fd": 7,
    }
    params.update(overrides)
    return bwrap_arguments(INFO, **params)  # type: ignore[arg-type]


def pairs(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


def test_every_namespace_is_unshared_and_capabilities_dropped(tmp_path: Path) -> None:
    args = args_for(tmp_path)
    for flag in (
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ):
        assert flag in args
    assert pairs(args, "--cap-drop") == ["ALL"]


def test_network_true_keeps_the_host_network_namespace(tmp_path: Path) -> None:
    assert "--unshare-net" not in args_for(tmp_path, network=True)


def test_old_bwrap_without_disable_userns_is_not_given_it(tmp_path: Path) -> None:
    old = BwrapInfo("/usr/bin/bwrap", "bubblewrap 0.6.1", can_disable_userns=False)
    args = bwrap_arguments(
        old,
        workdir=tmp_path,
        cwd=tmp_path,
        network=False,
        plan=ProtectionPlan(),
        env={},
        command=["/bin/true"],
        seccomp_fd=None,
    )
    assert "--disable-userns" not in args
    assert "--seccomp" not in args


def test_root_is_read_only_and_only_workdir_and_private_tmp_are_writable(tmp_path: Path) -> None:
    args = args_for(tmp_path)
    i = args.index("--ro-bind")
    assert args[i : i + 3] == ["--ro-bind", "/", "/"]
    assert pairs(args, "--bind") == [str(tmp_path)]
    assert pairs(args, "--tmpfs") == ["/tmp", "/run"]
    # The workdir bind comes after the tmpfs, so a workdir under /tmp stays visible.
    assert args.index("--bind") > args.index("/tmp")


def test_environment_is_set_exactly_and_command_follows_the_separator(tmp_path: Path) -> None:
    args = args_for(tmp_path)
    setenv = [args[i + 1 : i + 3] for i, a in enumerate(args) if a == "--setenv"]
    assert setenv == [["HOME", "/root"], ["PATH", "/usr/bin"]]
    assert args[args.index("--") :] == ["--", "/usr/bin/true", "--flag"]
    assert pairs(args, "--seccomp") == ["7"]
    assert pairs(args, "--chdir") == [str(tmp_path)]


def test_plan_binds_are_emitted_parents_first_with_placeholders_last(tmp_path: Path) -> None:
    plan = ProtectionPlan(
        keep=(tmp_path / ".git",),
        read_only=(tmp_path / "io.toml", tmp_path / ".git" / "config"),
        empty_dirs=(tmp_path / "sub",),
        empty_files=(tmp_path / ".gitmodules",),
    )
    args = args_for(tmp_path, plan=plan, empty_file_fds=[9])
    assert pairs(args, "--bind") == [str(tmp_path), str(tmp_path / ".git")]
    assert pairs(args, "--ro-bind")[1:] == [
        str(tmp_path / "io.toml"),
        str(tmp_path / ".git" / "config"),
    ]
    assert pairs(args, "--remount-ro") == [str(tmp_path / "sub")]
    i = args.index("--ro-bind-data")
    assert args[i - 2 : i + 3] == [
        "--perms",
        "0444",
        "--ro-bind-data",
        "9",
        str(tmp_path / ".gitmodules"),
    ]
    assert (
        args.index("--ro-bind-data")
        > args.index("--remount-ro")
        > args.index(str(tmp_path / ".git" / "config"))
    )


def test_existing_protected_paths_are_bound_read_only(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text("")
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    plan = plan_protection(tmp_path, [Path("io.toml"), tmp_path / ".git" / "hooks"])
    assert plan.read_only == (tmp_path / "io.toml", tmp_path / ".git" / "hooks")
    assert plan.keep == (tmp_path / ".git",)
    assert plan.placeholders == ()


def test_missing_last_component_gets_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    plan = plan_protection(tmp_path, [Path(".git/hooks"), Path(".gitmodules")])
    assert plan.empty_files == (tmp_path / ".gitmodules", tmp_path / ".git" / "hooks")
    assert plan.keep == (tmp_path / ".git",)


def test_missing_intermediate_component_gets_an_empty_directory(tmp_path: Path) -> None:
    plan = plan_protection(tmp_path, [Path(".git/hooks"), Path(".git/config")])
    assert plan.empty_dirs == (tmp_path / ".git",)
    assert plan.empty_files == ()
    assert plan.keep == ()


def test_a_file_on_the_way_is_itself_bound_read_only(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's .git file
    plan = plan_protection(tmp_path, [Path(".git/hooks")])
    assert plan.read_only == (tmp_path / ".git",)


def test_paths_outside_the_workdir_and_the_workdir_itself_are_ignored(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    plan = plan_protection(ws, [tmp_path / "other", ws, Path("../escape")])
    assert plan == ProtectionPlan()


def test_a_symlinked_directory_on_the_way_is_followed(tmp_path: Path) -> None:
    # A mount follows the link: the directory it names is kept as a mount point and
    # the protected path under it is bound read-only (the link is not "missing").
    (tmp_path / "real-git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git").symlink_to(tmp_path / "real-git")
    plan = plan_protection(tmp_path, [Path(".git/hooks"), Path(".git/config")])
    assert plan.keep == (tmp_path / ".git",)
    assert plan.read_only == (tmp_path / ".git" / "hooks",)
    assert plan.empty_files == (tmp_path / ".git" / "config",)
    assert plan.empty_dirs == ()


def test_a_dangling_symlink_on_the_way_is_bound_read_only_not_replaced(tmp_path: Path) -> None:
    (tmp_path / ".git").symlink_to(tmp_path / "nowhere")
    (tmp_path / "io.toml").symlink_to(tmp_path / "nowhere.toml")
    plan = plan_protection(tmp_path, [Path(".git/hooks"), Path("io.toml")])
    assert plan.read_only == (tmp_path / ".git", tmp_path / "io.toml")
    assert plan.placeholders == ()


def test_a_missing_commondir_gets_no_placeholder_but_its_parent_does(tmp_path: Path) -> None:
    assert plan_protection(tmp_path, [Path(".git/commondir")]).empty_dirs == (tmp_path / ".git",)
    (tmp_path / ".git").mkdir()
    plan = plan_protection(tmp_path, [Path(".git/commondir")])
    assert plan.placeholders == () and plan.keep == (tmp_path / ".git",)


def test_pending_placeholders_are_treated_as_missing(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text("")
    plan = plan_protection(tmp_path, [Path("io.toml")], pending={tmp_path / "io.toml"})
    assert plan.empty_files == (tmp_path / "io.toml",)


def test_handshake_fds_make_bwrap_report_and_wait(tmp_path: Path) -> None:
    args = args_for(tmp_path, info_fd=11, block_fd=12)
    assert pairs(args, "--info-fd") == ["11"]
    assert pairs(args, "--block-fd") == ["12"]
    assert "--info-fd" not in args_for(tmp_path)
