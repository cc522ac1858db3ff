"""Gandiva-Fair on the time engine: fair shares of cluster-wide GPU time between users, quantum by quantum.

Built from the paper (Chaudhary, Ramjee, Sivathanu, Kwatra, Viswanatha, "Balancing Efficiency and Fairness in
Heterogeneous GPU Clusters for Deep Learning", EuroSys'20; no public code). :class:`GandivaFair` is a round policy
(:class:`fgdopt.timeline.rounds.RoundPolicy`) of the engine's one round loop, whose round is the quantum:
``simulate(..., mechanism=GandivaFair(...).loop(quantum_s))`` (:meth:`GandivaFair.loop`; 360 s by default, Gavel's
round). At the start of every quantum it decides which jobs run where for the quantum, and the loop carries the
decision out. What it decides, in order:

1. **Shares** (section 3). The users with jobs present share the cluster by tickets: user ``u``'s GPUs are the
   max-min fair shares by tickets under the GPUs its jobs demand (:func:`fgdopt.fairshare.shares.water_fill`), split
   over the GPU types in proportion to their GPUs: its fair share ``fair[u, t]``.
2. **Trading** (section 5; ``trading=True``). Users trade fast-GPU share for slow-GPU share by their speedups
   (:func:`fgdopt.fairshare.trading.trade_shares`, at ``price_point`` between the two speedups): the shares
   ``share[u, t]``. A user's throughput per GPU of a type is the mean speed there of its jobs present (Gavel's
   throughputs over the V100's, as :meth:`fgdopt.hetero.jobs.HeteroJobs.to_jobset` gives them).
3. **Pools.** Each GPU type is a pool, and a user's tickets in a pool are its share there. New jobs are put in
   pools, those whose speeds differ most between types first: each in the pool where it runs fastest among those
   where its user's share is not yet covered by the GPUs of its jobs there, else where its user's share is largest
   per GPU demanded. When the shares move, a user's job moves (a migration) from a pool where its jobs demand more
   than its share by at least the job's GPUs to one where they demand less by as much: the job that gains most
   from the move. Within a pool, each job holds its user's tickets there in proportion to its GPUs.
4. **Split, gang-aware stride** (section 4.1). In a pool, *small* jobs (that fit one server) have a home server,
   whose local stride scheduler time-slices them (:func:`fgdopt.fairshare.stride.gang_stride`); *large* jobs (more
   GPUs than a server) belong to the central scheduler. Each quantum the central scheduler goes first: its jobs by
   increasing pass, each takes whole servers (as many as it needs) among those whose local jobs all have a larger
   pass than it (its turn has come there too: the servers most ahead first, ties by index), or waits; the local
   schedulers then fill the servers left. Passes are in one unit across the pool (GPU-quanta over tickets), so a
   large job gets its tickets' share like the others; a new job starts at the least pass of the jobs it joins. A
   large job runs at its speed on its type (Gavel's consolidated throughput: no slowdown for spanning servers).
5. **Load balancing by migration** (section 4.2). The local schedulers are fair to their own jobs only; the users'
   cluster-wide shares hold when every server carries the same tickets per GPU. A new small job goes to the local
   server of least ticket load per GPU after it joins; then, while the most and least loaded servers of a pool
   differ by more than ``balance_tol`` of the mean load, the job of the most loaded server whose move to the least
   loaded one narrows their gap most migrates there (the pass of a migrated job is carried over relative to the
   least pass of each server's jobs, as is a new job's).

A job that keeps its servers keeps running on its GPUs; every other running job is stopped for the quantum
(checkpointed transparently: time slicing is suspend and resume); a chosen job is placed on its server's free GPUs,
lowest first (a large job over its whole servers, a :class:`~fgdopt.timeline.preemption.GangMove`): a decision by
node and GPUs (:class:`~fgdopt.timeline.rounds.Decision` ``where``) whose diff the loop carries out. A job that
finishes early leaves its GPUs idle until the quantum ends (the next starts when its time is up); when the last job
present finishes and none waits, the quantum ends there (:meth:`GandivaFair.ended`).

After each quantum, :attr:`GandivaFair.log` holds a :class:`Quantum`: what every user received (GPU-seconds and
work done per type, from the engine's own accounts) against its fair share and its traded share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from fgdopt.fairshare.shares import check_tickets, water_fill
from fgdopt.fairshare.stride import advance, gang_stride
from fgdopt.fairshare.trading import Trade, trade_shares
from fgdopt.timeline.preemption import View
from fgdopt.timeline.rounds import Decision, Pace, Placed, RoundLoop, RoundView

CENTRAL = -2
"""The home of a large job: the central scheduler."""
QUANTUM_S = 360.0
"""Default quantum, seconds (Gavel's round; the paper time-slices at the granularity of minutes)."""


@dataclass(frozen=True)
class Quantum:
    """One quantum of a :class:`GandivaFair` run (users by index, types in ``gpu_types`` order).

    Attributes
    ----------
    start_s, end_s : the quantum, seconds.
    gpu_s : float64 (U, K), GPU-seconds each user's jobs ran on each type (held GPUs times run seconds).
    work_s : float64 (U, K), work each user's jobs did there: each job's progress (seconds at speed 1) times its
        GPUs, so GPU-seconds at speed 1 (V100-seconds for Gavel's jobs, whose speed 1 is the V100's).
    fair : float64 (U, K), the fair shares (GPUs) at the quantum's start. share : the shares after trading (GPUs).
    value : float64 (U, K), each user's speed per GPU on each type at the start (0: no job present).
    trades : the trades made at the start.
    """

    start_s: float
    end_s: float
    gpu_s: np.ndarray
    work_s: np.ndarray
    fair: np.ndarray
    share: np.ndarray
    value: np.ndarray
    trades: tuple[Trade, ...]


@dataclass
class GandivaFair:
    """Gandiva-Fair's scheduler (module docstring), a :class:`~fgdopt.timeline.rounds.RoundPolicy`: run it as
    :meth:`loop`.

    Parameters
    ----------
    user : int (n,), every job's user (index into ``tickets``).
    tickets : float (U,), every user's tickets (>= 0, sum > 0).
    speed : ``{gpu type: float (n,)}``, every job's speed per type, as given to ``simulate`` (0: does not run there).
    gpu_types : the cluster's GPU types (node ``model`` values), in the order of preference on ties.
    trading : whether users trade shares (section 5).
    price_point : where the price lies between the two speedups, in (0, 1).
    balance_tol : the spread of ticket load per GPU among a pool's local servers, relative to its mean, above which
        jobs migrate (section 4.2).

    After a run, ``log`` holds a :class:`Quantum` per quantum and ``migrations`` counts the moves between pools and
    servers (docstring 3 and 5).
    """

    user: np.ndarray
    tickets: np.ndarray
    speed: Mapping[str, np.ndarray]
    gpu_types: tuple[str, ...]
    trading: bool = True
    price_point: float = 0.5
    balance_tol: float = 0.1
    name: str = "gandiva-fair"
    log: list = field(default_factory=list)
    migrations: int = 0
    _layout: tuple | None = None

    def __post_init__(self) -> None:
        self.tickets = check_tickets(self.tickets)
        self.user = np.asarray(self.user, dtype=np.int64)
        if (bad := np.flatnonzero((self.user < 0) | (self.user >= len(self.tickets)))).size:
            raise ValueError(f"job {int(bad[0])}: user {self.user[bad[0]]} has no tickets "
                             f"(users 0..{len(self.tickets) - 1})")
        self.gpu_types = tuple(self.gpu_types)
        self._thr = np.column_stack([np.asarray(self.speed[g], dtype=np.float64) for g in self.gpu_types])
        n = len(self.user)
        self._pool = np.full(n, -1, dtype=np.int64)       # per job: its GPU type (-1: none yet)
        self._home = np.full(n, -1, dtype=np.int64)       # its home server (-1: none; CENTRAL: a large job)
        self._pass = np.zeros(n)                          # its stride pass
        none = np.zeros(0, np.int64)
        self._ran = (none, np.zeros(0), np.zeros(0), none)  # the quantum's jobs, their run s and work s, their types
        self._started = (0.0, None, None, None, ())       # the current quantum: start, fair, share, value, trades

    # -- the cluster ---------------------------------------------------------------------------------------------
    def _pools(self, cluster) -> tuple[list[np.ndarray], np.ndarray]:
        """Per pool its nodes (ascending), per node its GPUs (once per cluster)."""
        if self._layout is None or self._layout[0] is not cluster:
            model = list(cluster.model)
            nodes = [np.array([k for k, m in enumerate(model) if m == g], dtype=np.int64) for g in self.gpu_types]
            self._layout = (cluster, nodes, np.asarray(cluster.gpu, dtype=np.int64))
        return self._layout[1], self._layout[2]

    def loop(self, quantum_s: float = QUANTUM_S) -> RoundLoop:
        """This scheduler on the engine's round loop: a mechanism for :func:`fgdopt.timeline.simulate` whose round is
        the quantum, ``quantum_s`` seconds (> 0), jobs stopped transparently, a large job over several servers."""
        return RoundLoop(self, round_s=quantum_s, span=True)

    # -- one quantum ---------------------------------------------------------------------------------------------
    def decide(self, view: RoundView) -> Decision:
        """The quantum that starts now: the one that ends now logged, then the jobs that run and where (module
        docstring 1-5)."""
        engine, now, ids = view.engine, view.now, view.present
        state = engine.state
        self._account(engine)
        self._pool[view.gone], self._home[view.gone] = -1, -1
        if not len(ids):
            self._ran = (ids, np.zeros(0), np.zeros(0), ids)
            self._started = (now, None, None, None, ())
            return Decision(where={})
        nodes, node_gpus = self._pools(state.cluster)
        need = state.tasks.num_gpu.astype(np.int64)
        fair, share, value, trades = self._shares(ids, need, nodes, node_gpus)
        self._assign_pools(ids, need, share, nodes, node_gpus)
        tick = self._job_tickets(ids, need, share)
        runs = self._choose(ids, need, tick, nodes, node_gpus)
        js = np.fromiter(runs, np.int64, len(runs))
        self._ran = (js, engine.run_of(js), engine.work_of(js), self._pool[js])
        self._started = (now, fair, share, value, tuple(trades))
        return Decision(where=self._where(state, view.running, runs))

    def pace(self, view: RoundView, placed: Placed) -> Pace:
        """A quantum lasts one round (with no job present, none: the next arrival starts one)."""
        return Pace(view.now + view.round_s if len(view.present) else view.now)

    def ended(self, view: View) -> None:
        """Every job of the quantum has left and none waits: the quantum ends now (logged; else a run's last quantum
        would go unlogged, as the engine stops at the last finish)."""
        self._account(view)
        last = self._ran[0]
        self._started = (view.now, None, None, None, ())
        self._ran = (last[:0], np.zeros(0), np.zeros(0), last[:0])

    def _account(self, view: View) -> None:
        """Log the quantum that ends now (:class:`Quantum`), from the engine's run and work accounts."""
        js, run0, work0, types = self._ran
        start, fair, share, value, trades = self._started
        if fair is None:
            return
        n_users, k = len(self.tickets), len(self.gpu_types)
        gpu_s, work_s = np.zeros((n_users, k)), np.zeros((n_users, k))
        if len(js):
            need = view.state.tasks.num_gpu[js]
            np.add.at(gpu_s, (self.user[js], types), (view.run_of(js) - run0) * need)
            np.add.at(work_s, (self.user[js], types), (view.work_of(js) - work0) * need)
        self.log.append(Quantum(start, view.now, gpu_s, work_s, fair, share, value, trades))

    def _shares(self, ids, need, nodes, node_gpus):
        """The fair shares, the shares after trading, the users' speeds per type, the trades (module docstring 1-2)."""
        n_users, k = len(self.tickets), len(self.gpu_types)
        cap = np.array([node_gpus[n].sum() for n in nodes], dtype=np.float64)
        u = self.user[ids]
        demand = np.bincount(u, weights=need[ids], minlength=n_users)
        count = np.bincount(u, minlength=n_users)
        value = np.zeros((n_users, k))
        np.add.at(value, u, self._thr[ids])
        value /= np.maximum(count, 1)[:, None]
        total = water_fill(self.tickets, demand, cap.sum())
        fair = total[:, None] * (cap / cap.sum())[None, :]
        if not self.trading:
            return fair, fair, value, []
        share, trades = trade_shares(fair, value, demand, price_point=self.price_point)
        return fair, share, value, trades

    def _fits_pool(self, j: int, need: int, t: int, nodes, node_gpus) -> bool:
        return self._thr[j, t] > 0 and len(nodes[t]) > 0 and need <= node_gpus[nodes[t]].sum()

    def _assign_pools(self, ids, need, share, nodes, node_gpus) -> None:
        """Put new jobs in pools, and move jobs between pools where their users' shares moved (docstring 3)."""
        n_users, k = share.shape
        thr = self._thr
        demand = np.zeros((n_users, k))
        placed = ids[self._pool[ids] >= 0]
        np.add.at(demand, (self.user[placed], self._pool[placed]), need[placed])
        new = ids[self._pool[ids] < 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = thr[new].max(axis=1) / np.where(thr[new] > 0, thr[new], np.inf).min(axis=1)
        for j in new[np.lexsort((new, -spread))].tolist():      # the jobs that gain most from a type first
            u, g = int(self.user[j]), int(need[j])
            ok = [t for t in range(k) if self._fits_pool(j, g, t, nodes, node_gpus)]
            if not ok:
                continue
            open_ = [t for t in ok if share[u, t] - demand[u, t] > 0]
            t = max(open_, key=lambda t: (thr[j, t], -t)) if open_ else \
                max(ok, key=lambda t: (share[u, t] / (demand[u, t] + g), thr[j, t], -t))
            self._pool[j] = t
            demand[u, t] += g
        for u in np.unique(self.user[ids]).tolist():
            mine = ids[(self.user[ids] == u) & (self._pool[ids] >= 0)]
            for _ in range(len(mine)):
                gap = share[u] - demand[u]                       # > 0: share its jobs do not cover
                best = None
                for j in mine.tolist():
                    g, t0 = int(need[j]), int(self._pool[j])
                    if -gap[t0] < g:
                        continue
                    for t1 in range(k):
                        if gap[t1] >= g and self._fits_pool(j, g, t1, nodes, node_gpus):
                            key = (thr[j, t1] / thr[j, t0], gap[t1], -j, -t1)
                            if best is None or key > best[0]:
                                best = (key, j, t0, t1)
                if best is None:
                    break
                _, j, t0, t1 = best
                self._pool[j], self._home[j] = t1, -1
                demand[u, t0] -= need[j]
                demand[u, t1] += need[j]
                self.migrations += 1

    def _job_tickets(self, ids, need, share) -> np.ndarray:
        """Every job's tickets in its pool: its user's share there in proportion to its GPUs (docstring 3); float64
        (n,), 0 off ``ids``."""
        tick = np.zeros(len(self.user))
        placed = ids[self._pool[ids] >= 0]
        u, t = self.user[placed], self._pool[placed]
        demand = np.zeros(share.shape)
        np.add.at(demand, (u, t), need[placed])
        tick[placed] = share[u, t] * need[placed] / demand[u, t]
        return tick

    def _choose(self, ids, need, tick, nodes, node_gpus) -> dict[int, tuple]:
        """Job -> its parts ``((node, n GPUs), ...)`` for the quantum, pool by pool (docstring 4-5)."""
        runs: dict[int, tuple] = {}
        for t, pool in enumerate(nodes):
            if not len(pool):
                continue
            size = int(node_gpus[pool].max())
            mine = ids[self._pool[ids] == t]
            large, small = mine[need[mine] > size], mine[need[mine] <= size]
            self._home_small(small, need, tick, pool, node_gpus)
            central = self._central_round(large, small, need, tick, pool, node_gpus)
            runs.update(central)
            taken = {node for parts in central.values() for node, _ in parts}
            runs.update(self._local_round(small, need, tick, pool[~np.isin(pool, list(taken))], node_gpus))
        return runs

    def _vtime(self, jobs: np.ndarray) -> float:
        """The least pass of ``jobs`` (0 for none): where a job joining them starts."""
        return float(self._pass[jobs].min()) if len(jobs) else 0.0

    def _home_small(self, small, need, tick, pool, node_gpus) -> None:
        """Home servers of a pool's small jobs: new ones to the least loaded, then load balancing (docstring 5)."""
        if not len(small):
            return
        gpus = node_gpus[pool].astype(np.float64)
        at = {int(s): k for k, s in enumerate(pool.tolist())}
        home = self._home
        load = np.zeros(len(pool))                               # tickets per server
        here = np.isin(home[small], pool)
        np.add.at(load, [at[h] for h in home[small[here]].tolist()], tick[small[here]])
        vtime = [self._vtime(small[home[small] == s]) for s in pool.tolist()]
        for j in small[~here].tolist():                          # new, or moved pools
            ok = np.flatnonzero(node_gpus[pool] >= need[j])
            k = int(ok[np.argmin((load[ok] + tick[j]) / gpus[ok])])
            self._pass[j] = vtime[k]
            home[j] = pool[k]
            load[k] += tick[j]
        for _ in range(len(small)):                              # load balancing by migration
            per = load / gpus
            hi, lo = int(np.argmax(per)), int(np.argmin(per))
            if not per[hi] - per[lo] > self.balance_tol * load.sum() / gpus.sum():
                break
            movable = small[(home[small] == pool[hi]) & (need[small] <= node_gpus[pool[lo]])]
            if not len(movable):
                break
            after = np.abs((load[hi] - tick[movable]) / gpus[hi] - (load[lo] + tick[movable]) / gpus[lo])
            best = int(np.argmin(after))
            if not after[best] < per[hi] - per[lo]:
                break
            j = int(movable[best])
            self._pass[j] += vtime[lo] - vtime[hi]
            home[j] = pool[lo]
            load[hi] -= tick[j]
            load[lo] += tick[j]
            self.migrations += 1

    def _local_round(self, small, need, tick, local, node_gpus) -> dict[int, tuple]:
        """Each local server's stride over its small jobs (docstring 4)."""
        runs = {}
        for node in local.tolist():
            residents = small[self._home[small] == node]
            if not len(residents):
                continue
            keys = np.where(tick[residents] > 0, self._pass[residents], np.inf)
            ran = residents[gang_stride(keys, need[residents], int(node_gpus[node]))]
            advance(self._pass, need, tick, ran)
            runs.update((j, ((node, int(need[j])),)) for j in ran.tolist())
        return runs

    def _central_round(self, large, small, need, tick, pool, node_gpus) -> dict[int, tuple]:
        """The central scheduler's gang stride over whole servers (docstring 4): its jobs by increasing pass, each
        taking the servers it needs among those whose own jobs all have a larger pass (the servers most ahead
        first), or waiting."""
        if not len(large):
            return {}
        fresh = self._home[large] != CENTRAL
        self._pass[large[fresh]] = self._vtime(np.concatenate((large[~fresh], small)))
        self._home[large] = CENTRAL
        ahead = {int(node): self._vtime(small[self._home[small] == node]) if (self._home[small] == node).any()
                 else math.inf for node in pool.tolist()}
        runs = {}
        for j in large[np.lexsort((large, self._pass[large]))].tolist():
            if not tick[j] > 0:
                continue
            free = [node for node in sorted(ahead, key=lambda node: (-ahead[node], node))
                    if ahead[node] > self._pass[j]]
            parts, left = [], int(need[j])
            for node in free:
                if left <= 0:
                    break
                parts.append((node, min(left, int(node_gpus[node]))))
                left -= parts[-1][1]
            if left > 0:
                continue
            for node, _ in parts:
                del ahead[node]
            runs[j] = tuple(parts)
            advance(self._pass, need, tick, np.array([j]))
        return runs

    @staticmethod
    def _where(state, running: np.ndarray, runs: dict[int, tuple]) -> dict[int, tuple]:
        """Where the chosen jobs run, by job index (a :class:`~fgdopt.timeline.rounds.Decision`'s ``where``): a
        running job that keeps its servers keeps its GPUs; the others take their servers' free GPUs, lowest first,
        around the ones kept."""
        stay = {j: state.parts(j) for j in running.tolist()
                if j in runs and tuple(node for node, _ in state.parts(j)) == tuple(node for node, _ in runs[j])}
        taken: dict[int, set] = {}
        for parts in stay.values():
            for node, gpus in parts:
                taken.setdefault(node, set()).update(gpus)
        where = {}
        for j in sorted(runs):
            parts = stay.get(j)
            if parts is None:
                parts = []
                for node, count in runs[j]:
                    held = taken.setdefault(node, set())
                    gpus = tuple(g for g in range(int(state.cluster.gpu[node])) if g not in held)[:count]
                    held.update(gpus)
                    parts.append((node, gpus))
                parts = tuple(parts)
            where[j] = parts[0] if len(parts) == 1 else parts
        return where
