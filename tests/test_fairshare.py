"""Gandiva-Fair (:mod:`fgdopt.fairshare`): stride, shares, trading and the scheduler on the engine, worked by hand and
over random instances; the study's bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from experiments import cli
from fgdopt.fairshare import GandivaFair, check_tickets, gang_stride, jain_index, trade_shares, water_fill
from fgdopt.fairshare.stride import stride_shares
from fgdopt.fairshare.trading import utility
from fgdopt.hetero.jobs import gavel_cluster
from fgdopt.model import TaskSet
from fgdopt.timeline import simulate
from fgdopt.timeline.jobs import JobSet


def _jobs(need, duration_s=math.inf) -> JobSet:
    n = len(need)
    tasks = TaskSet(np.zeros(n, np.int64), np.zeros(n, np.int64), np.asarray(need, np.int64), np.full(n, 1000),
                    [""] * n)
    return JobSet(tasks, np.zeros(n), np.broadcast_to(np.asarray(duration_s, dtype=np.float64), (n,)).copy())


def _run(gpus: dict, need, user, tickets, speed, *, quanta: int, trading: bool = False, per_node: int = 4,
         duration_s=math.inf) -> GandivaFair:
    """GandivaFair over ``quanta`` quanta of 360 s on a cluster of ``gpus`` (type -> GPUs, nodes of ``per_node``)."""
    jobs = _jobs(need, duration_s)
    speed = {g: np.asarray(s, dtype=np.float64) for g, s in speed.items()}
    mech = GandivaFair(np.asarray(user), tickets, speed, tuple(gpus), trading=trading)
    simulate(gavel_cluster(gpus, per_node), jobs, "best-fit", "fifo", mechanism=mech.loop(), speed=speed, frag=False,
             until_s=360.0 * quanta, restart_s=lambda g: 0.0)
    return mech


# -- worked by hand ----------------------------------------------------------------------------------------------

def test_two_users_two_jobs_each_equal_tickets_share_equally_over_one_stride_period():
    """One server of 2 GPUs; users A (jobs 0, 1) and B (jobs 2, 3), 1 ticket each, one GPU per job. Each job holds
    half its user's ticket, so its stride is 1 / 0.5 = 2 GPU-quanta per ticket. Quantum 1: every pass is 0, ties by
    index, jobs 0 and 1 (user A) run and go to pass 2. Quantum 2: jobs 2 and 3 (user B) have the lowest pass and run.
    Over the stride period (2 quanta) each user had 2 GPU-quanta: 720 GPU-s each, equal."""
    mech = _run({"g": 2}, [1, 1, 1, 1], [0, 0, 1, 1], [1.0, 1.0], {"g": [1.0] * 4}, quanta=2, per_node=2)
    q1, q2 = mech.log
    assert q1.gpu_s[:, 0].tolist() == [720.0, 0.0] and q2.gpu_s[:, 0].tolist() == [0.0, 720.0]
    assert (q1.gpu_s + q2.gpu_s)[:, 0].tolist() == [720.0, 720.0]
    assert q1.fair[:, 0].tolist() == [1.0, 1.0]                 # each user's fair share: 1 of the 2 GPUs


def test_a_gang_job_shares_equally_with_two_small_ones():
    """Gang-aware: user A has one 2-GPU job, user B two 1-GPU jobs, on one 2-GPU server, equal tickets. A's job holds
    1 ticket and advances 2 / 1 = 2 per quantum; B's jobs hold 1/2 each and advance 1 / (1/2) = 2. Quantum 1: A's
    job (index 0, pass 0) takes both GPUs; quantum 2: B's two jobs; and so on by turns (ties to A's, of lower index):
    720 GPU-s each over every period of two quanta."""
    mech = _run({"g": 2}, [2, 1, 1], [0, 1, 1], [1.0, 1.0], {"g": [1.0] * 3}, quanta=8, per_node=2)
    assert [q.gpu_s[:, 0].tolist() for q in mech.log] == [[720.0, 0.0], [0.0, 720.0]] * 4


def test_a_trade_that_helps_both():
    """Fast and slow GPUs, one of each per user. A's jobs run 4x faster on fast GPUs (value 4 and 1 per GPU), B's
    1.5x (1.5 and 1); B has jobs for 4 GPUs. Price: the middle of the speedups, (4 + 1.5) / 2 = 2.75 slow GPUs per
    fast one. A pays its whole slow GPU: it gets 1 / 2.75 = 4/11 fast GPU from B. Then A has 15/11 fast, 0 slow:
    4 x 15/11 = 60/11 against 5 before (+5/11); B has 7/11 fast and 2 slow: 1.5 x 7/11 + 2 = 65/22 against 5/2
    (+5/11). The cluster's throughput goes from 15/2 to 15/2 + 10/11."""
    share = np.ones((2, 2))
    value = np.array([[4.0, 1.0], [1.5, 1.0]])
    after, trades = trade_shares(share, value, np.array([2.0, 4.0]))
    assert len(trades) == 1
    t = trades[0]
    assert (t.buyer, t.seller, t.fast, t.slow) == (0, 1, 0, 1)
    assert t.price == pytest.approx(2.75) and t.gpus == pytest.approx(4 / 11)
    assert after == pytest.approx(np.array([[15 / 11, 0.0], [7 / 11, 2.0]]))
    assert utility(after, value) - utility(share, value) == pytest.approx([5 / 11, 5 / 11])
    assert after.sum(axis=0) == pytest.approx(share.sum(axis=0))          # every type's GPUs conserved


def test_a_trade_stops_where_the_seller_s_demand_is_met():
    """The trade above with B demanding 2.5 GPUs: B gains 2.75 - 1 = 1.75 GPUs per fast GPU it sells, so it sells
    0.5 / 1.75 = 2/7 fast GPU, for 11/14 slow: A has 9/7 fast and 3/14 slow, B 5/7 fast and 25/14 slow (2.5 in all,
    its demand)."""
    value = np.array([[4.0, 1.0], [1.5, 1.0]])
    after, trades = trade_shares(np.ones((2, 2)), value, np.array([2.0, 2.5]))
    assert len(trades) == 1 and trades[0].gpus == pytest.approx(2 / 7)
    assert after == pytest.approx(np.array([[9 / 7, 3 / 14], [5 / 7, 25 / 14]]))


def test_no_trade_when_users_gain_alike_or_the_seller_cannot_use_more():
    value = np.array([[3.0, 1.0], [3.0, 1.0]])
    assert trade_shares(np.ones((2, 2)), value, np.array([4.0, 4.0]))[1] == []
    one_each = np.array([[1.0, 0.0], [0.0, 1.0]])                         # only user 1 can buy, only user 0 sell
    assert trade_shares(one_each, value, np.array([4.0, 4.0]))[1] == []   # and neither gains
    value = np.array([[4.0, 1.0], [1.5, 1.0]])                            # B demands only its 2 GPUs: it cannot
    assert trade_shares(np.ones((2, 2)), value, np.array([2.0, 2.0]))[1] == []   # take more slow GPUs than it gives


def test_trading_on_the_engine_realizes_the_traded_shares_and_helps_both_users():
    """The trade above on the engine: a fast and a slow node of 2 GPUs, A's 2 jobs (speeds 4 and 1), B's 4 jobs (1.5
    and 1). A's jobs go to the fast pool (tickets 15/22 each), B's first job too (7/11), its other three to the slow
    pool. Over 220 quanta A gets 15/11 fast GPUs (work 60/11 per s) and B 7/11 fast and 2 slow (65/22 per s), to
    the stride's rounding; without trading 5 and 5/2."""
    speed = {"fast": [4, 4, 1.5, 1.5, 1.5, 1.5], "slow": [1.0] * 6}
    runs = {}
    for trading in (False, True):
        mech = _run({"fast": 2, "slow": 2}, [1] * 6, [0, 0, 1, 1, 1, 1], [1.0, 1.0], speed, quanta=220,
                    trading=trading, per_node=2)
        span = sum(q.end_s - q.start_s for q in mech.log)
        runs[trading] = (sum(q.work_s for q in mech.log).sum(axis=1) / span,
                         sum(q.gpu_s for q in mech.log) / span)
    assert runs[False][0] == pytest.approx([5.0, 2.5], rel=0.01)
    work, gpus = runs[True]
    assert work == pytest.approx([60 / 11, 65 / 22], rel=0.01)
    assert gpus == pytest.approx(np.array([[15 / 11, 0.0], [7 / 11, 2.0]]), rel=0.01)
    assert (work > runs[False][0]).all()


def test_the_central_scheduler_takes_turns_with_the_servers():
    """Two servers of 2 GPUs. User A has one 4-GPU job (larger than a server: the central scheduler's), user B four
    1-GPU jobs, equal tickets: A's job holds 2 tickets and advances 4 / 2 = 2 per quantum, B's jobs 1/2 each and
    advance 1 / (1/2) = 2. Quantum 1: A's job starts at the least pass of the jobs it joins, 0, and takes servers only
    where every local job's pass is above its own: none; B's jobs run. Quantum 2: B's jobs are at 2, A's at 0: A
    takes both servers. Then by turns: 1440 GPU-s a quantum to each user in turn."""
    mech = _run({"g": 4}, [4, 1, 1, 1, 1], [0, 1, 1, 1, 1], [1.0, 1.0], {"g": [1.0] * 5}, quanta=8, per_node=2)
    assert [q.gpu_s[:, 0].tolist() for q in mech.log] == [[0.0, 1440.0], [1440.0, 0.0]] * 4


def test_a_gang_that_keeps_its_servers_keeps_running_across_quanta():
    """Two servers of 2 GPUs and one user's 4-GPU job (the central scheduler's, over both servers, a gang), alone:
    it takes both servers every quantum and keeps its GPUs (the round loop's diff by parts: no preemption), 1440
    GPU-s a quantum."""
    jobs = _jobs([4])
    mech = GandivaFair(np.zeros(1, np.int64), np.ones(1), {"g": np.ones(1)}, ("g",))
    r = simulate(gavel_cluster({"g": 4}, 2), jobs, "best-fit", "fifo", mechanism=mech.loop(), speed={"g": np.ones(1)},
                 frag=False, until_s=360.0 * 3, restart_s=lambda g: 0.0)
    assert [q.gpu_s[0, 0] for q in mech.log] == [1440.0] * 3            # the instant at 1080 s logs the third
    assert r.preemptions.tolist() == [0] and r.state.parts(0) == ((0, (0, 1)), (1, (0, 1)))


def test_a_quantum_ends_when_its_last_job_finishes_and_none_waits():
    """One server of 2 GPUs, jobs of 100 and 500 s (1 GPU each, one user): quantum 1 runs both; job 0 finishes at 100
    (its GPU idle until 360), job 1 at 500, in quantum 2, which ends there (the round loop's early end: nothing runs
    and nothing waits), not at 720: quanta (0, 360) and (360, 500), 460 and 140 GPU-s."""
    jobs = _jobs([1, 1], [100.0, 500.0])
    mech = GandivaFair(np.zeros(2, np.int64), np.ones(1), {"g": np.ones(2)}, ("g",))
    simulate(gavel_cluster({"g": 2}, 2), jobs, "best-fit", "fifo", mechanism=mech.loop(), speed={"g": np.ones(2)},
             frag=False, restart_s=lambda g: 0.0)
    assert [(q.start_s, q.end_s, q.gpu_s[0, 0]) for q in mech.log] == [(0.0, 360.0, 460.0), (360.0, 500.0, 140.0)]


def test_fair_shares_are_split_over_the_types_by_their_gpus():
    """2 fast and 6 slow GPUs, two users with jobs for 8 GPUs each and equal tickets: 4 GPUs each, 1 fast and 3
    slow."""
    mech = _run({"fast": 2, "slow": 6}, [1] * 16, [0] * 8 + [1] * 8, [1.0, 1.0],
                {"fast": [2.0] * 16, "slow": [1.0] * 16}, quanta=1, per_node=2)
    assert mech.log[0].fair.tolist() == [[1.0, 3.0], [1.0, 3.0]]


def test_load_balancing_migrates_to_keep_users_at_their_shares():
    """Two servers of 2 GPUs; users A (jobs 0-3) and B (jobs 4-7), equal tickets, 1 GPU each: 2 GPUs each, so each
    job holds 1/2 ticket. New jobs go to the server of least ticket load per GPU (ties to the first): A0, A2, B4
    and B6 to the first, A1, A3, B5 and B7 to the second. B4 and B6 finish after 360 s of work; then B's two jobs
    hold 1 ticket each, and the loads are 1/2 (A0, A2 on 2 GPUs) and 3/2 (A1, A3, B5, B7). Moving B5 evens them
    (1 and 1), so B5 migrates: each server runs one B job on one GPU and two A jobs on the other by turns, 2 GPUs
    per user. Without the migration A would get 2 + 2/3 GPUs and B 4/3."""
    work = [math.inf] * 4 + [360.0, math.inf, 360.0, math.inf]
    mech = _run({"g": 4}, [1] * 8, [0] * 4 + [1] * 4, [1.0, 1.0], {"g": [1.0] * 8}, quanta=24, per_node=2,
                duration_s=work)
    assert mech.migrations == 1
    late = mech.log[6:]
    got = sum(q.gpu_s for q in late)[:, 0] / sum(q.end_s - q.start_s for q in late)
    assert got == pytest.approx([2.0, 2.0])


def test_load_balancing_moves_no_job_that_only_flips_the_imbalance():
    """Two servers of 1 GPU; one user with three 1-GPU jobs (1/3 ticket each). New jobs go to the least loaded
    server (ties to the first): 0 and 2 to the first (2/3), 1 to the second (1/3). Moving a job would leave 1/3 and
    2/3: the gap is as wide as before, so nothing migrates, quantum after quantum."""
    mech = _run({"g": 2}, [1, 1, 1], [0, 0, 0], [1.0], {"g": [1.0] * 3}, quanta=3, per_node=1)
    assert mech.migrations == 0


def test_jain_index_on_known_vectors():
    assert jain_index([1, 1, 1, 1]) == 1.0
    assert jain_index([1, 0, 0, 0]) == 0.25                      # one of four holds everything: 1/n
    assert jain_index([1, 2, 3]) == pytest.approx(36 / 42)       # 6^2 / (3 x 14)
    assert jain_index([2, 2]) == 1.0
    assert math.isnan(jain_index([]))


def test_water_fill_and_tickets():
    """8 GPUs, tickets 1, 1, 2, demands 1, 10, 10: offers 2, 2, 4; the first takes its 1, the 7 left go 1:2 to the
    others: 7/3 and 14/3."""
    assert water_fill(np.array([1.0, 1.0, 2.0]), np.array([1.0, 10.0, 10.0]), 8.0) == pytest.approx([1, 7 / 3, 14 / 3])
    assert check_tickets([0, 2]).tolist() == [0.0, 2.0]
    for bad in ([0, 0], [-1, 1], [1, math.nan]):
        with pytest.raises(ValueError):
            check_tickets(bad)


# -- properties ---------------------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(tickets=st.lists(st.integers(1, 20), min_size=2, max_size=6), capacity=st.integers(1, 3))
def test_stride_shares_converge_to_tickets_over_their_sum(tickets, capacity):
    """One-GPU jobs: over Q quanta each job's GPU-quanta is within one quantum per job of Q x capacity x its tickets
    over the sum (when no job's share exceeds one GPU), so its share converges as 1/Q."""
    t = np.asarray(tickets, dtype=np.float64)
    assume(len(t) > capacity and (capacity * t / t.sum()).max() <= 1)
    quanta = 400
    got = stride_shares(t, np.ones(len(t), np.int64), capacity, quanta)
    assert got.sum() == quanta * capacity                                     # every GPU busy every quantum
    assert np.abs(got - quanta * capacity * t / t.sum()).max() <= len(t)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_engine_conserves_jobs_and_gpus(data):
    """Random users, tickets, gangs of 1 to 8 GPUs on 4-GPU nodes and finite work: every job finishes, no quantum
    uses more GPU-seconds than the cluster has, and the work in the log is every job's work times its GPUs (nothing
    lost or made), and its GPU-seconds the engine's."""
    n = data.draw(st.integers(2, 12))
    need = data.draw(st.lists(st.sampled_from([1, 1, 2, 4, 8]), min_size=n, max_size=n))
    users = data.draw(st.integers(1, 3))
    user = data.draw(st.lists(st.integers(0, users - 1), min_size=n, max_size=n))
    tickets = data.draw(st.lists(st.integers(1, 4), min_size=users, max_size=users))
    work = data.draw(st.lists(st.floats(100, 3000), min_size=n, max_size=n))
    speed = {"fast": [2.0] * n, "slow": [1.0] * n}
    jobs = _jobs(need, work)
    mech = GandivaFair(np.asarray(user), np.asarray(tickets, float), {g: np.asarray(s) for g, s in speed.items()},
                       ("fast", "slow"), trading=data.draw(st.booleans()))
    result = simulate(gavel_cluster({"fast": 8, "slow": 8}, 4), jobs, "best-fit", "fifo", mechanism=mech.loop(),
                      speed={g: np.asarray(s) for g, s in speed.items()}, frag=False, restart_s=lambda g: 0.0)
    assert (result.status == 0).all()                                          # every job finished
    for q in mech.log:
        assert (q.gpu_s.sum(axis=0) <= np.array([8, 8]) * (q.end_s - q.start_s) + 1e-6).all()
    done = sum(q.work_s for q in mech.log).sum(axis=1)                         # per user
    assert done == pytest.approx(np.bincount(user, weights=np.multiply(work, need), minlength=users))
    held = sum(q.gpu_s for q in mech.log).sum()                                # GPU-seconds, log against engine
    assert held == pytest.approx(float((result.run_s * np.asarray(need)).sum()))


def test_gang_stride_takes_the_lowest_pass_first_and_fills_what_fits():
    assert gang_stride(np.array([3.0, 1.0, 2.0, 0.5]), np.array([1, 4, 2, 2]), 4).tolist() == [3, 2]
    assert gang_stride(np.array([0.0, 0.0]), np.array([2, 2]), 2).tolist() == [0]     # ties: lower index


# -- the study's bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "names"), [
    (["--tickets", "0,0"], "sum to a positive number"),
    (["--tickets", "1,-1"], "--tickets"),
    (["--users", "2", "--tickets", "1,1,1"], "--tickets: 3 values for 2 users"),
    (["--workload", "{w}", "--user-column", "owner"], "no column 'owner'"),
    (["--price-point", "1"], "--price-point"),
    (["--workload", "{w}", "--users", "3"], "--workload: its file gives the users and their jobs; drop --users"),
    (["--workload", "{w}", "--jobs-per-user", "5", "--multi-gpu"], "drop --jobs-per-user, --multi-gpu"),
])
def test_bad_input_ends_in_one_line_and_exit_2_and_touches_nothing(args, names, tmp_path, capsys):
    workload = tmp_path / "w.csv"
    workload.write_text("job_type,scale_factor,user\nA3C,1,alice\n")
    out = tmp_path / "OUT"
    out.mkdir()
    (out / "fairness.csv").write_text("results of an earlier run\n")
    argv = [a.replace("{w}", str(workload)) for a in args] + ["--output", str(out)]
    try:
        code = cli.main(["fairness", *argv])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and names in lines[0] and lines[0].startswith("fgdopt fairness"), err
    assert [p.name for p in out.iterdir()] == ["fairness.csv"]
    assert (out / "fairness.csv").read_text() == "results of an earlier run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["OUT", "w.csv"]


def test_series_windows_are_never_empty_and_cover_the_run():
    """The study's windows over the quanta (ends in seconds): at the multiples of ``--window-s``, the rest of the
    run last. A window longer than the run (``--hours 0.01``, one 360 s quantum against 3,600 s) or shorter than
    a quantum (``--quantum-s 7200``) made an empty window: a crash (zip of unequal lengths) or NaN indices."""
    from experiments.fairness import quantum_windows

    ends = 360.0 * np.arange(1, 11)                                   # ten quanta, one hour
    assert quantum_windows(ends, 1800.0).tolist() == [5, 10]
    assert quantum_windows(ends, 1500.0).tolist() == [4, 8, 10]        # cuts at 1,500 and 3,000 s; the rest
    assert quantum_windows(ends, 3600.0).tolist() == [10]
    assert quantum_windows(ends, 100_000.0).tolist() == [10]
    assert quantum_windows(np.array([360.0]), 3600.0).tolist() == [1]
    assert quantum_windows(np.array([7200.0]), 3600.0).tolist() == [1]
    assert quantum_windows(np.array([100.0, 3600.0, 3700.0]), 60.0).tolist() == [1, 2, 3]


def test_the_study_runs_a_window_longer_than_the_run(tmp_path, gavel_table):
    from experiments import fairness

    out = tmp_path / "o"
    assert fairness.main(["--quick", "--hours", "0.1", "--window-s", "3600", "--output", str(out)]) == 0
    series = pd.read_csv(out / "fairness_series.csv")
    assert series["window_end_h"].tolist() == [0.1, 0.1] and series["jain_gpu_time"].notna().all()
