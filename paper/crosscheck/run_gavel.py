"""Run one point of Gavel's continuous sweep, exactly as scripts/sweeps/run_sweep_continuous.py's
simulate_with_timeout does (same Scheduler constructor and simulate() arguments), without editing Gavel.

Differences from the sweep script (none affects the simulation):
  * the scheduler's logger is set to WARNING (the sweep writes every DEBUG/INFO line to a log file, which
    costs time but not results);
  * the generated jobs (sched._all_jobs) and the per-job JCTs of the window are dumped to TSV files;
  * the rate is given in jobs/hour and converted as the sweep does: lam = 3600.0 / rate (mean
    inter-arrival time in seconds).

Usage: python run_gavel.py --policy max_min_fairness --rate 1.0 --seed 0 -c 36:36:36 -s 4000 -e 5000 --out DIR
"""
import argparse
import contextlib
import io
import json
import logging
import os
import sys
import time

GAVEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'gavel', 'scheduler')
ORIG_CWD = os.getcwd()
sys.path.insert(0, GAVEL)
os.chdir(GAVEL)  # Gavel opens some files relative to scheduler/

import scheduler  # noqa: E402
import utils  # noqa: E402
from job_id_pair import JobIdPair  # noqa: E402
from job_table import JobTable  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--policy', required=True)
    p.add_argument('--rate', type=float, required=True, help='jobs per hour')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('-c', '--cluster-spec', default='36:36:36')
    p.add_argument('--num_gpus_per_server', default='1:1:1')
    p.add_argument('-s', '--window-start', type=int, default=4000)
    p.add_argument('-e', '--window-end', type=int, default=5000)
    p.add_argument('-i', '--interval', type=int, default=360)
    p.add_argument('-m', '--generate-multi-gpu-jobs', action='store_true')
    p.add_argument('--simulate-steady-state', action='store_true')
    p.add_argument('--solver', default='ECOS')
    p.add_argument('--throughputs-file', default='simulation_throughputs.json')
    p.add_argument('--out', required=True)
    p.add_argument('--log-level', default='ERROR')
    a = p.parse_args()

    a.out = os.path.join(ORIG_CWD, a.out)
    os.makedirs(a.out, exist_ok=True)
    cluster_tag = a.cluster_spec.replace(':', '-')
    tag = f'{a.policy}_rate{a.rate:g}_seed{a.seed}_c{cluster_tag}_w{a.window_start}-{a.window_end}'
    n = [int(x) for x in a.cluster_spec.split(':')]
    cluster_spec = {'v100': n[0], 'p100': n[1], 'k80': n[2]}
    g = [int(x) for x in a.num_gpus_per_server.split(':')]
    num_gpus_per_server = {'v100': g[0], 'p100': g[1], 'k80': g[2]}
    jobs_to_complete = set(JobIdPair(i, None) for i in range(a.window_start, a.window_end))
    lam = 3600.0 / a.rate

    t0 = time.time()
    policy = utils.get_policy(a.policy, solver=a.solver, seed=a.seed)
    sched = scheduler.Scheduler(policy, throughputs_file=a.throughputs_file, seed=a.seed,
                                time_per_iteration=a.interval, simulate=True,
                                profiling_percentage=1.0, num_reference_models=len(JobTable))
    sched._orig_logger.setLevel(getattr(logging, a.log_level))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        sched.simulate(cluster_spec, lam=lam, jobs_to_complete=jobs_to_complete,
                       fixed_job_duration=None, generate_multi_gpu_jobs=a.generate_multi_gpu_jobs,
                       generate_multi_priority_jobs=False, simulate_steady_state=a.simulate_steady_state,
                       checkpoint_file=None, checkpoint_threshold=None,
                       num_gpus_per_server=num_gpus_per_server, ideal=False)
        avg = sched.get_average_jct(jobs_to_complete)
        util = sched.get_cluster_utilization()
    wall = time.time() - t0
    sim_out = buf.getvalue()
    with open(os.path.join(a.out, tag + '.stdout.txt'), 'w') as f:
        f.write(sim_out)

    jcts = {j: sched._job_completion_times[j] for j in sorted(jobs_to_complete)}
    with open(os.path.join(a.out, tag + '.jct.tsv'), 'w') as f:
        f.write('job_id\tjct_s\n')
        for j, v in jcts.items():
            f.write(f'{j[0]}\t{v:.6f}\n')
    # All generated jobs, in id order (add_job assigns ids in generation order).
    kind = 'multi' if a.generate_multi_gpu_jobs else 'single'
    start = 'steady' if a.simulate_steady_state else 'cold'
    with open(os.path.join(a.out, f'jobs_{kind}_rate{a.rate:g}_seed{a.seed}_{start}.tsv'), 'w') as f:
        f.write('job_id\tjob_type\tscale_factor\ttotal_steps\tduration_v100_s\tarrival_s\n')
        for i, (arr, job) in enumerate(sched._all_jobs):
            f.write(f'{i}\t{job.job_type}\t{job.scale_factor}\t{job.total_steps:.17g}\t{job.duration:.17g}\t'
                    f'{arr:.17g}\n')
    measured = sum(1 for v in jcts.values() if v is not None)
    res = dict(policy=a.policy, gavel_policy_name=policy.name, rate_per_hour=a.rate, lam_s=lam,
               seed=a.seed, cluster=a.cluster_spec, window=f'{a.window_start}-{a.window_end}',
               measured_jobs=measured, avg_jct_s=avg, avg_jct_h=avg / 3600.0, utilization=util,
               jobs_generated=len(sched._all_jobs), sim_end_s=sched._current_timestamp, wall_s=wall)
    print(json.dumps(res))
    sched.shutdown()


if __name__ == '__main__':
    main()
