"""The open job format (fgdopt.workloads.format): defaults, CSV and Parquet read the same, one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fgdopt.timeline import JobSet, read_workload
from fgdopt.workloads.format import FORMAT_COLUMNS, check_workload_frame, read_workload_frame, write_workload

HEADER = "submit_s,duration_s,num_gpu,cpu_milli,memory_mib"


def test_defaults_fill_the_optional_columns(tmp_path):
    # row 0: 2 whole GPUs (gpu_milli defaults to 1000); row 1: CPU-only (gpu_milli 0); row 2: a share given;
    # row 3: one GPU, gpu_milli left empty (1000)
    path = tmp_path / "w.csv"
    path.write_text(HEADER + ",gpu_milli\n0,10,2,4000,1024,\n5,inf,0,1000,0,\n7,3.5,1,500,0,250\n8,2,1,500,0,\n")
    frame = read_workload_frame(path)
    assert list(frame.columns) == list(FORMAT_COLUMNS)
    assert frame["gpu_milli"].tolist() == [1000, 0, 250, 1000]
    assert frame["workers"].tolist() == [1] * 4 and frame["priority"].tolist() == [0] * 4
    assert frame["name"].tolist() == ["job-0", "job-1", "job-2", "job-3"] and frame["gpu_spec"].tolist() == [""] * 4
    assert frame["duration_s"].tolist() == [10.0, np.inf, 3.5, 2.0]
    jobs = read_workload(path)
    assert jobs.tasks.num_gpu.tolist() == [2, 0, 1, 1] and jobs.submit_s.tolist() == [0.0, 5.0, 7.0, 8.0]
    assert jobs.offered_gpu_s == 2000 * 10 + 250 * 3.5 + 1000 * 2            # milli-GPU x s; inf counts 0


def test_csv_and_parquet_read_the_same(tmp_path):
    rng = np.random.default_rng(0)
    n = 50
    gpus = rng.choice([0, 1, 2, 8], n)
    frame = pd.DataFrame({"name": [f"j{i}" for i in range(n)], "submit_s": np.sort(rng.uniform(0, 1e5, n)),
                          "duration_s": rng.exponential(3600, n), "num_gpu": gpus,
                          "gpu_milli": np.where(gpus == 0, 0, np.where(gpus == 1, rng.choice([300, 1000], n), 1000)),
                          "cpu_milli": rng.choice([1000, 8000], n), "memory_mib": rng.choice([0, 4096], n),
                          "workers": 1, "gpu_spec": rng.choice(["", "V100", "V100|T4"], n),
                          "priority": rng.integers(-2, 3, n), "user": rng.choice(["ann", "bo", ""], n)})
    a = read_workload_frame(write_workload(frame, tmp_path / "w.csv"))
    b = read_workload_frame(write_workload(frame, tmp_path / "w.parquet"))
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, check_workload_frame(frame))
    ja, jb = read_workload(tmp_path / "w.csv"), read_workload(tmp_path / "w.parquet")
    assert ja.submit_s.tolist() == jb.submit_s.tolist() and ja.priority.tolist() == jb.priority.tolist()
    assert JobSet.save(ja, tmp_path / "again.parquet").is_file()
    pd.testing.assert_frame_equal(read_workload_frame(tmp_path / "again.parquet").drop(columns="user"),
                                  a.drop(columns="user"))


@pytest.mark.parametrize(("text", "message"), [
    (HEADER + "\n0,-5,1,1000,0\n", r"w.csv: job row 0: field 'duration_s' must be a number >= 0, got -5$"),
    (HEADER + ",workers\n0,5,1,1000,0,1\n0,5,1,1000,0,0\n", r"w.csv: job row 1: field 'workers' must be .* >= 1"),
    (HEADER + ",workers\n0,5,1,1000,0,1\n0,5,1,1000,0,-2\n", r"w.csv: job row 1: field 'workers' must be .* >= 1"),
    ("submit_s,duration_s,num_gpu,cpu_milli\n0,5,1,1000\n", r"w.csv: missing column memory_mib; expected name, "),
    (HEADER + ",colour\n0,5,1,1000,0,red\n", r"w.csv: unknown column colour; expected name, "),
    (HEADER + "\n0,5,1.5,1000,0\n", r"w.csv: job row 0: field 'num_gpu' must be an integer, got 1.5$"),
    (HEADER + "\n0,5,x,1000,0\n", r"w.csv: job row 0: field 'num_gpu' is missing or not a number \('x'\)$"),
    (HEADER + ",priority\n0,5,1,1000,0,high\n", r"w.csv: job row 0: field 'priority' is not a number \('high'\)$"),
    (HEADER + "\ninf,5,1,1000,0\n", r"w.csv: job row 0: field 'submit_s' must be finite, got inf$"),
    (HEADER + ",name\n0,5,1,1000,0,a\n1,5,1,1000,0,a\n",
     r"w.csv: job row 1: field 'name' 'a' is the name of job row 0"),
    (HEADER + ",gpu_milli\n0,5,2,1000,0,500\n", r"w.csv: task row 0: a multi-GPU task"),
    (HEADER + "\n", r"w.csv: no jobs"),
])
def test_bad_rows_are_one_line(tmp_path, text, message):
    (tmp_path / "w.csv").write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        read_workload(tmp_path / "w.csv")
    assert "\n" not in str(err.value)


def test_not_parquet_is_one_line(tmp_path):
    (tmp_path / "w.parquet").write_text("no parquet here\n")
    with pytest.raises(ValueError, match=r"w.parquet: not a Parquet file") as err:
        read_workload(tmp_path / "w.parquet")
    assert "\n" not in str(err.value)
