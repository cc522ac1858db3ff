"""The Standard Workload Format of the Parallel Workloads Archive (``*.swf``): import, and export
(:func:`write_swf`).

An SWF file has comment lines starting with ``;`` and one line per job of 18 whitespace-separated fields, ``-1``
for unknown: 1 job number, 2 submit time (s), 3 wait time (s), 4 run time (s), 5 allocated processors, 6 average
CPU time used, 7 used memory (KB per processor), 8 requested processors, 9 requested time, 10 requested memory
(KB per processor), 11 status, 12 user id, 13 group id, 14 executable, 15 queue, 16 partition, 17 preceding job,
18 think time.

Import rule: one processor is one GPU (a GPU trace written in SWF); processors = field 5, or field 8 where 5 is
unknown; a job of ``p`` processors on nodes of ``GPUS_PER_NODE`` GPUs has ``workers = ceil(p / 8)`` parts of
``ceil(p / workers)`` GPUs (rounded up where uneven, counted); memory per worker = field 10 (else field 7) x GPUs
per worker / 1024 MiB (unknown: 0); ``cpu_milli`` 0; ``user`` = field 12. Jobs with an unknown submit or run time
(-1) or 0 processors are dropped. Export writes fields 1, 2, 4, 5, 8, 10, 11 (1 = completed), 12 (users numbered
1.. in order of appearance) and -1 elsewhere; times are rounded to whole seconds (SWF's unit).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

from fgdopt.workloads.convert.common import Conversion, check_duration, rebase

FIELDS = ("job", "submit", "wait", "run", "procs", "cpu_used", "mem_used", "req_procs", "req_time", "req_mem",
          "status", "user", "group", "exe", "queue", "partition", "preceding", "think")
GPUS_PER_NODE = 8


def convert(paths: list[str]) -> Conversion:
    (path,) = paths
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    text = "".join(line for line in path.read_text().splitlines(keepends=True)
                   if line.strip() and not line.lstrip().startswith(";"))
    raw = pd.read_csv(io.StringIO(text), sep=r"\s+", header=None, dtype=np.float64, engine="c") if text else \
        pd.DataFrame(np.zeros((0, 18)))
    if raw.shape[1] != len(FIELDS):
        raise ValueError(f"{path}: {raw.shape[1]} fields per job line, SWF has 18")
    raw.columns = list(FIELDS)
    submit, run = raw["submit"].to_numpy(), raw["run"].to_numpy()
    check_duration(np.where(run == -1, 0, run), path, "run")
    procs = np.where(raw["procs"] > 0, raw["procs"], raw["req_procs"])
    keep = (submit >= 0) & (run >= 0) & (procs > 0)
    procs = procs[keep]
    workers = np.ceil(procs / GPUS_PER_NODE).astype(np.int64)
    per = np.ceil(procs / workers).astype(np.int64)
    kb = np.where(raw["req_mem"] > 0, raw["req_mem"], raw["mem_used"]).clip(min=0)[keep]
    jobs = pd.DataFrame({"name": raw["job"].to_numpy()[keep].astype(np.int64).astype(str),
                         "submit_s": rebase(submit[keep]), "duration_s": run[keep], "num_gpu": per,
                         "gpu_milli": 1000, "cpu_milli": 0, "memory_mib": np.ceil(kb * per / 1024).astype(np.int64),
                         "workers": workers,
                         "user": np.where(raw["user"].to_numpy()[keep] >= 0,
                                          raw["user"].to_numpy()[keep].astype(np.int64).astype(str), "")})
    return Conversion(jobs, None, len(raw), {"unknown submit or run time, or 0 processors": int((~keep).sum())}, [
        f"one processor = one GPU; workers = ceil(processors / {GPUS_PER_NODE}), each ceil(processors / workers) "
        f"GPUs ({int((per * workers != procs).sum())} job(s) rounded up)",
        "cpu_milli 0; memory_mib = requested (else used) KB per processor x GPUs per worker / 1024 (unknown: 0)"])


def write_swf(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write open-format jobs ``frame`` as an SWF file (module docstring: the export rule)."""
    path = Path(path)
    n = len(frame)
    procs = (frame["num_gpu"].to_numpy() * frame["workers"].to_numpy()).astype(np.int64)
    per_gpu = np.where(frame["num_gpu"] > 0, frame["memory_mib"] * 1024 / frame["num_gpu"].clip(lower=1), 0)
    users = pd.factorize(frame["user"].astype(str))[0] + 1
    cols = np.full((n, len(FIELDS)), -1, dtype=np.int64)
    cols[:, 0] = np.arange(1, n + 1)
    cols[:, 1] = np.round(frame["submit_s"].to_numpy())
    cols[:, 3] = np.round(frame["duration_s"].to_numpy())
    cols[:, 4] = cols[:, 7] = procs
    cols[:, 9] = np.where(per_gpu > 0, np.round(per_gpu), -1)
    cols[:, 10] = 1
    cols[:, 11] = users
    with path.open("w") as f:
        f.write("; Version: 2.2\n; Note: written by fgdopt (fgdopt.workloads.convert.swf): one processor = one GPU\n")
        np.savetxt(f, cols, fmt="%d")
    return path
