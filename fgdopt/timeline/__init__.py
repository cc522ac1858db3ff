"""Time: an event-driven cluster simulation with departures, a pending queue and job completion times.

=====================================  ======================================================================
:mod:`fgdopt.timeline.jobs`            :class:`JobSet` (tasks + submission and run times), workload CSV files
:mod:`fgdopt.timeline.sources`         jobs from the openb trace at a chosen offered load (Poisson or the
                                       trace's own arrival pattern), background services, warm start
:mod:`fgdopt.timeline.queues`          queue disciplines (``fifo``, ``backfill``, ``sjf``, ``smallest``, ``none``)
:mod:`fgdopt.timeline.preemption`      checkpoints, the mechanisms that evict running jobs, their registry
:mod:`fgdopt.timeline.rounds`          the one round loop (clock, stop rule, a decision placed as one bulk
                                       reallocation) that round policies (Gavel's, Synergy's) decide for
:mod:`fgdopt.timeline.engine`          :func:`simulate`: the event loop on the one ``ClusterState``; its module
                                       docstring maps the objects below and walks through one instant
:mod:`fgdopt.timeline.clock`           the engine's clock and event heap
:mod:`fgdopt.timeline.jobtable`        the engine's per-job table (status, progress, counters)
:mod:`fgdopt.timeline.pending`         the engine's pending queue (order, shape index, fit bookkeeping)
:mod:`fgdopt.timeline.placement`       the engine's placement step (policy, feasibility, tenants, runs)
:mod:`fgdopt.timeline.recorder`        the engine's series and snapshots
:mod:`fgdopt.timeline.metrics`         per-run statistics (wait, JCT, time-averaged allocation, blocked jobs)
=====================================  ======================================================================

The certified optimum of the jobs present at an instant is a formulation (``formulations.timeline``); nothing
here imports a solver.

Examples
--------
>>> from fgdopt.model import Cluster, TaskSet
>>> c = Cluster([8000], [1024], [2], ["T4"])
>>> jobs = JobSet(TaskSet([1000] * 3, [0] * 3, [1, 1, 2], [600, 600, 1000]), [0.0, 1.0, 2.0], [10.0, 10.0, 5.0])
>>> r = simulate(c, jobs, "best-fit", "backfill")
>>> r.start_s.tolist(), r.finish_s.tolist()
([0.0, 1.0, 11.0], [10.0, 11.0, 16.0])
"""

from fgdopt.timeline.engine import STATUSES, Snapshot, TimelineResult, simulate
from fgdopt.timeline.jobs import WORKLOAD_COLUMNS, JobSet, read_workload
from fgdopt.timeline.metrics import run_stats
from fgdopt.timeline.queues import DISCIPLINES, QUEUE_NAMES, Discipline, make_discipline
from fgdopt.timeline.sources import openb_jobs

__all__ = ["DISCIPLINES", "QUEUE_NAMES", "STATUSES", "WORKLOAD_COLUMNS", "Discipline", "JobSet", "Snapshot",
           "TimelineResult", "make_discipline", "openb_jobs", "read_workload", "run_stats", "simulate"]
