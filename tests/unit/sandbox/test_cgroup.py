"""Finding this process's pids cgroup from recorded /proc text."""

from __future__ import annotations

from pathlib import Path

from harness_core.sandbox._cgroup import (
    PidsHierarchy,
    discover_pids_hierarchy,
    locate_pids_hierarchy,
)

V1_MOUNTINFO = """\
25 30 0:22 / /sys/fs/cgroup rw,relatime shared:5 - tmpfs tmpfs rw,mode=755
33 25 0:29 / /sys/fs/cgroup/pids rw,relatime shared:13 - cgroup cgroup rw,pids
34 25 0:30 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory
35 25 0:31 / /sys/fs/cgroup/unified rw,relatime shared:15 - cgroup2 cgroup2 rw
"""
V1_CGROUP = "8:pids:/user.slice/session-1\n4:memory:/m\n0::/\n"

V2_MOUNTINFO = "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V2_CGROUP = "0::/user.slice/user-1000.slice/user@1000.service/app.slice\n"


def test_v1_pids_hierarchy_is_preferred_and_joined_with_our_path() -> None:
    found = locate_pids_hierarchy(V1_MOUNTINFO, V1_CGROUP)
    assert found == PidsHierarchy(1, Path("/sys/fs/cgroup/pids/user.slice/session-1"))
    assert found.describe() == "cgroup v1 pids (/sys/fs/cgroup/pids/user.slice/session-1)"


def test_v2_unified_hierarchy_is_found_when_it_is_the_only_one() -> None:
    found = locate_pids_hierarchy(V2_MOUNTINFO, V2_CGROUP)
    assert found == PidsHierarchy(
        2, Path("/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice")
    )


def test_a_mount_of_a_subtree_strips_its_root_from_our_path() -> None:
    mountinfo = "40 25 0:29 /docker/abc /sys/fs/cgroup/pids ro - cgroup cgroup rw,pids\n"
    found = locate_pids_hierarchy(mountinfo, "8:pids:/docker/abc/inner\n")
    assert found == PidsHierarchy(1, Path("/sys/fs/cgroup/pids/inner"))


def test_an_escaped_mount_point_is_decoded() -> None:
    mountinfo = "40 25 0:29 / /sys/fs/my\\040cgroup rw - cgroup cgroup rw,pids\n"
    found = locate_pids_hierarchy(mountinfo, "8:pids:/\n")
    assert found == PidsHierarchy(1, Path("/sys/fs/my cgroup"))


def test_no_pids_hierarchy_is_a_reason_not_an_error() -> None:
    mountinfo = "34 25 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    assert locate_pids_hierarchy(mountinfo, "4:memory:/\n") == "no pids cgroup hierarchy is mounted"


def fake_proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    (proc / "self" / "cgroup").write_text(cgroup)
    return proc


def test_v2_without_a_delegated_pids_controller_is_reported(tmp_path: Path) -> None:
    base = tmp_path / "cg"
    base.mkdir()
    (base / "cgroup.subtree_control").write_text("cpu memory\n")
    proc = fake_proc(tmp_path, f"30 25 0:26 / {base} rw - cgroup2 cgroup2 rw\n", "0::/\n")
    reason = discover_pids_hierarchy(proc)
    assert isinstance(reason, str) and "does not delegate the pids controller" in reason


def test_a_directory_that_is_not_a_cgroup_is_reported(tmp_path: Path) -> None:
    base = tmp_path / "cg"
    base.mkdir()
    proc = fake_proc(tmp_path, f"30 25 0:26 / {base} rw - cgroup cgroup rw,pids\n", "3:pids:/\n")
    reason = discover_pids_hierarchy(proc)
    assert isinstance(reason, str) and "has no pids.max" in reason
    assert list(base.iterdir()) == []
