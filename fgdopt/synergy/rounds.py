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

CPU cores and memory are this policy's ledger (the engine's tasks ask for GPUs only); :meth:`check` verifies
after a run that no server's CPU, memory or GPUs went negative in any round and that the engine did, for every job,
exactly the work the ledger counted (progress conserved across every change of allocation). Multi-GPU jobs may be
split over servers by Synergy; with ``pooled=True`` the engine carries time and progress only (GPU-less tasks on
one node) and the GPUs, too, are the ledger's.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

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
    pooled : the engine holds no GPUs (multi-GPU jobs Synergy splits over servers).
    log_every : keep every this many rounds' allocation in ``round_log`` (0: none): (time, {job: (speed, (CPU
        cores, GB) held)}), for Synergy-OPT's bound (:mod:`formulations.synergy`).

    The round length is the loop's (:data:`ROUND_S` is Synergy's).
    """

    policy: str
    submit_s: np.ndarray
    gpus: np.ndarray
    demand: np.ndarray                  # (n, 5): GPUs, CPU cores, GB, MB/s, 0 (Synergy's demand vector)
    speedup: np.ndarray
    iter_time_s: np.ndarray
    iterations: np.ndarray
    servers: int = 16
    pooled: bool = False
    name: str = "synergy"
    gpu_types: tuple[str, ...] = ("V100",)       # the model of every node of :func:`synergy_cluster`
    min_free: np.ndarray | None = None           # lowest free GPU, CPU, GB, MB/s over servers and rounds
    round_log: list = field(default_factory=list)  # logged rounds: (time, {job: (speed, (cpus, GB))})
    log_every: int = 0
    _rate: dict = field(default_factory=dict)
    _alloc: dict = field(default_factory=dict)    # the round decided last: job -> ((server, GPUs), speed)

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
        self.min_free = np.array(SERVER_CAPACITY[:4], dtype=np.float64)

    # ----------------------------------------------------------------------------------------------- engine side
    def decide(self, view: RoundView) -> Decision:
        """The round's jobs, each on its first server's GPUs (pooled: on the engine's one node, no GPUs)."""
        self._alloc = self.allocate(view.now, view.rounds)
        return Decision(where={j: (0, ()) if self.pooled else placement
                               for j, (placement, _) in self._alloc.items()})

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

    def allocate(self, now: float, rounds: int) -> dict[int, tuple[tuple[int, tuple[int, ...]], float]]:
        """One round at ``now`` (``rounds`` so far): job -> ((server, its GPUs on it) of its first server, speed) for
        every job that runs."""
        jobs = self._sorted(self._present(now), now)
        self.speed_now[jobs] = np.asarray(self.speedup, dtype=np.float64)[jobs]
        ledger = _Servers(self.servers)
        speed: dict[int, float] = {}
        for j in jobs:
            g = int(self.gpus[j])
            if ledger.free_count >= g:
                if self.mode == "fair":
                    if ledger.first_fit(j, [x * g for x in FAIR_PER_GPU], g):
                        speed[j] = 1.0
                elif self.mode == "greedy":
                    if ledger.first_fit(j, list(self.demand[j]), g):
                        speed[j] = float(self.speed_now[j])
                else:
                    self._tune(j, ledger, speed)
            last = self.last_exec[j] if self.last_exec[j] >= 0 else self.submit_s[j]
            if now - last > STARVE_S:
                self.prio[j] = 1
        np.minimum(self.min_free, ledger.free[:, :4].min(axis=0), out=self.min_free)
        if self.log_every and speed and rounds % self.log_every == 0:
            self.round_log.append((now, {j: (s, ledger.held(j)) for j, s in speed.items()}))
        return {j: (ledger.first_placement(j), s) for j, s in speed.items()}

    def _fair_vector(self, j: int, vec: list[float]) -> list[float] | None:
        """Synergy's ``_make_fair_share``: the proportional share if ``vec`` asks more than it anywhere (and the
        job's speed-up drops to 1), else None."""
        g = int(self.gpus[j])
        if any(d > f * g for d, f in zip(vec, FAIR_PER_GPU, strict=True)):
            self.speed_now[j] = 1.0
            return [vec[0], FAIR_PER_GPU[1] * g, FAIR_PER_GPU[2] * g, FAIR_PER_GPU[3] * g, vec[4]]
        return None

    def _tune(self, j: int, ledger: _Servers, speed: dict[int, float]) -> None:
        """Synergy-Tune (``Cluster._tune``): whole demand, else proportional share, else free a server by moving
        peers above their share down to it."""
        g = int(self.gpus[j])
        vec = list(self.demand[j])
        if ledger.first_fit(j, vec, g):
            speed[j] = float(self.speed_now[j])
            return
        fair = self._fair_vector(j, vec)
        if fair is not None:
            vec = fair
        if ledger.first_fit(j, vec, g) or ledger.first_fit(j, vec, g):     # Synergy tries twice before peers
            speed[j] = float(self.speed_now[j])
            return
        for server, k in ledger.underutilized(g).items():
            share = [x * k / g for x in vec]
            for peer in ledger.peers_to_shrink(server, share):
                gpus_at = ledger.release(peer)
                peer_vec = list(self.demand[peer])
                peer_fair = self._fair_vector(peer, peer_vec)
                if peer_fair is not None:
                    peer_vec = peer_fair
                ledger.reassign(peer, gpus_at, peer_vec)
                speed[peer] = 1.0
        if not ledger.first_fit(j, vec, g):
            raise RuntimeError(f"Synergy-Tune: job {j} does not fit after freeing a server (Synergy exits here)")
        speed[j] = float(self.speed_now[j])

    def check(self, result) -> None:
        """Raise ``AssertionError`` unless no server's GPUs, CPU or memory went negative in any round and the
        engine did, for every job, the work this ledger counted (progress conserved over allocation changes)."""
        if (self.min_free < -1e-9).any():
            raise AssertionError(f"a server's free GPU/CPU/GB/MBps went negative: {self.min_free.tolist()}")
        if not np.allclose(result.work_s, self.ledger_work_s, rtol=1e-9, atol=1e-6):
            bad = np.flatnonzero(~np.isclose(result.work_s, self.ledger_work_s, rtol=1e-9, atol=1e-6))
            raise AssertionError(f"jobs {bad[:5].tolist()}: engine work differs from the rounds' progress")


class _Servers:
    """The round's ledger of Synergy's servers: free GPU count, CPU, GB, MB/s, Gbit/s per server, the free GPUs
    (server-major order, as Synergy's free-GPU list), and what each job holds where."""

    def __init__(self, n: int):
        self.free = np.tile(np.array(SERVER_CAPACITY, dtype=np.float64), (n, 1))
        self.free_gpus = [list(range(SERVER_CAPACITY[0])) for _ in range(n)]
        self.free_count = n * SERVER_CAPACITY[0]
        self.has_gpu = np.ones(n, dtype=bool)
        self.schedule: list[list[int]] = [[] for _ in range(n)]   # jobs placed on each server, in order
        self.alloc: dict[int, dict[int, list[float]]] = {}         # job -> server -> [gpu, cpu, mem, sspeed]
        self.gpus_of: dict[int, list[tuple[int, int]]] = {}

    def first_fit(self, j: int, vec: list[float], g: int) -> bool:
        """Synergy's ``_top_synergy_gpus``: the first ``g`` free GPUs (server order) whose server still has the
        per-GPU share ``vec / g`` with what earlier GPUs of this job hold; False (nothing taken) if fewer."""
        per = [x / vec[0] for x in vec]
        if g == 1:                                                 # one GPU: the first server that holds it
            fits = (self.free >= per).all(axis=1) & self.has_gpu
            if not fits.any():
                return False
            s = int(fits.argmax())
            self._take(j, [(s, self.free_gpus[s][0])], {s: per[:4]})
            self.schedule[s].append(j)
            return True
        hold = np.zeros_like(self.free)
        taken: list[tuple[int, int]] = []
        for s in range(len(self.free)):
            for gpu in self.free_gpus[s]:
                if all(self.free[s, r] - hold[s, r] >= per[r] for r in range(5)):
                    taken.append((s, gpu))
                    hold[s] += per
                    if len(taken) == g:
                        break
            if len(taken) == g:
                break
        if len(taken) < g:
            return False
        self._take(j, taken, {s: [per[r] * sum(1 for t in taken if t[0] == s) for r in range(4)]
                              for s in dict.fromkeys(t[0] for t in taken)})
        for s in dict.fromkeys(t[0] for t in taken):
            self.schedule[s].append(j)
        return True

    def _take(self, j: int, gpus: list[tuple[int, int]], res: dict[int, list[float]]) -> None:
        for s, gpu in gpus:
            self.free_gpus[s].remove(gpu)
            self.has_gpu[s] = bool(self.free_gpus[s])
        self.free_count -= len(gpus)
        for s, r in res.items():
            self.free[s, :4] -= r
        self.alloc[j], self.gpus_of[j] = res, gpus

    def release(self, j: int) -> list[tuple[int, int]]:
        """Deallocate ``j`` (its GPUs go back); its GPUs."""
        gpus = self.gpus_of.pop(j)
        for s, r in self.alloc.pop(j).items():
            self.free[s, :4] += r
        for s, gpu in gpus:
            self.free_gpus[s].append(gpu)
            self.free_gpus[s].sort()
            self.has_gpu[s] = True
        self.free_count += len(gpus)
        return gpus

    def reassign(self, j: int, gpus: list[tuple[int, int]], vec: list[float]) -> None:
        """Give ``j`` its GPUs back with ``vec`` split over its servers by GPU share (Synergy's peer re-allocation,
        no fit test)."""
        g = len(gpus)
        res = {}
        for s in dict.fromkeys(t[0] for t in gpus):
            share = sum(1 for t in gpus if t[0] == s) / g
            res[s] = [x * share for x in vec[:4]]
        self._take(j, gpus, res)

    def underutilized(self, g: int) -> dict[int, int]:
        """Synergy's ``_get_underutilized_servers``: server -> GPUs to free there."""
        if g > 1:
            for s in range(len(self.free)):
                if self.free[s, 0] >= g:
                    return {s: g}
        heap = [(len(f), s) for s, f in enumerate(self.free_gpus) if f]
        heapq.heapify(heap)
        out: dict[int, int] = {}
        while g > 0 and heap:
            count, s = heapq.heappop(heap)
            if count >= g:
                out[s] = g
                return out
            out[s] = count
            g -= count
        return out

    def peers_to_shrink(self, s: int, share: list[float]) -> list[int]:
        """Synergy's ``_reallocate_peer``: the jobs on server ``s`` to move down to their proportional share."""
        need = [max(0.0, d - a) for d, a in zip(share, self.free[s], strict=True)]
        if all(v == 0 for v in need):
            return []

        def vector(j):
            gpus = len(self.gpus_of[j])
            return [gpus, *(sum(r[i] for r in self.alloc[j].values()) for i in (1, 2, 3)), 0.0]

        jobs = self.schedule[s]
        jobs.sort(key=lambda j: (len(self.alloc[j]), -vector(j)[1] / vector(j)[0], -vector(j)[2] / vector(j)[0]))
        out = []
        for j in jobs:
            here = sum(1 for t in self.gpus_of[j] if t[0] == s)
            vec = vector(j)
            fair = [x * here for x in FAIR_PER_GPU]
            mine = [x * here / vec[0] for x in vec]
            excess = [max(0.0, a - f) for a, f in zip(mine, fair, strict=True)]
            diff = [max(0.0, n - e) for e, n in zip(excess, need, strict=True)]
            if all(v == 0 for v in diff):
                out.append(j)
                return out
            if all(v > 0 for v in diff):
                continue
            out.append(j)
            need = diff
        return out

    def first_placement(self, j: int) -> tuple[int, tuple[int, ...]]:
        """(server, GPUs there) of the job's first server (single-server jobs: all of it)."""
        gpus = self.gpus_of[j]
        s = gpus[0][0]
        return s, tuple(sorted(gpu for srv, gpu in gpus if srv == s))

    def held(self, j: int) -> tuple[float, float]:
        """CPU cores and GB ``j`` holds in all."""
        return (sum(r[1] for r in self.alloc[j].values()), sum(r[2] for r in self.alloc[j].values()))


def synergy_cluster(servers: int = 16, pooled: bool = False):
    """The engine's cluster: ``servers`` nodes of 8 GPUs (24 cores, 500 GB: the ledger's, the engine's tasks ask
    none), or with ``pooled`` one GPU-less node (the engine carries time and progress only)."""
    from fgdopt.model import Cluster
    if pooled:
        return Cluster([24_000], [512_000], [0], ["V100"])
    return Cluster([24_000] * servers, [512_000] * servers, [SERVER_CAPACITY[0]] * servers, ["V100"] * servers)


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
    from fgdopt.model import TaskSet
    from fgdopt.timeline import simulate
    from fgdopt.timeline.jobs import JobSet

    n = len(frame)
    gpus = frame["gpus"].to_numpy(dtype=np.int64)
    pooled = bool((gpus > 1).any())
    tasks = TaskSet(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64) if pooled else gpus,
                    np.zeros(n, np.int64) if pooled else np.full(n, 1000, np.int64),
                    names=tuple(str(x) for x in frame["name"]))
    work = frame["iterations"].to_numpy(dtype=np.float64) * frame["iter_time_s"].to_numpy(dtype=np.float64)
    measured = np.ones(n, dtype=bool) if measured is None else np.asarray(measured, dtype=bool)
    jobs = JobSet(tasks, frame["submit_s"].to_numpy(dtype=np.float64), work, measured=measured)
    demand = np.column_stack([gpus, frame["cpus"], frame["mem_gb"], frame["sspeed"], np.zeros(n)]).astype(np.float64)
    synergy = Synergy(policy, jobs.submit_s, gpus, demand, frame["speedup"].to_numpy(dtype=np.float64),
                      frame["iter_time_s"].to_numpy(dtype=np.float64), frame["iterations"].to_numpy(np.int64),
                      servers=servers, pooled=pooled, log_every=log_every)
    loop = RoundLoop(synergy, round_s=round_s, grid=True,
                     stop_after=np.flatnonzero(measured) if not measured.all() else None,
                     stop_by_s=float(jobs.submit_s.max()) if not measured.all() else math.inf)
    result = simulate(synergy_cluster(servers, pooled), jobs, "best-fit", "fifo", mechanism=loop,
                      restart_s=lambda g: 0.0, frag=False)
    synergy.check(result)
    return result, loop
