"""Statistics of a workload in the open job format: jobs by shape, gang sizes, GPU-hours.

A job's **shape** is ``<workers> x <per worker>`` where the part per worker is ``CPU`` (no GPU), ``0.25 GPU`` (a
share of one GPU) or ``8 GPU`` (whole GPUs); its **class** is ``gang`` when ``workers > 1``, else ``single``. A
job's GPU-hours are ``workers x num_gpu x gpu_milli / 1000 x duration_s / 3600`` (a job that never ends counts 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fgdopt.model import GPU_MILLI

SHAPE_COLUMNS = ("shape", "class", "workers", "jobs", "gpu_hours")


def job_class(frame: pd.DataFrame) -> np.ndarray:
    """``gang`` where a job has more than one worker, else ``single`` (object array)."""
    return np.where(frame["workers"].to_numpy() > 1, "gang", "single").astype(object)


def gpu_hours(frame: pd.DataFrame) -> np.ndarray:
    """GPU-hours of every job (module docstring)."""
    duration = frame["duration_s"].to_numpy(dtype=np.float64)
    gpus = frame["workers"].to_numpy() * frame["num_gpu"].to_numpy() * frame["gpu_milli"].to_numpy() / GPU_MILLI
    return gpus * np.where(np.isfinite(duration), duration, 0.0) / 3600


def shapes(frame: pd.DataFrame) -> pd.DataFrame:
    """Jobs and GPU-hours by shape (:data:`SHAPE_COLUMNS`), most GPU-hours first.

    Examples
    --------
    >>> f = pd.DataFrame({"workers": [2, 1, 1], "num_gpu": [8, 1, 0], "gpu_milli": [1000, 500, 0],
    ...                   "duration_s": [3600.0, 7200.0, 60.0]})
    >>> shapes(f)[["shape", "class", "jobs", "gpu_hours"]].values.tolist()
    [['2 x 8 GPU', 'gang', 1, 16.0], ['1 x 0.5 GPU', 'single', 1, 1.0], ['1 x CPU', 'single', 1, 0.0]]
    """
    num, milli = frame["num_gpu"].to_numpy(), frame["gpu_milli"].to_numpy()
    part = np.where(num == 0, "CPU", np.where(milli < GPU_MILLI, pd.Series(milli / GPU_MILLI).map("{:g}".format)
                                              .to_numpy() + " GPU", pd.Series(num).astype(str).to_numpy() + " GPU"))
    table = pd.DataFrame({"shape": frame["workers"].astype(str).to_numpy() + " x " + part,
                          "class": job_class(frame), "workers": frame["workers"].to_numpy(),
                          "gpu_hours": gpu_hours(frame)})
    out = table.groupby(["shape", "class", "workers"], as_index=False).agg(jobs=("gpu_hours", "size"),
                                                                           gpu_hours=("gpu_hours", "sum"))
    return out.sort_values(["gpu_hours", "jobs", "shape"], ascending=[False, False, True], ignore_index=True)[
        list(SHAPE_COLUMNS)]


def summary(frame: pd.DataFrame) -> dict:
    """One workload in numbers: jobs, gangs, the largest gang, GPU-hours in all and of gangs, users."""
    workers = frame["workers"].to_numpy()
    hours, gang = gpu_hours(frame), workers > 1
    return {"jobs": len(frame), "gangs": int(gang.sum()), "max_workers": int(workers.max(initial=0)),
            "gpu_hours": float(hours.sum()), "gang_gpu_hours": float(hours[gang].sum()),
            "users": int(frame["user"].nunique()) if "user" in frame else 0,
            "span_s": float(frame["submit_s"].max() - frame["submit_s"].min()) if len(frame) else 0.0}
