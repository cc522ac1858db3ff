"""Heterogeneous GPUs (Gavel, OSDI'20): measured throughputs, jobs with work, allocations over GPU types.

=====================================  ======================================================================
:mod:`fgdopt.hetero.throughputs`       Gavel's throughput table (steps/s per job type, scale factor and GPU
                                       type, alone and co-located): locate, download, verify, load
:mod:`fgdopt.hetero.jobs`              :class:`HeteroJobs` (type, GPUs, total steps, submission) and
                                       :func:`gavel_jobs`, Gavel's generator reproduced draw for draw
:mod:`fgdopt.hetero.allocation`        :class:`Allocation`, the matrix X (jobs x GPU types, fraction of time)
                                       a policy chooses, and its feasibility check
:mod:`fgdopt.hetero.gang`              multi-GPU jobs over several servers: Gavel's worker walk and the
                                       unconsolidated speeds
:mod:`fgdopt.hetero.allox`             AlloX: min-cost matching of jobs to (GPU, position) slots, as Gavel's
                                       ``allox`` policy, and the round mechanism that runs it
=====================================  ======================================================================

The policies that choose X (max-min fairness, finish-time fairness, minimum makespan) are linear programs in
``formulations.hetero``; nothing here imports a solver.
"""

from fgdopt.hetero.allocation import Allocation, allocation_violation, check_allocation
from fgdopt.hetero.jobs import HeteroJobs, gavel_jobs
from fgdopt.hetero.throughputs import (
    DISTRIBUTED,
    GPU_TYPES,
    JOB_TYPES,
    SCALE_FACTORS,
    ThroughputTable,
    gavel_dir,
    load_throughputs,
    read_throughputs,
)

__all__ = ["DISTRIBUTED", "GPU_TYPES", "JOB_TYPES", "SCALE_FACTORS", "Allocation", "HeteroJobs", "ThroughputTable",
           "allocation_violation", "check_allocation", "gavel_dir", "gavel_jobs", "load_throughputs",
           "read_throughputs"]
