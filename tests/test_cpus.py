"""The CPUs a process may use: a control group's quota caps the host's count (cgroup v2, then v1); BLAS on
one thread."""

from __future__ import annotations

import os
import subprocess
import sys

from fgdopt.cpus import BLAS_THREADS, cgroup_cpus, usable_cpus


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


def _blas_threads(env: dict) -> list[int]:
    """The thread counts of the BLAS libraries of a fresh process that imports numpy, then fgdopt, then scipy's
    optimiser (whose OpenBLAS loads after fgdopt's import)."""
    code = ("import numpy, fgdopt, scipy.optimize\n"
            "from threadpoolctl import threadpool_info\n"
            "print(*[i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    return [int(n) for n in out.split()]


def test_blas_runs_on_one_thread_unless_the_user_says_otherwise():
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREADS}
    threads = _blas_threads(env)
    assert len(threads) >= 2 and set(threads) == {1}        # numpy's BLAS (loaded before) and scipy's (after)
    assert set(_blas_threads({**env, "OPENBLAS_NUM_THREADS": "2"})) == {2}      # the user's choice stands
