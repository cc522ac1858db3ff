"""The CPUs a process may use: a control group's quota caps the host's count (cgroup v2, then v1)."""

from __future__ import annotations

import os

from fgdopt.cpus import cgroup_cpus, usable_cpus


def _write(path, text):
    path.write_text(text)
    return path


def test_cgroup_v2_quota_in_whole_cpus(tmp_path):
    none = (tmp_path / "q", tmp_path / "p")
    assert cgroup_cpus(_write(tmp_path / "cpu.max", "200000 100000\n"), none) == 2
    assert cgroup_cpus(_write(tmp_path / "cpu.max", "250000 100000\n"), none) == 2     # 2.5 CPUs: 2 whole
    assert cgroup_cpus(_write(tmp_path / "cpu.max", "50000 100000\n"), none) == 1      # half a CPU: still 1
    assert cgroup_cpus(_write(tmp_path / "cpu.max", "max 100000\n"), none) is None


def test_cgroup_v1_when_there_is_no_v2(tmp_path):
    quota, period = tmp_path / "cfs_quota_us", _write(tmp_path / "cfs_period_us", "100000\n")
    assert cgroup_cpus(tmp_path / "absent", (_write(quota, "400000\n"), period)) == 4
    assert cgroup_cpus(tmp_path / "absent", (_write(quota, "-1\n"), period)) is None
    assert cgroup_cpus(tmp_path / "absent", (tmp_path / "absent", period)) is None
    assert cgroup_cpus(_write(tmp_path / "cpu.max", "garbage"), (tmp_path / "absent", period)) is None


def test_usable_cpus_is_within_the_affinity_mask():
    n = usable_cpus()
    assert 1 <= n <= len(os.sched_getaffinity(0))
