"""Multi-GPU jobs over servers: where a job's GPUs go when no server of its type holds it whole, and its speed there.

Gavel (``scheduler/scheduler.py`` of ``stanford-futuredata/gavel`` at commit ``c4fa4009``) places a round's jobs type
by type, largest scale factor first; a job that ran on the type last round keeps its GPUs if none of them is taken
yet, and every other job gets, in ``_assign_workers_to_job``, the next ``scale_factor`` free GPUs of a walk over the
type's servers in their order (a pointer that moves on when a server has none left), so a job spans two servers
when the server at the pointer has fewer free GPUs than it needs. Its measured throughputs
(``simulation_throughputs.json``) hold, besides each type's (*consolidated*, one server), a ``<type>_unconsolidated``
throughput of every distributed job type at 2, 4 and 8 GPUs spread over servers. Its simulator never reads them:
``_set_initial_throughput`` takes ``oracle_throughputs[worker_type][(job type, scale factor)]['null']`` for the
three consolidated types only (the ``unconsolidated`` keys appear once, in ``_initialize_throughput_estimator``,
to be left out), and ``_get_num_steps`` runs a job at that throughput whatever its GPUs; and its multi-GPU sweeps
(``EXPERIMENTS.md``, Figures 9 and 10) use its default of one GPU per server (``--num_gpus_per_server 1:1:1``), so
there every multi-GPU job spans servers and runs at the consolidated throughput.

fgdopt's round loop (:class:`fgdopt.timeline.rounds.RoundLoop`) places a job on the one node of its type with the
fewest free GPUs that holds it whole (consolidated) and, only when none does, over several nodes by Gavel's walk
(:func:`fgdopt.timeline.rounds.spread_parts`, one gang placement: :meth:`fgdopt.state.ClusterState.place_parts`); a
job over several nodes runs at its unconsolidated speed (:func:`spread_speeds`) unless the policy is told to run it
as Gavel's simulator does (``spread_speed=None``, :class:`fgdopt.hetero.rounds.Gavel`).
"""

from __future__ import annotations

import numpy as np

from fgdopt.hetero.throughputs import SCALE_FACTORS, ThroughputTable


def spread_speeds(table: ThroughputTable, job_type: np.ndarray, scale_factor: np.ndarray, gpu_types,
                  reference: np.ndarray) -> dict[str, np.ndarray]:
    """Each job's speed per GPU type when its GPUs span servers: its ``<type>_unconsolidated`` throughput over
    ``reference`` (its V100 throughput, steps/s), as ``HeteroJobs.to_jobset`` gives the consolidated speeds.

    Where Gavel did not measure one (six ``k80_unconsolidated`` entries; a single-GPU job never spans servers) the
    consolidated throughput stands in. Returns ``{gpu type: float64 (n,)}`` (0 where the job does not run).
    """
    job_type = np.asarray(job_type, dtype=np.int64)
    scale = np.searchsorted(np.asarray(SCALE_FACTORS), np.asarray(scale_factor, dtype=np.int64))
    out = {}
    for g in gpu_types:
        own = table.isolated[job_type, scale, table.gpu_index([g])[0]]
        name = f"{g}_unconsolidated"
        spread = table.isolated[job_type, scale, table.gpu_index([name])[0]] if name in table.gpu_types else own
        spread = np.where(np.isnan(spread) | (scale == 0), own, spread)
        out[g] = np.nan_to_num(spread, nan=0.0) / np.asarray(reference, dtype=np.float64)
    return out
