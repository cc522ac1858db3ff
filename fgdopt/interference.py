"""Interference: jobs that share a GPU slow each other down (the time engine's co-location model).

Two jobs on one GPU (sharing jobs, ``gpu_milli < 1000``, placed on the same GPU of the same node) contend for its
caches and memory bandwidth. An :class:`Interference` gives every job a *class* (e.g. one of Gavel's 26 job types,
:meth:`fgdopt.hetero.HeteroJobs.interference`; openb jobs: :func:`fgdopt.hetero.interference.openb_interference`)
and, per GPU model, the factor ``factor[a, b]`` by which a job of class ``a`` runs beside one of class ``b`` (its
co-located over its isolated throughput; 1 = no slowdown). A job's speed on a GPU is its speed alone
(``simulate(..., speed=...)``) times the product of the factors of every other job on the same GPU: pairs were
measured, triples were not, so contention is taken as independent (an assumption). The engine re-rates a running
job whenever a job joins or leaves its GPU: the progress made at the old speed is kept and the rest of its work runs
at the new one (:func:`fgdopt.timeline.simulate`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Interference:
    """Co-location slowdowns (module docstring).

    Attributes
    ----------
    job_class : int64 (n,), every job's class.
    factor : ``{GPU model: float64 (C, C)}``, ``factor[m][a, b]`` = speed of class ``a`` beside class ``b`` on a GPU
        of model ``m`` over its speed alone (in (0, 1] as measured; values above 1 are allowed). A model that is
        not a key uses ``default``.
    default : the factor matrix for the other models (None: no slowdown there).

    Examples
    --------
    >>> inter = Interference([0, 1], {"T4": [[1.0, 0.5], [0.8, 1.0]]})
    >>> inter.slowdown("T4", 0, [1]), inter.slowdown("T4", 1, [0]), inter.slowdown("V100", 0, [1])
    (0.5, 0.8, 1.0)
    """

    job_class: np.ndarray
    factor: Mapping[str, np.ndarray]
    default: np.ndarray | None = None

    def __post_init__(self) -> None:
        cls = np.array(self.job_class, dtype=np.int64)
        cls.setflags(write=False)
        object.__setattr__(self, "job_class", cls)
        mats = {}
        for model, mat in {**self.factor, **({"": self.default} if self.default is not None else {})}.items():
            mat = np.array(mat, dtype=np.float64)
            if mat.ndim != 2 or mat.shape[0] != mat.shape[1] or (len(cls) and cls.max() >= mat.shape[0]):
                raise ValueError(f"interference factors for {model or 'the default'!r} must be a square matrix "
                                 f"covering classes 0..{int(cls.max(initial=0))}, got shape {mat.shape}")
            if not (np.isfinite(mat) & (mat > 0)).all():
                raise ValueError(f"interference factors for {model or 'the default'!r} must be finite and > 0")
            mat.setflags(write=False)
            mats[model] = mat
        if len(cls) and cls.min() < 0:
            raise ValueError("job classes must be >= 0")
        object.__setattr__(self, "default", mats.pop("", None))
        object.__setattr__(self, "factor", mats)

    def slowdown(self, model: str, job: int, others: Iterable[int]) -> float:
        """The product of ``job``'s factors beside each of ``others`` on a GPU of ``model`` (1 with none)."""
        mat = self.factor.get(model, self.default)
        if mat is None:
            return 1.0
        row = mat[self.job_class[job]]
        return float(np.prod([row[self.job_class[o]] for o in others]))
