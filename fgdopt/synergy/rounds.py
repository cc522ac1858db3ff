"""Synergy's round-based, resource-sensitive allocation as a round policy of fgdopt's time engine.

:class:`Synergy` decides each round of the engine's round loop (:class:`fgdopt.timeline.rounds.RoundLoop` with
``grid=True``, which owns the round clock, the stop rule and the placement of a decision; :func:`run_synergy`). It
follows Synergy's simulator (``msr-fiddle/synergy`` at commit 1bb2bed6, ``simulator/``:
``schedulers/{fifo,srtf,las,ftf}_synergy_new.py``, ``resources/cluster.py``, ``jobs/job.py``,
``events/*.py``) for its default cluster of 16 servers of 8 GPUs, 24 CPU cores, 500 GB DRAM, 500 MB/s storage:

* **Rounds (leases).** At every multiple of ``round_s`` (300 s) every job present is deallocated and the round is
  decided from scratch (an arrival on an empty cluster waits for the next multiple): lease ends are handled before
  the schedule, arrivals at the instant are in it. A job that finishes inside a round holds its GPUs to the round's
  end (Synergy counts it done then).
* **Order.** FIFO by arrival; SRTF by remaining time (iterations left x seconds per iteration, divided by the
  speed-up the job had in the last round unless ``+fair``); LAS by attained service (rounds held x round x GPUs);
  FTF by ``(now - arrival + remaining) / ideal duration``. A job not run for 1,000 h gets priority 1 (sorted
  first). Ties: arrival order.
* **Allocation.** In that order, a job whose GPUs are free takes them:
  ``+fair``: the GPU-proportional share (3 cores, 62.5 GB, 62.5 MB/s per GPU), first fit over the free GPUs in
  server order; speed 1. ``+greedy``: its whole demand (its profile's ``cpus``, ``mem``, ``speed`` per GPU), first
  fit, else it is skipped this round; speed = its speed-up. ``+tune`` (Synergy-Tune): its whole demand if it fits;
  else the proportional share (speed 1) if it fits; else the server with the fewest free GPUs is freed by moving
  jobs that hold more than their proportional share down to it (``Cluster._reallocate_peer``: they lose the
  speed-up for the round), and the job takes the proportional share.
* **Progress.** A job run in a round at speed ``s`` does ``floor(round_s / (iter_time / s))`` iterations of its
  total (Synergy's ``Job.allocate``); on the engine it runs the round at the rate that does exactly that work
  (work in seconds at speed 1 = iterations x ``iter_time``), or, in its last round, finishes at the round's end.
  Synergy charges nothing for a change of allocation between rounds (no restart delay in its simulator), and
  neither does this policy (transparent checkpointing, restart 0).

Each round is decided on a :class:`~fgdopt.state.ClusterState` of the servers (the engine's nodes, 24 cores and
500 GB each), empty at the round's start: every job's GPUs and the CPU (milli-cores) and memory (MiB) it gets in
the round are placed there with the demand chosen (``ClusterState.place(..., demand=)``, ``place_parts(...,
demands=)``: the whole demand, the proportional share, a peer moved down to it), so the state's one rule is what
refuses an allocation that does not fit; Synergy's first fit, its underutilized servers and its peers to shrink
(:func:`first_fit`, :func:`underutilized`, :func:`peers_to_shrink`) read the state. Storage is held as memory
(equal in every Synergy profile) and network never binds (:func:`per_gpu_demand`).

The decision (:class:`~fgdopt.timeline.rounds.Decision`: each job's parts and the CPU and memory of each part) is
carried out on the engine's own state by the round loop, so the engine's tasks hold, round after round, exactly the
GPUs, CPU and memory the round's state gave them, judged by the same rule: a job kept on its GPUs with another CPU
and memory runs on, resized; one moved is stopped and placed again (transparently, at no cost, as in Synergy). A job
Synergy splits over servers (multi-GPU) is a task over several nodes of both states. The round is decided on a
state of its own because Synergy decides with every lease ended (all servers empty), while the engine's state holds
the last round's jobs until the decision is carried out; after it, the two agree (the tests check it every round).
:meth:`check` verifies after a run that no server's CPU, memory or GPUs went negative in any round and that the
engine did, for every job, exactly the work the rounds counted (progress conserved across every change of
allocation).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from fgdopt.model import GPU_MILLI, Task, TaskSet
from fgdopt.state import ClusterState, fitting_gpus
from fgdopt.timeline.rounds import Decision, Pace, Placed, RoundLoop, RoundView

ROUND_S = 300.0
"""Synergy's round (lease) length, seconds (``Runner.round_duration``)."""
STARVE_S = 1000 * 3600.0
"""A job not run for longer than this gets priority 1 (Synergy's schedulers), seconds."""
POLICIES = ("FIFO", "SRTF", "LAS", "FTF")
MODES = ("fair", "greedy", "tune")
FAIR_PER_GPU = (1.0, 3.0, 62.5, 62.5, 5.0)
"""GPU-proportional share per GPU of Synergy's server: GPU, CPU cores, GB, MB/s, Gbit/s (40 Gbit/s / 8)."""
SERVER_CAPACITY = (8, 24, 500.0, 500.0, 40.0)
CORE_MILLI = 1000
"""Milli-cores per CPU core."""
GB_MIB = 1024
"""MiB per GB of Synergy's memory (its 500 GB server: 512,000 MiB; its 62.5 GB share: 64,000 MiB)."""
FAIR_SHARE = (int(FAIR_PER_GPU[1] * CORE_MILLI), int(FAIR_PER_GPU[2] * GB_MIB))
"""The GPU-proportional share per GPU as the ledger holds it: milli-cores, MiB."""


def parse_policy(name: str) -> tuple[str, str]:
    """``"FIFO+tune"`` -> ("FIFO", "tune"); ValueError naming a bad one."""
    base, _, mode = name.partition("+")
    if base not in POLICIES or mode not in MODES:
        raise ValueError(f"policy {name!r}: expected one of {', '.join(POLICIES)} then +fair, +greedy or +tune")
    return base, mode


@dataclass
class Synergy:
    """Synergy's round policy (module docstring) for the jobs of :func:`fgdopt.synergy.jobs.synergy_jobs`: the
    decisions of a :class:`~fgdopt.timeline.rounds.RoundLoop` with ``grid=True`` (:func:`run_synergy`).

    Parameters
    ----------
    policy : ``FIFO|SRTF|LAS|FTF`` ``+fair|+greedy|+tune`` (Synergy's names).
    submit_s, gpus, cpus, mem_gb, sspeed, speedup, iter_time_s, iterations : per job (the workload's columns).
    servers : number of servers (16).
    log_every : keep every this many rounds' allocation in ``round_log`` (0: none): (time, {job: (speed, (CPU
        cores, GB) held)}), for Synergy-OPT's bound (:mod:`formulations.synergy`).

    The round length is the loop's (:data:`ROUND_S` is Synergy's). After a round, ``state`` is the
    :class:`~fgdopt.state.ClusterState` it was decided on (what each job holds: ``state.held_demand(job)``).
    """

    policy: str
    submit_s: np.ndarray
    gpus: np.ndarray
    demand: np.ndarray                  # (n, 5): GPUs, CPU cores, GB, MB/s, 0 (Synergy's demand vector)
    speedup: np.ndarray
    iter_time_s: np.ndarray
    iterations: np.ndarray
    servers: int = 16
    name: str = "synergy"
    gpu_types: tuple[str, ...] = ("V100",)       # the model of every node of :func:`synergy_cluster`
    min_free: np.ndarray | None = None           # lowest free GPUs, CPU cores, GB over servers and rounds
    round_log: list = field(default_factory=list)  # logged rounds: (time, {job: (speed, (cpus, GB))})
    log_every: int = 0
    _rate: dict = field(default_factory=dict)
    _alloc: dict = field(default_factory=dict)    # the round decided last: job -> (its parts, speed)
    _last: tuple | None = None                    # (its jobs in order, state, speeds, speed_now of its jobs)

    def __post_init__(self) -> None:
        self.base, self.mode = parse_policy(self.policy)
        n = len(self.submit_s)
        self.executed = np.zeros(n, dtype=np.int64)
        self.attained_s = np.zeros(n)
        self.speed_now = np.asarray(self.speedup, dtype=np.float64).copy()
        self.last_exec = np.full(n, -1.0)
        self.prio = np.zeros(n, dtype=np.int64)
        self.finished = np.zeros(n, dtype=bool)
        self.ledger_work_s = np.zeros(n)
        self._arrived = 0
        self._live: list[int] = []
        self._order = np.argsort(self.submit_s, kind="stable")
        self.min_free = np.array(SERVER_CAPACITY[:3], dtype=np.float64)
        self._per_gpu = per_gpu_demand(self.gpus, self.demand)
        zeros = np.zeros(n, dtype=np.int64)
        jobs = TaskSet(zeros, zeros,  # the rounds' jobs: their GPUs (CPU, memory chosen at each placement)
                       np.asarray(self.gpus, dtype=np.int64), np.full(n, GPU_MILLI, dtype=np.int64))
        self._empty = ClusterState(synergy_cluster(self.servers), jobs)

    # ----------------------------------------------------------------------------------------------- engine side
    def decide(self, view: RoundView) -> Decision:
        """The round's jobs, each on its servers' GPUs (one part, or its parts over several servers) holding the
        CPU and memory the round gave each part (module docstring)."""
        self._alloc = alloc = self.allocate(view.now, view.rounds)
        state = self.state
        return Decision(where={j: parts[0] if len(parts) == 1 else parts for j, (parts, _) in alloc.items()},
                        demands={j: state.held_demand(j) for j in alloc})

    def pace(self, view: RoundView, placed: Placed) -> Pace:
        """Each run's rate for the round (the work of its iterations in the round), the round's progress booked."""
        now, round_s = view.now, view.round_s
        admitted = {m.task for m in placed.admits}
        rates = []
        work_s = view.engine.work_s
        for j, (_, speed) in self._alloc.items():
            it = float(self.iter_time_s[j])
            iters = self._progress(j, speed, round_s)
            if self.executed[j] + iters >= self.iterations[j]:        # done in this round: finish at its end
                rate = max(float(self.iterations[j]) * it - float(work_s[j]), 0.0) / (round_s - 1e-6)
            else:
                rate = iters * it / round_s
            if j in admitted or self._rate.get(j) != rate:
                rates.append((j, rate))
            self._rate[j] = rate
        self._lease_end(now, self._alloc, round_s)
        return Pace(now + round_s, tuple(rates))

    def _progress(self, j: int, speed: float, round_s: float) -> int:
        """Iterations job ``j`` does in a round of ``round_s`` at ``speed`` (Synergy's ``floor(time / (iter_time /
        speedup))``), capped at what it has left."""
        iters = math.floor(round_s / (float(self.iter_time_s[j]) / speed))
        return int(min(iters, self.iterations[j] - self.executed[j]))

    def _lease_end(self, now: float, alloc: dict, round_s: float) -> None:
        """The round's progress, attained service and completions (Synergy's ``Job.allocate`` and lease end)."""
        end = now + round_s
        for j, (_, speed) in alloc.items():
            iters = self._progress(j, speed, round_s)
            self.executed[j] += iters
            self.ledger_work_s[j] += iters * float(self.iter_time_s[j])
            self.attained_s[j] += round_s
            self.last_exec[j] = end
            if self.executed[j] >= self.iterations[j]:
                self.finished[j] = True

    # ----------------------------------------------------------------------------------------------- Synergy side
    def _present(self, now: float) -> list[int]:
        """Jobs arrived by ``now`` and not finished, in arrival order (Synergy's ``runnable_jobs``)."""
        while self._arrived < len(self._order) and self.submit_s[self._order[self._arrived]] <= now:
            self._live.append(int(self._order[self._arrived]))
            self._arrived += 1
        self._live = [j for j in self._live if not self.finished[j]]
        return self._live

    def _sorted(self, jobs: list[int], now: float) -> list[int]:
        fair = self.mode == "fair"
        it, total = self.iter_time_s, self.iterations

        def remaining(j):
            r = float(it[j]) * float(total[j] - self.executed[j])
            return r if fair else r / self.speed_now[j]

        keys = {
            "FIFO": lambda j: self.submit_s[j],
            "SRTF": lambda j: (-self.prio[j], remaining(j), self.submit_s[j]),
            "LAS": lambda j: (-self.prio[j], self.attained_s[j] * self.gpus[j], self.submit_s[j]),
            "FTF": lambda j: (-self.prio[j], (now - self.submit_s[j] + remaining(j)) / (float(it[j]) * float(total[j])),
                              self.submit_s[j]),
        }
        key = keys[self.base]
        return sorted(jobs, key=key)

    def allocate(self, now: float, rounds: int) -> dict[int, tuple[tuple[tuple[int, tuple[int, ...]], ...], float]]:
        """One round at ``now`` (``rounds`` so far): job -> (its parts ``((server, its GPUs there), ...)``, speed) for
        every job that runs. The round is decided on an empty :class:`~fgdopt.state.ClusterState` of the servers
        (every job deallocated): each job's GPUs, CPU and memory are placed there, judged by its one rule."""
        jobs = self._sorted(self._present(now), now)
        key = tuple(jobs)
        if self._last is not None and self._last[0] == key:      # the same jobs in the same order: the same round
            _, state, speed, self.speed_now[jobs] = self._last
        else:
            self.speed_now[jobs] = np.asarray(self.speedup, dtype=np.float64)[jobs]
            state, speed = self._first_fits(jobs)
            self._last = (key, state, speed, self.speed_now[jobs])
        for j in jobs:
            last = self.last_exec[j] if self.last_exec[j] >= 0 else self.submit_s[j]
            if now - last > STARVE_S:
                self.prio[j] = 1
        low = (int(free_gpus(state).min()), int(state.cpu_left.min()) / CORE_MILLI, int(state.mem_left.min()) / GB_MIB)
        np.minimum(self.min_free, low, out=self.min_free)
        self.state = state
        if self.log_every and speed and rounds % self.log_every == 0:
            self.round_log.append((now, {j: (s, held(state, j)) for j, s in speed.items()}))
        return {j: (state.parts(j), s) for j, s in speed.items()}

    def _first_fits(self, jobs: list[int]) -> tuple[ClusterState, dict[int, float]]:
        """The round's state and speeds: each job of ``jobs`` in turn on the empty servers by the mode's rule. A
        function of ``jobs`` (their order) alone, with ``speed_now`` as set at the round's start."""
        state = self._empty.copy()
        schedule: list[list[int]] = [[] for _ in range(self.servers)]     # jobs placed on each server, in order
        speed: dict[int, float] = {}
        free = int(state.gpu_left.sum()) // GPU_MILLI                      # free GPUs in all
        for j in jobs:
            g = int(self.gpus[j])
            if free < g:
                continue
            if self.mode == "fair":
                if first_fit(state, j, FAIR_SHARE, g, schedule):
                    speed[j] = 1.0
            elif self.mode == "greedy":
                if first_fit(state, j, self._per_gpu[j], g, schedule):
                    speed[j] = float(self.speed_now[j])
            else:
                self._tune(j, state, speed, schedule)
            if j in speed:
                free -= g
        return state, speed

    def _share(self, j: int) -> tuple[int, int]:
        """Synergy's ``_make_fair_share``: the proportional share per GPU if the job's demand asks more than it
        anywhere (and its speed-up drops to 1), else its demand per GPU (milli-cores, MiB)."""
        per = self._per_gpu[j]
        if per[0] > FAIR_SHARE[0] or per[1] > FAIR_SHARE[1]:
            self.speed_now[j] = 1.0
            return FAIR_SHARE
        return per

    def _tune(self, j: int, state: ClusterState, speed: dict[int, float], schedule: list[list[int]]) -> None:
        """Synergy-Tune (``Cluster._tune``): whole demand, else proportional share, else free a server by moving
        peers above their share down to it."""
        g = int(self.gpus[j])
        if first_fit(state, j, self._per_gpu[j], g, schedule):
            speed[j] = float(self.speed_now[j])
            return
        per = self._share(j)
        if first_fit(state, j, per, g, schedule):       # Synergy tries twice before peers: the same answer
            speed[j] = float(self.speed_now[j])
            return
        for server, k in underutilized(state, g).items():
            for peer in peers_to_shrink(state, server, (per[0] * k, per[1] * k), schedule):
                parts = state.parts(peer)                  # moved to its share with no test in Synergy; in no
                state.remove(peer)                         # profile is a share above what the job held
                cpu, mem = self._share(peer)
                state.place_parts(peer, parts, demands=[(cpu * len(gpus), mem * len(gpus)) for _, gpus in parts])
                speed[peer] = 1.0
        if not first_fit(state, j, per, g, schedule):
            raise RuntimeError(f"Synergy-Tune: job {j} does not fit after freeing a server (Synergy exits here)")
        speed[j] = float(self.speed_now[j])

    def check(self, result) -> None:
        """Raise ``AssertionError`` unless no server's GPUs, CPU or memory went negative in any round (the state's
        rule refuses it; this re-reads its arrays) and the engine did, for every job, the work the rounds counted
        (progress conserved over allocation changes)."""
        if (self.min_free < 0).any():
            raise AssertionError(f"a server's free GPUs/cores/GB went negative: {self.min_free.tolist()}")
        if not np.allclose(result.work_s, self.ledger_work_s, rtol=1e-9, atol=1e-6):
            bad = np.flatnonzero(~np.isclose(result.work_s, self.ledger_work_s, rtol=1e-9, atol=1e-6))
            raise AssertionError(f"jobs {bad[:5].tolist()}: engine work differs from the rounds' progress")


def free_gpus(state: ClusterState) -> np.ndarray:
    """Free GPUs per server (int64; Synergy's jobs take whole GPUs)."""
    return (state.gpu_left == GPU_MILLI).sum(axis=1)


def first_fit(state: ClusterState, j: int, per: tuple[int, int], g: int, schedule: list[list[int]]) -> bool:
    """Synergy's ``_top_synergy_gpus``: job ``j`` on the first ``g`` free GPUs (server order, then GPU id) whose
    server still has ``per`` (milli-cores, MiB) per GPU with what earlier GPUs of the job take there, placed on
    ``state`` with that demand (``k x per`` on a server of ``k`` of its GPUs) and appended to ``schedule`` of its
    servers; False (nothing placed) if fewer.

    The GPUs a server can give are the state's :meth:`~fgdopt.state.ClusterState.part_counts` of a one-GPU part of
    ``per``: its free GPUs, its free CPU and memory over ``per``, whichever is least."""
    cpu, mem = per
    if g == 1:                                                 # one GPU: the first server that holds it
        fits = state.feasible_nodes(Task(cpu, mem, 1, GPU_MILLI))
        s = int(fits.argmax())
        if not fits[s]:
            return False
        state.place(j, s, (int(fitting_gpus(state.gpu_left[s], GPU_MILLI)[0]),), demand=(cpu, mem))
        schedule[s].append(j)
        return True
    counts = state.part_counts(Task(cpu, mem, 1, GPU_MILLI, workers=g))
    if int(counts.sum()) < g:
        return False
    parts, left = [], g
    for s in np.flatnonzero(counts).tolist():
        k = min(int(counts[s]), left)
        parts.append((s, tuple(fitting_gpus(state.gpu_left[s], GPU_MILLI)[:k].tolist())))
        left -= k
        if not left:
            break
    state.place_parts(j, parts, demands=[(cpu * len(gpus), mem * len(gpus)) for _, gpus in parts])
    for s, _ in parts:
        schedule[s].append(j)
    return True


def underutilized(state: ClusterState, g: int) -> dict[int, int]:
    """Synergy's ``_get_underutilized_servers``: server -> GPUs to free there (a multi-GPU job: the first server
    with ``g`` free GPUs; else the servers of fewest free GPUs, lowest index first, until they hold ``g``)."""
    count = free_gpus(state).tolist()
    if g > 1:
        for s, c in enumerate(count):
            if c >= g:
                return {s: g}
    heap = [(c, s) for s, c in enumerate(count) if c]
    heapq.heapify(heap)
    out: dict[int, int] = {}
    while g > 0 and heap:
        c, s = heapq.heappop(heap)
        if c >= g:
            out[s] = g
            return out
        out[s] = c
        g -= c
    return out


def peers_to_shrink(state: ClusterState, s: int, share: tuple[int, int], schedule: list[list[int]]) -> list[int]:
    """Synergy's ``_reallocate_peer``: the jobs on server ``s`` to move down to their proportional share so that
    ``share`` (milli-cores, MiB) fits there, by what each holds above its share on ``s`` (``schedule[s]`` is sorted
    in place, as Synergy's server job list: jobs on fewer servers first, then most CPU, then most memory per GPU).

    Synergy's rule runs over its five dimensions; GPUs and network never bind in it (the servers chosen have the
    GPUs, a job asks no network) and storage is memory's (equal demand and capacity), so its test skipping a job
    whose excess covers none of the need never holds and the need is CPU and memory's."""
    need = (max(0, share[0] - int(state.cpu_left[s])), max(0, share[1] - int(state.mem_left[s])))
    if need == (0, 0):
        return []

    def vector(j):                                  # (servers, -CPU per GPU, -memory per GPU) as Synergy sorts
        gpus = sum(len(g) for _, g in state.parts(j))
        cpu, mem = held_total(state, j)
        return len(state.parts(j)), -cpu / gpus, -mem / gpus

    jobs = schedule[s]
    jobs.sort(key=vector)
    out = []
    for j in jobs:
        gpus = sum(len(g) for _, g in state.parts(j))
        here = sum(len(g) for node, g in state.parts(j) if node == s)
        cpu, mem = held_total(state, j)
        excess = (max(0, cpu * here // gpus - FAIR_SHARE[0] * here), max(0, mem * here // gpus - FAIR_SHARE[1] * here))
        need = (max(0, need[0] - excess[0]), max(0, need[1] - excess[1]))
        out.append(j)
        if need == (0, 0):
            return out
    return out


def held_total(state: ClusterState, j: int) -> tuple[int, int]:
    """Milli-cores and MiB job ``j`` holds on all its servers."""
    parts = state.held_demand(j)
    return sum(c for c, _ in parts), sum(m for _, m in parts)


def held(state: ClusterState, j: int) -> tuple[float, float]:
    """CPU cores and GB job ``j`` holds in all."""
    cpu, mem = held_total(state, j)
    return cpu / CORE_MILLI, mem / GB_MIB


def per_gpu_demand(gpus: np.ndarray, demand: np.ndarray) -> list[tuple[int, int]]:
    """Each job's demand per GPU as the ledger holds it: (milli-cores, MiB) of ``demand`` (n, 5: GPUs, CPU cores,
    GB, MB/s, Gbit/s) over its GPUs.

    Synergy's arithmetic is on floats; its shares (a profile's cores and GB per GPU, or the proportional 3 cores,
    62.5 GB, times GPUs, over 1, 2, 4 or 8 GPUs) are whole milli-cores and MiB, so the ledger's integers give
    every comparison Synergy's floats give. Storage is held as memory, which it equals in every profile of Synergy
    (demand and the server's 500), and a job asks no network (the share's 5 Gbit/s per GPU never binds on 8 GPUs).

    Raises
    ------
    ValueError : naming the first job whose share per GPU is not whole milli-cores and MiB, whose storage
        differs from its memory, or that asks network."""
    gpus = np.asarray(gpus, dtype=np.int64)
    demand = np.asarray(demand, dtype=np.float64)
    cpu, mem = demand[:, 1] * CORE_MILLI / gpus, demand[:, 2] * GB_MIB / gpus
    bad = (cpu != np.floor(cpu)) | (mem != np.floor(mem)) | (demand[:, 3] != demand[:, 2]) | (demand[:, 4] != 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"job {k}: demand {demand[k].tolist()} on {int(gpus[k])} GPU(s) is not whole milli-cores "
                         "and MiB per GPU, storage equal to memory and no network")
    return list(zip(cpu.astype(np.int64).tolist(), mem.astype(np.int64).tolist(), strict=True))


def synergy_cluster(servers: int = 16):
    """The engine's cluster: ``servers`` nodes of 8 GPUs, 24 cores, 500 GB (the servers of :class:`Synergy`'s
    rounds; the engine's tasks hold the CPU and memory each round gives them)."""
    from fgdopt.model import Cluster
    cpu, mem = SERVER_CAPACITY[1] * CORE_MILLI, int(SERVER_CAPACITY[2] * GB_MIB)
    return Cluster([cpu] * servers, [mem] * servers, [SERVER_CAPACITY[0]] * servers, ["V100"] * servers)


def run_synergy(frame, policy: str, *, measured: np.ndarray | None = None, servers: int = 16,
                round_s: float = ROUND_S, log_every: int = 0):
    """Run the jobs of a Synergy workload (``SynergyJobs.frame``) under ``policy`` on the time engine.

    Parameters
    ----------
    frame : the workload's rows (:func:`fgdopt.synergy.jobs.synergy_jobs`).
    policy : Synergy's name, e.g. ``FIFO+tune``.
    measured : bool per job; the run stops at the first round after all of them finished, or after the last
        arrival (default: all jobs, no stop before they finish).
    servers, round_s : cluster size and round length (s).
    log_every : keep every this many rounds' allocation (``loop.policy.round_log``; for the bound and tests).

    Returns
    -------
    (TimelineResult, RoundLoop) : the engine's checked result and the round loop (its ``rounds`` and ``stopped_s``),
    whose ``policy`` is the :class:`Synergy` that decided (its ledger checked too).
    """
    from fgdopt.timeline import simulate
    from fgdopt.timeline.jobs import JobSet

    n = len(frame)
    gpus = frame["gpus"].to_numpy(dtype=np.int64)
    tasks = TaskSet(np.zeros(n, np.int64), np.zeros(n, np.int64), gpus, np.full(n, GPU_MILLI, np.int64),
                    names=tuple(str(x) for x in frame["name"]))     # CPU and memory: each round's (demands)
    work = frame["iterations"].to_numpy(dtype=np.float64) * frame["iter_time_s"].to_numpy(dtype=np.float64)
    measured = np.ones(n, dtype=bool) if measured is None else np.asarray(measured, dtype=bool)
    jobs = JobSet(tasks, frame["submit_s"].to_numpy(dtype=np.float64), work, measured=measured)
    demand = np.column_stack([gpus, frame["cpus"], frame["mem_gb"], frame["sspeed"], np.zeros(n)]).astype(np.float64)
    synergy = Synergy(policy, jobs.submit_s, gpus, demand, frame["speedup"].to_numpy(dtype=np.float64),
                      frame["iter_time_s"].to_numpy(dtype=np.float64), frame["iterations"].to_numpy(np.int64),
                      servers=servers, log_every=log_every)
    loop = RoundLoop(synergy, round_s=round_s, grid=True,
                     stop_after=np.flatnonzero(measured) if not measured.all() else None,
                     stop_by_s=float(jobs.submit_s.max()) if not measured.all() else math.inf)
    result = simulate(synergy_cluster(servers), jobs, "best-fit", "fifo", mechanism=loop,
                      restart_s=lambda g: 0.0, frag=False)
    synergy.check(result)
    return result, loop
