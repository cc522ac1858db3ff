"""Synergy's rounds on the one feasibility rule: a job's CPU and memory, chosen per round, held by
:class:`~fgdopt.state.ClusterState` (``place(..., demand=)``, ``place_parts(..., demands=)``), which refuses what does
not fit. Servers as Synergy's: 8 GPUs, 24 cores = 24,000 milli-cores, 500 GB = 512,000 MiB."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fgdopt.model import TaskSet
from fgdopt.state import ClusterState, InfeasiblePlacement
from fgdopt.synergy.profiles import load_profiles
from fgdopt.synergy.rounds import FAIR_SHARE, Synergy, first_fit, peers_to_shrink, per_gpu_demand, synergy_cluster


def _state(servers: int, gpus) -> ClusterState:
    n = len(gpus)
    zeros = np.zeros(n, dtype=np.int64)
    return ClusterState(synergy_cluster(servers), TaskSet(zeros, zeros, np.asarray(gpus), np.full(n, 1000)))


def test_state_refuses_an_allocation_beyond_a_servers_cpu():
    """Two 1-GPU jobs at their whole demand of 12 cores (12,000 milli-cores) fill the server's 24 cores; a third at
    the proportional share (3 cores) is refused by the rule though 6 GPUs are free, and Synergy's first fit finds
    no server for it (nothing placed). Removing job 0 gives its 12 cores back: the third fits."""
    state = _state(1, [1, 1, 1])
    state.place(0, 0, (0,), demand=(12_000, 64_000))
    state.place(1, 0, (1,), demand=(12_000, 64_000))
    assert int(state.cpu_left[0]) == 0 and int(state.mem_left[0]) == 512_000 - 2 * 64_000
    with pytest.raises(InfeasiblePlacement, match="CPU: 3000 milli-cores asked, 0 left on node 0"):
        state.place(2, 0, (2,), demand=FAIR_SHARE)
    schedule = [[]]
    assert not first_fit(state, 2, FAIR_SHARE, 1, schedule) and schedule == [[]] and state.node_of[2] == -1
    state.remove(0)
    assert int(state.cpu_left[0]) == 12_000 and state.demand_of[0] == ()
    assert first_fit(state, 2, FAIR_SHARE, 1, schedule) and schedule == [[2]]
    assert state.gpus_of[2] == (0,) and state.held_demand(2) == (FAIR_SHARE,)


def test_state_refuses_an_allocation_beyond_a_servers_memory():
    """m5 asks 187.5 GB (192,000 MiB) per GPU: two fit a 500 GB server (128,000 MiB left), a third does not, even
    with 1 core; the refused placement leaves the state as it was."""
    state = _state(1, [1, 1, 1])
    for j in (0, 1):
        state.place(j, 0, (j,), demand=(6_000, 192_000))
    before = (int(state.cpu_left[0]), int(state.mem_left[0]), state.revision)
    assert before[:2] == (12_000, 128_000)
    with pytest.raises(InfeasiblePlacement, match="memory: 192000 MiB asked, 128000 left on node 0"):
        state.place(2, 0, (2,), demand=(1_000, 192_000))
    assert (int(state.cpu_left[0]), int(state.mem_left[0]), state.revision) == before and state.node_of[2] == -1


def test_a_job_over_two_servers_holds_each_parts_share_and_gives_it_back():
    """A 4-GPU job at 9 cores per GPU: server 0 has 3 free GPUs but 20 cores (2 GPUs' worth: 18 cores), server 1
    the rest: first fit puts 2 GPUs on server 0 (18 cores) and 2 on server 1 (18 cores). A part beyond its server's
    CPU is refused with nothing placed; removal gives every part's CPU and memory back."""
    state = _state(2, [5, 4, 2])
    state.place(0, 0, (0, 1, 2, 3, 4), demand=(4_000, 100_000))
    assert int(state.cpu_left[0]) == 20_000
    schedule = [[], []]
    assert first_fit(state, 1, (9_000, 64_000), 4, schedule)
    assert state.parts(1) == ((0, (5, 6)), (1, (0, 1)))
    assert state.held_demand(1) == ((18_000, 128_000), (18_000, 128_000)) and schedule == [[1], [1]]
    assert (state.cpu_left.tolist(), state.mem_left.tolist()) == ([2_000, 6_000], [284_000, 384_000])
    with pytest.raises(InfeasiblePlacement, match=r"2 demand\(s\) for 1 part"):
        state.place_parts(2, ((0, (7,)),), demands=[(1_000, 0), (7_000, 0)])
    with pytest.raises(InfeasiblePlacement, match="part 1: CPU: 7000 milli-cores asked, 6000 left on node 1"):
        state.place_parts(2, ((0, (7,)), (1, (2,))), demands=[(1_000, 0), (7_000, 0)])
    assert state.node_of[2] == -1 and state.cpu_left.tolist() == [2_000, 6_000]
    copy = state.copy()
    state.remove(1)
    assert (state.cpu_left.tolist(), state.mem_left.tolist()) == ([20_000, 24_000], [412_000, 512_000])
    assert copy.held_demand(1) == ((18_000, 128_000), (18_000, 128_000))     # the copy keeps its own
    copy.remove_many([1, 0])
    assert (copy.cpu_left.tolist(), copy.mem_left.tolist()) == ([24_000] * 2, [512_000] * 2) and not any(copy.demand_of)


def test_fits_without_reads_the_demand_chosen_at_placement():
    """Job 0 holds 20 cores (chosen), job 1 its shape's 2 cores: a 1-GPU task of 21 cores fits server 0 without
    job 0 (2 + 20 = 22 >= 21), not without job 1 (2 + 2 = 4); removing both gives 24 cores back."""
    zeros = np.zeros(3, dtype=np.int64)
    tasks = TaskSet([0, 2_000, 21_000], zeros, [1, 1, 1], [1000, 1000, 1000])
    state = ClusterState(synergy_cluster(1), tasks)
    state.place(0, 0, (0,), demand=(20_000, 0))
    state.place(1, 0, (1,))
    assert int(state.cpu_left[0]) == 2_000
    assert state.fits_without(tasks[2], 0, [0]) and not state.fits_without(tasks[2], 0, [1])
    assert state.fits_without_each(tasks[2], [0, 1]).tolist() == [True, False]
    assert state.held_demand(1) == ((2_000, 0),)
    state.remove_many([0, 1])                                      # both back: 2 + 20 + 2 = 24 cores
    assert int(state.cpu_left[0]) == 24_000 and not any(state.demand_of)


def test_peers_to_shrink_by_their_excess_over_the_share_by_hand():
    """One server: job 0 holds 6 cores, 187.5 GB, job 1 12 cores, 62.5 GB: 6 cores and 250 GB (256,000 MiB) are
    free. Synergy sorts the server's jobs by most CPU per GPU: job 1, then 0.
    To fit 3 cores and 250 GB: no need (``[]``). To fit 9 cores and 250 GB = 256,000 MiB: 3 cores short; job 1 is 9
    cores above its 3-core share: it alone (``[1]``). To fit 3 cores and 312.5 GB = 320,000 MiB: 64,000 MiB short;
    job 1 holds no memory above its share (64,000), job 0 128,000 MiB above: both, job 1 first."""
    state = _state(1, [1, 1])
    state.place(0, 0, (0,), demand=(6_000, 192_000))
    state.place(1, 0, (1,), demand=(12_000, 64_000))
    assert (int(state.cpu_left[0]), int(state.mem_left[0])) == (6_000, 256_000)
    schedule = [[0, 1]]
    assert peers_to_shrink(state, 0, (3_000, 256_000), schedule) == [] and schedule == [[0, 1]]
    assert peers_to_shrink(state, 0, (9_000, 256_000), schedule) == [1] and schedule == [[1, 0]]
    assert peers_to_shrink(state, 0, (3_000, 320_000), schedule) == [1, 0]
    state.remove(1)
    state.place(1, 0, (1,), demand=(6_000, 192_000))           # both 6 cores, 187.5 GB: 128,000 MiB left
    assert peers_to_shrink(state, 0, (3_000, 256_000), [[0, 1]]) == [0]     # job 0's 128,000 MiB above covers it


@pytest.mark.parametrize("demand, words", [((1_000.5, 0), "not whole"), ((-1, 0), "not whole")])
def test_a_chosen_demand_is_whole_and_not_negative(demand, words):
    state = _state(1, [1])
    with pytest.raises(InfeasiblePlacement, match=words):
        state.place(0, 0, (0,), demand=demand)
    assert int(state.cpu_left[0]) == 24_000


def test_per_gpu_shares_are_whole_milli_cores_and_mib():
    """9 cores, 62.5 GB on 1 GPU: (9,000, 64,000); 12 cores, 125 GB on 4 GPUs: (3,000, 32,000). 7 cores on 3 GPUs
    (2,333.3 milli-cores each) or storage unlike memory is refused, naming the job."""
    demand = np.array([[1, 9, 62.5, 62.5, 0], [4, 12, 125, 125, 0]])
    assert per_gpu_demand([1, 4], demand) == [(9_000, 64_000), (3_000, 32_000)]
    with pytest.raises(ValueError, match="job 1: "):
        per_gpu_demand([1, 3], np.array([[1, 9, 62.5, 62.5, 0], [3, 7, 62.5, 62.5, 0]]))
    with pytest.raises(ValueError, match="job 0: "):
        per_gpu_demand([1], np.array([[1, 9, 62.5, 50, 0]]))


def test_a_job_above_its_share_in_memory_alone_falls_to_the_share():
    """Synergy's ``_make_fair_share``: 3 cores (the share) with 187.5 GB (above 62.5) falls to 3 cores, 62.5 GB
    (3,000 milli-cores, 64,000 MiB) and speed 1; 3 cores with 62.5 GB keeps its demand and its speed-up 2; 2 GPUs
    at 12 cores, 125 GB are at the share exactly: kept."""
    demand = np.array([[1, 3, 187.5, 187.5, 0], [1, 3, 62.5, 62.5, 0], [2, 6, 125, 125, 0]])
    syn = Synergy("FIFO+tune", np.zeros(3), np.array([1, 1, 2]), demand, np.full(3, 2.0), np.ones(3),
                  np.full(3, 100), servers=1)
    assert [syn._share(j) for j in range(3)] == [FAIR_SHARE, (3_000, 64_000), (3_000, 64_000)]
    assert syn.speed_now.tolist() == [1.0, 2.0, 2.0]


MODELS = ("alexnet", "res18", "res50", "mobilenet", "shufflenet", "gnmt", "transformer", "lstm", "m5", "deepspeech")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), servers=st.integers(1, 3), n=st.integers(1, 30), rounds=st.integers(1, 12),
       policy=st.sampled_from(["FIFO+tune", "SRTF+tune", "LAS+greedy", "FTF+fair", "LAS+tune", "FIFO+greedy"]),
       multi=st.booleans())
def test_after_any_rounds_free_cpu_and_memory_are_capacity_minus_what_jobs_hold(seed, servers, n, rounds, policy,
                                                                               multi):
    """Random jobs of Synergy's models (its job maker: demand capped at a server; 1 GPU, or 1, 2, 4, 8) under a
    random policy, rounds of 300 s with the progress booked: after every round, on every server, free CPU and
    memory equal the capacity minus the sum of what the jobs placed there hold, counted part by part from the GPUs
    of each part times the share per GPU the job was given (its demand or the proportional share: nothing else),
    and nothing is negative; every job that runs is placed, none that does not."""
    from fgdopt.synergy.jobs import _with_profile
    from fgdopt.synergy.profiles import load_profiles
    rng = np.random.default_rng(seed)
    table = load_profiles()
    gpus = rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05]) if multi else np.ones(n, dtype=np.int64)
    rows = [_with_profile(k, int(t), float(rng.uniform(100, 3000)), int(gpus[k]), 0,
                          MODELS[int(rng.integers(len(MODELS)))], table, (8, 24, 500.0, 500.0))
            for k, t in enumerate(np.sort(rng.integers(0, 1200, n)))]
    demand = np.array([[r["gpus"], r["cpus"], r["mem_gb"], r["sspeed"], 0.0] for r in rows])
    syn = Synergy(policy, np.array([r["submit_s"] for r in rows]), gpus, demand,
                  np.array([r["speedup"] for r in rows]), np.array([r["iter_time_s"] for r in rows]),
                  np.array([r["iterations"] for r in rows]), servers=servers)
    per = per_gpu_demand(gpus, demand)
    for r in range(rounds):
        now = 300.0 * r
        alloc = syn.allocate(now, r)
        state = syn.state
        cpu, mem = np.full(servers, 24_000), np.full(servers, 512_000)
        for j in np.flatnonzero(state.node_of >= 0).tolist():
            assert j in alloc
            for (node, part_gpus), held in zip(state.parts(j), state.held_demand(j), strict=True):
                k = len(part_gpus)
                assert held in ((per[j][0] * k, per[j][1] * k), (FAIR_SHARE[0] * k, FAIR_SHARE[1] * k))
                cpu[node] -= held[0]
                mem[node] -= held[1]
            assert sum(len(g) for _, g in state.parts(j)) == gpus[j]
        assert len(alloc) == int((state.node_of >= 0).sum())
        assert state.cpu_left.tolist() == cpu.tolist() and state.mem_left.tolist() == mem.tolist()
        assert (cpu >= 0).all() and (mem >= 0).all()
        syn._lease_end(now, alloc, 300.0)
    assert (syn.min_free >= 0).all()


def test_place_many_and_remove_many_hold_the_demands_chosen_as_place_and_remove_do():
    """Nine 1-GPU jobs on two servers with chosen demands (job k: 1,000 x (k + 1) milli-cores, 10,000 x (k + 1)
    MiB), jobs 0-4 and 8 on server 0, jobs 5-7 on server 1, placed in one batch: server 0 holds 15,000 + 9,000 =
    24,000 milli-cores (0 left) and 240,000 MiB (272,000 left), server 1 21,000 (3,000 left) and 210,000 (302,000
    left), as :meth:`place` one by one gives (and the same ``demand_of`` and revision); removing them all in one
    batch gives every milli-core and MiB back. With job 8 asking 9,001 milli-cores the batch does not fit and the
    error is :meth:`place`'s (9,000 left on server 0 when job 8 comes)."""
    ids, nodes = np.arange(9), np.array([0] * 5 + [1] * 3 + [0])
    gpus = [(k,) for k in range(5)] + [(k,) for k in range(3)] + [(5,)]
    demands = [(1_000 * (k + 1), 10_000 * (k + 1)) for k in range(9)]
    one, many = _state(2, [1] * 9), _state(2, [1] * 9)
    for i, node, gs, d in zip(ids.tolist(), nodes.tolist(), gpus, demands, strict=True):
        one.place(i, node, gs, demand=d)
    many.place_many(ids, nodes, gpus, demands)
    assert many.cpu_left.tolist() == one.cpu_left.tolist() == [0, 3_000]
    assert many.mem_left.tolist() == one.mem_left.tolist() == [272_000, 302_000]
    assert many.demand_of == one.demand_of and many.revision == one.revision == 9
    assert many.held_demand(8) == ((9_000, 90_000),)
    many.remove_many(ids)
    assert many.cpu_left.tolist() == [24_000] * 2 and many.mem_left.tolist() == [512_000] * 2
    assert not any(many.demand_of) and many.revision == 18
    with pytest.raises(InfeasiblePlacement, match="CPU: 9001 milli-cores asked, 9000 left on node 0"):
        many.place_many(ids, nodes, gpus, [*demands[:8], (9_001, 90_000)])

# ------------------------------------------------------------------------------------------ the engine's own state

def _watch_engine(monkeypatch) -> list:
    """Check, at the start of every round (before :meth:`Synergy.decide`), the engine's own state against the round
    Synergy decided last: every running job holds there exactly its parts and the CPU and memory of each part that
    round gave it, the jobs of that round no longer placed are finished, and on every server free CPU and memory are
    the capacity minus what the placed jobs hold, never negative (the one rule). Returns the list it appends, per
    round, the engine's free CPU (milli-cores) and memory (MiB) per server, its placed jobs and the most parts one
    holds."""
    seen = []
    decide = Synergy.decide

    def checked(self, view):
        state = view.engine.state
        placed = np.flatnonzero(state.node_of >= 0).tolist()
        cpu, mem = state.cluster.cpu_milli.copy(), state.cluster.memory_mib.copy()
        for j in placed:
            assert state.parts(j) == self.state.parts(j) and state.held_demand(j) == self.state.held_demand(j)
            for (node, _), (c, m) in zip(state.parts(j), state.held_demand(j), strict=True):
                cpu[node] -= c
                mem[node] -= m
        assert state.cpu_left.tolist() == cpu.tolist() and state.mem_left.tolist() == mem.tolist()
        assert (cpu >= 0).all() and (mem >= 0).all() and (state.gpu_left >= 0).all()
        if hasattr(self, "state"):
            gone = set(np.flatnonzero(self.state.node_of >= 0).tolist()) - set(placed)
            assert all(self.finished[j] for j in gone)
        seen.append((view.now, state.cpu_left.tolist(), state.mem_left.tolist(), placed,
                     max((len(state.parts(j)) for j in placed), default=0)))
        return decide(self, view)

    monkeypatch.setattr(Synergy, "decide", checked)
    return seen


def test_the_engines_state_holds_the_cpu_and_memory_of_each_round_by_hand(monkeypatch):
    """The three 1-GPU jobs of ``test_three_jobs_on_one_server_by_hand`` (one server, 1,200 iterations of 1 s, 12
    cores and 62.5 GB = 64,000 MiB each) under FIFO+tune. Round 0 s: jobs 0 and 1 take 12 cores each, then job 2
    fits neither whole nor at its share, so job 0 is moved down to its share (3 cores) and job 2 takes 3: 18 cores
    held. The engine's state after it (read at 300 s): 24,000 - 18,000 = 6,000 milli-cores and 512,000 - 3 x 64,000
    = 320,000 MiB free; job 0 keeps its GPU, resized to 3 cores (not stopped). Round 300 s decides the same, so the
    same at 600 s minus job 1, done at 600 s: 6,000 + 12,000 = 18,000 and 384,000 free. Round 600 s gives jobs 0 and
    2 their 12 cores, job 0 on its GPU 0 (resized again), job 2 on the lowest free GPU, job 1's GPU 1 (moved from
    GPU 2: stopped and placed again, its one preemption); both are done at 900 s and no round follows."""
    from fgdopt.synergy.rounds import run_synergy
    from tests.test_synergy import _frame
    seen = _watch_engine(monkeypatch)
    result, _ = run_synergy(_frame(3), "FIFO+tune", servers=1)
    assert [(now, cpu, mem, placed) for now, cpu, mem, placed, _ in seen] == [
        (0.0, [24_000], [512_000], []),
        (300.0, [6_000], [320_000], [0, 1, 2]),
        (600.0, [18_000], [384_000], [0, 2]),
    ]
    assert result.preemptions.tolist() == [0, 0, 1]           # job 0 resized in place: never stopped


def test_every_policy_runs_on_an_engine_state_that_keeps_the_rule_every_round(monkeypatch):
    """Synergy's twelve policies on 8 jobs of its models (1, 2, 4, 8 GPUs, 10 to 40 min, arriving in the first 10
    min) on 2 servers, where the 8-GPU and some 4-GPU jobs are split over both: every round, the engine's state
    holds what the round gave each job and keeps the rule (:func:`_watch_engine`); CPU is held in some round and
    some job holds parts on both servers; every job finishes with exactly its work done."""
    import pandas as pd

    from fgdopt.synergy.jobs import _with_profile
    from fgdopt.synergy.rounds import run_synergy
    table = load_profiles()
    jobs = [(0, 600, 1, "res18"), (0, 1200, 2, "transformer"), (0, 900, 4, "m5"), (60, 2400, 8, "alexnet"),
            (120, 300, 1, "deepspeech"), (300, 1500, 2, "res50"), (420, 600, 4, "gnmt"), (600, 900, 1, "lstm")]
    frame = pd.DataFrame([_with_profile(k, t, float(length), g, 0, model, table, (8, 24, 500.0, 500.0))
                          for k, (t, length, g, model) in enumerate(jobs)])
    seen = _watch_engine(monkeypatch)
    split = []
    for policy in (f"{base}+{mode}" for base in ("FIFO", "SRTF", "LAS", "FTF") for mode in ("fair", "greedy", "tune")):
        seen.clear()
        result, _ = run_synergy(frame, policy, servers=2)
        assert len(seen) > 3 and any(min(cpu) < 24_000 for _, cpu, _, _, _ in seen), policy
        assert result.work_s == pytest.approx((frame.iterations * frame.iter_time_s).to_numpy()), policy
        split.append(max(parts for *_, parts in seen))
    assert min(split) == 2


def test_a_round_of_many_admits_holds_each_jobs_share_on_the_engine(monkeypatch):
    """Nine such jobs under FIFO+fair on two servers: round 0 s admits all nine at once (the engine's one-pass
    placement, ``place_many`` with their demands), each at the proportional share (3 cores, 64,000 MiB): eight fill
    server 0 (0 milli-cores and 0 MiB left), the ninth goes to server 1 (21,000 and 448,000 left). The same rounds
    follow until all are done at 1,200 s (300 iterations a round)."""
    from fgdopt.synergy.rounds import run_synergy
    from tests.test_synergy import _frame
    seen = _watch_engine(monkeypatch)
    result, _ = run_synergy(_frame(9), "FIFO+fair", servers=2)
    assert [(now, cpu, mem) for now, cpu, mem, *_ in seen] == [
        (0.0, [24_000] * 2, [512_000] * 2), *[(t, [0, 21_000], [0, 448_000]) for t in (300.0, 600.0, 900.0)]]
    assert result.finish_s == pytest.approx([1200.0] * 9, abs=1e-3)


def test_a_round_plan_resizes_only_gang_moves():
    """``RoundPlan.resized`` holds :class:`GangMove` (a job, its parts, their demands); anything else is refused
    with one line naming the field and the entry."""
    from fgdopt.defrag import Move
    from fgdopt.timeline.preemption import GangMove, RoundPlan
    ok = RoundPlan(resized=(GangMove(0, 0, (1,), ((0, (1,)),), ((3_000, 64_000),)),))
    assert ok.resized[0].demands == ((3_000, 64_000),)
    with pytest.raises(ValueError, match=r"RoundPlan.resized\[0\]: Move\(task=0, node=0, gpus=\(1,\)\), not a "
                                         "GangMove"):
        RoundPlan(resized=(Move(0, 0, (1,)),))
