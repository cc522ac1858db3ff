"""Bounded reservations for whole-node jobs: a placement wrapper that keeps the earliest-draining node for them.

Under a backfilling queue a job that needs a whole node (all the GPUs of a node) starves while narrow jobs keep
arriving: every node that drains is taken by a narrow job before it is empty. :class:`Reserving` wraps any
placement policy (the *inner* one) and, at every call at time ``now`` (seconds):

1. the *waiting whole-node jobs* are the jobs of the run, in submission order, that are submitted at or before
   ``now``, not yet placed, and *whole-node*: whole GPUs (``gpu_milli`` 1000) as many as all the GPUs of some node
   whose empty self holds them (the job's *homes*: the nodes of that GPU count that fit it empty, the one rule of
   :meth:`~fgdopt.state.ClusterState.feasible_nodes`); a gang (``workers > 1``) is not one;
2. the first ``max_nodes`` of them that have waited at least ``wait_s`` seconds each *reserve* one home, in
   submission order: the one not reserved yet that drains earliest (its *drain time* ``max(d, now)``, ``d`` the
   latest end among the jobs placed on it, :class:`~fgdopt.policies.drain_fit.DrainTimes`; ties to the lowest
   index); that drain time is the reservation's time ``T``;
3. the job is offered to the inner policy on the state with the nodes reserved for jobs submitted before it
   (ties: earlier in input order) closed to it where it would end after their ``T`` (``now + work_s > T``): only
   what ends before the reservation backfills there. A job older than the whole-node job is never held back by it
   (so a blocking queue, whose head is the oldest job, never waits on a reservation behind it), nor is another
   whole-node job whose home the node is (the queue may put a younger job of the same shape first). A reserved
   node's drain time therefore never moves past ``T``, and the whole-node job finds it empty at ``T`` at the
   latest, unless the queue order starts it elsewhere first. A gang (its parts asked one by one,
   :func:`fgdopt.policies.gang.choose_parts`) is judged whole at its first part: refused unless its parts fit the
   nodes open to it together, and its later parts see the same nodes closed.

The bound: at most ``max_nodes`` nodes are reserved at once, and a job reserves only after ``wait_s`` seconds, so
the rest of the cluster stays open; ``max_nodes = 0`` (or ``wait_s = inf``) is the inner policy itself.

Feasibility stays the state's one rule: the inner policy sees a :class:`ClosedNodes` view of the state whose
:meth:`~ClosedNodes.feasible_nodes` is the state's mask with the closed nodes removed; the engine places the
choice through :meth:`~fgdopt.state.ClusterState.place` as any other. A job refused because only closed nodes hold
it is refused as a job that fits nowhere: the engine marks its shape unfit until a job leaves a node it fits
(:mod:`fgdopt.timeline.pending`).

The wrapper is *time-aware* (``job_aware = time_aware = True``: the engine tells it ``job``, ``now`` and
``work_s``) and learns what runs where from its own choices, which is exact when every choice starts at once, at
speed 1, and is never evicted (the offline problem: :func:`fgdopt.timeline.schedule.recorded_run`). It is built per
run from the jobs (one object per run: it keeps the run's drain times and waiting jobs), so it is not in the
policy registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fgdopt.model import GPU_MILLI, Task
from fgdopt.policies.base import Choice, Policy
from fgdopt.policies.drain_fit import DrainTimes
from fgdopt.state import ClusterState

if TYPE_CHECKING:
    from fgdopt.timeline.jobs import JobSet

RESERVE_WAIT_S = 600.0
"""Default ``wait_s``: seconds a whole-node job waits before it reserves a node."""
RESERVE_NODES = 4
"""Default ``max_nodes``: nodes reserved at once at most."""


class ClosedNodes:
    """A :class:`~fgdopt.state.ClusterState` seen with some nodes closed (read-only; every other attribute is the
    state's).

    Attributes
    ----------
    closed : bool (n_nodes,) or None: the nodes where nothing may be placed now (None: none).
    """

    def __init__(self, state: ClusterState):
        self._state = state
        self.closed: np.ndarray | None = None

    def __getattr__(self, name: str):
        return getattr(self._state, name)

    def feasible_nodes(self, task: Task) -> np.ndarray:
        """The state's :meth:`~fgdopt.state.ClusterState.feasible_nodes` without the closed nodes."""
        ok = self._state.feasible_nodes(task)
        return ok if self.closed is None else ok & ~self.closed

    def fits(self, task: Task, node: int) -> bool:
        """Whether ``task`` fits ``node`` now and the node is open."""
        return (self.closed is None or not self.closed[node]) and self._state.fits(task, node)


class Reserving:
    """Bounded reservations for whole-node jobs around an inner policy (module docstring).

    Parameters
    ----------
    policy : the inner placement policy (any; a job-aware or time-aware one is told what it asks for).
    jobs : the run's :class:`~fgdopt.timeline.jobs.JobSet` (shapes and ``submit_s``, seconds).
    wait_s : seconds a whole-node job waits before it reserves (>= 0; ``inf``: never).
    max_nodes : nodes reserved at once at most (int >= 0).

    Raises
    ------
    ValueError : ``wait_s`` negative or NaN, ``max_nodes`` negative or not an integer (one line naming it).
    """

    job_aware = True
    time_aware = True

    def __init__(self, policy: Policy, jobs: JobSet, *, wait_s: float = RESERVE_WAIT_S,
                 max_nodes: int = RESERVE_NODES):
        check_bounds(wait_s, max_nodes)
        self.policy, self.wait_s, self.max_nodes = policy, float(wait_s), int(max_nodes)
        self.name = f"{getattr(policy, 'name', type(policy).__name__)}+reserve"
        self.inner_job_aware = getattr(policy, "job_aware", False)
        self.inner_time_aware = self.inner_job_aware and getattr(policy, "time_aware", False)
        self.submit = np.asarray(jobs.submit_s, dtype=np.float64)
        self.tasks = jobs.tasks
        self.drain = DrainTimes()
        self.view: ClosedNodes | None = None
        self.homes: dict[int, np.ndarray] = {}            # whole-node job -> its homes
        self.order = np.zeros(0, dtype=np.int64)          # the whole-node jobs in submission order
        self.arrived = 0                                  # how many of them are submitted by now
        self.waiting: list[int] = []                      # submitted, not placed, in submission order
        self.gang: tuple | None = None                    # the gang being placed: (job, now, closed, parts left)

    def _setup(self, state: ClusterState) -> None:
        """The whole-node jobs of the run on ``state.cluster`` and their homes; a fresh view of ``state``."""
        cluster, tasks = state.cluster, self.tasks
        empty = ClusterState(cluster, tasks)
        homes_of: dict[tuple, np.ndarray] = {}
        self.homes = {}
        for j in np.flatnonzero((tasks.gpu_milli == GPU_MILLI) & (tasks.num_gpu > 0)).tolist():
            task = tasks[j]
            key = (task.cpu_milli, task.memory_mib, task.num_gpu, task.gpu_spec, task.workers)
            if key not in homes_of:
                homes_of[key] = np.flatnonzero(empty.feasible_nodes(task) & (cluster.gpu == task.num_gpu))
            if len(homes_of[key]) and task.workers == 1:
                self.homes[j] = homes_of[key]
        ids = np.fromiter(self.homes, dtype=np.int64, count=len(self.homes))
        self.order = ids[np.lexsort((ids, self.submit[ids]))]
        self.arrived, self.waiting, self.gang = 0, [], None
        self.view = ClosedNodes(state)

    def reservations(self, now: float, drain: np.ndarray) -> dict[int, tuple[float, int]]:
        """The reservations at ``now`` (module docstring, steps 1-2): node -> (time ``T``, seconds; the job it is
        kept for), given every node's drain time ``drain`` (seconds)."""
        order, submit = self.order, self.submit
        while self.arrived < len(order) and submit[order[self.arrived]] <= now:
            self.waiting.append(int(order[self.arrived]))
            self.arrived += 1
        held: dict[int, tuple[float, int]] = {}
        for j in self.waiting[:self.max_nodes]:
            if now - submit[j] < self.wait_s:                 # in submission order: the later ones waited less
                break
            homes = self.homes[j]
            free = homes[~np.isin(homes, list(held))] if held else homes
            if len(free):
                node = int(free[np.argmin(drain[free])])
                held[node] = (float(drain[node]), j)
        return held

    def _held_back(self, job: int | None, owner: int, node: int) -> bool:
        """Whether ``owner``'s reservation of ``node`` holds ``job`` back (step 3): ``job`` was submitted after
        ``owner`` (ties: later in input order) and is no whole-node job whose home ``node`` is (an unknown job:
        held back)."""
        if job is None:
            return True
        if (self.submit[job], job) < (self.submit[owner], owner):
            return False
        return not (job in self.homes and node in self.homes[job])

    def __call__(self, state: ClusterState, task: Task, job: int | None = None, now: float = 0.0,
                 work_s: float = 0.0, **keywords) -> Choice | None:
        view = self.view
        if view is None or view._state is not state:
            self._setup(state)
            view = self.view
        drain = self.drain.of(state)
        end = now + work_s
        workers = int(self.tasks.workers[job]) if job is not None else 1
        later = workers > 1 and self.gang is not None and self.gang[:2] == (job, now)
        if later:                                       # a later part of a gang: the nodes closed at its first
            view.closed = self.gang[2]
        else:
            view.closed = None
            if self.max_nodes:
                held = self.reservations(now, np.maximum(drain, now))
                shut = [node for node, (t, owner) in held.items() if end > t and self._held_back(job, owner, node)]
                if shut:
                    view.closed = np.zeros(state.cluster.n_nodes, dtype=bool)
                    view.closed[shut] = True
            if workers > 1 and view.closed is not None and \
                    state.part_counts(self.tasks[job])[~view.closed].sum() < workers:
                return None                             # the gang's parts do not fit the open nodes together
        if self.inner_time_aware:
            choice = self.policy(view, task, job=job, now=now, work_s=work_s, **keywords)
        elif self.inner_job_aware:
            choice = self.policy(view, task, job=job)
        else:
            choice = self.policy(view, task)
        if choice is not None:
            self.drain.record(int(choice[0]), end)
            if job in self.homes and job in self.waiting:
                self.waiting.remove(job)
            if workers > 1:                             # the parts still to choose, with the same nodes closed
                left = (self.gang[3] if later else workers) - 1
                self.gang = (job, now, view.closed, left) if left else None
        return choice


def check_bounds(wait_s: float, max_nodes: int) -> None:
    """Raise ValueError (one line naming the parameter) unless ``wait_s >= 0`` (seconds, ``inf`` allowed) and
    ``max_nodes`` is an integer >= 0."""
    if not (isinstance(wait_s, int | float) and wait_s >= 0):          # NaN fails too
        raise ValueError(f"reservation wait_s must be a number of seconds >= 0 (inf: never), got {wait_s!r}")
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int | np.integer) or max_nodes < 0:
        raise ValueError(f"reservation max_nodes must be an integer >= 0, got {max_nodes!r}")

