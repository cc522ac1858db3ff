"""Gavel's co-location throughputs as interference factors, and openb jobs mapped to Gavel's job types.

:func:`colocation_factors` turns the table's pairs into the factor matrices of
:class:`~fgdopt.interference.Interference`: ``factor[g][a, b]`` = throughput of job type ``a`` beside type
``b`` on one GPU of type ``g`` over ``a``'s throughput alone (scale factor 1, the pairs Gavel measured), but at
least 1/2: a pair that runs worse packed, or not at all (out of memory, throughput 0), is time-sliced instead, each
job getting half the GPU (Gandiva's choice between packing and time-slicing). On V100 the 26 x 26 factors range
over [1/2, 1] after the floor, mean 0.688; none exceeds 1.

openb jobs have no model, so :func:`openb_classes` gives each job a Gavel job type, **uniformly at random over the
26 types, independently per job** (seeded): the choice of Gavel's own generator (``choice(JobTable)``,
:func:`fgdopt.hetero.gavel_jobs`), and the neutral one. openb's sharing pods are mostly inference services, whose
contention was not measured; mapping them "by GPU share" (a small share to a small batch size) would invent a
correlation between share and contention the data do not show. The draw uses its own stream,
``np.random.default_rng([CLASS_SALT, seed])``, so that it does not repeat the draws of
:func:`fgdopt.timeline.sources.openb_jobs` made with the same seed; every job of the job set gets a class (only the
sharing ones, ``0 < gpu_milli < 1000``, are ever slowed), and job ``i``'s class depends on ``seed`` and ``i`` only.

GPU models (:data:`GAVEL_MODEL`): openb's ``P100`` nodes use Gavel's ``p100`` factors (the same GPU); every other
model (``V100M16``, ``V100M32``, ``T4``, ``A10``, ``G2``, ``G3``) uses the ``v100`` factors, Gavel's reference type
and the closest measured one (V100 or newer; their contention was not measured).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fgdopt.hetero.throughputs import GPU_TYPES, JOB_TYPES, ThroughputTable
from fgdopt.interference import Interference
from fgdopt.model import Cluster

TIME_SLICE_FLOOR = 0.5
"""The least interference factor: two jobs time-sliced on one GPU each run at half speed."""

CLASS_SALT = 0x1F2E23
"""Mixed with the seed for the job-type draw (its own random stream)."""

GAVEL_MODEL = {"P100": "p100", "K80": "k80"}
"""Cluster GPU model -> Gavel GPU type whose factors it uses; every other model uses :data:`DEFAULT_GAVEL_TYPE`."""

DEFAULT_GAVEL_TYPE = "v100"


def colocation_factors(table: ThroughputTable, gpu_types: Sequence[str] = GPU_TYPES) -> dict[str, np.ndarray]:
    """Per Gavel GPU type, the (26, 26) factors ``max(colocated[a, b] / isolated[a], 1/2)`` at scale factor 1
    (module docstring); a pair not measured counts as time-sliced (1/2)."""
    g = table.gpu_index(gpu_types)
    iso = table.isolated[:, 0, g]                                   # (26, k)
    pair = table.colocated[:, :, 0, g, 0]                           # (26, 26, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.nan_to_num(pair / iso[:, None, :], nan=0.0, posinf=0.0)
    factor = np.maximum(factor, TIME_SLICE_FLOOR)
    return {name: factor[:, :, k] for k, name in enumerate(gpu_types)}


def openb_classes(n_jobs: int, seed: int = 0) -> np.ndarray:
    """A Gavel job type (index into :data:`~fgdopt.hetero.throughputs.JOB_TYPES`) for each of ``n_jobs`` jobs,
    uniform and independent, from ``np.random.default_rng([CLASS_SALT, seed])`` (module docstring).

    Examples
    --------
    >>> cls = openb_classes(5, seed=42)
    >>> len(cls), bool(((cls >= 0) & (cls < 26)).all()), bool((openb_classes(5, seed=42) == cls).all())
    (5, True, True)
    """
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    return np.random.default_rng([CLASS_SALT, int(seed)]).integers(len(JOB_TYPES), size=n_jobs)


def openb_interference(cluster: Cluster, n_jobs: int, table: ThroughputTable, seed: int = 0) -> Interference:
    """The :class:`~fgdopt.interference.Interference` of ``n_jobs`` jobs (e.g. of
    :func:`fgdopt.timeline.sources.openb_jobs`) on ``cluster``: classes from :func:`openb_classes`, factors from
    :func:`colocation_factors` per :data:`GAVEL_MODEL` (``v100`` for every other model, as the default)."""
    factors = colocation_factors(table, GPU_TYPES)
    models = sorted({str(m) for m in cluster.model})
    per_model = {m: factors[GAVEL_MODEL[m]] for m in models if m in GAVEL_MODEL}
    return Interference(openb_classes(n_jobs, seed), per_model, default=factors[DEFAULT_GAVEL_TYPE])


def gavel_model(model: str) -> str:
    """The Gavel GPU type whose factors cluster model ``model`` uses (:data:`GAVEL_MODEL`)."""
    return GAVEL_MODEL.get(str(model), DEFAULT_GAVEL_TYPE)
