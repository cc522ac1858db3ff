"""Run one point of Synergy's simulator (msr-fiddle/synergy, commit 1bb2bed6, directory simulator/) exactly as
runner.py's benchmark() does for one (scheduler, load, split), without editing Synergy's tree.

What this driver does that runner.py's benchmark() does not (none affects the simulation):
  * the scheduler, load (jobs/hour), class split and seed come from the command line instead of the
    hard-coded lists in benchmark() (``schedulers = ['FIFO+fair']``, ``jobs_per_hours``, ``class_split``);
    the placement/fair/tune/opt flags are derived from the scheduler name exactly as benchmark() does
    ('LAS' = Synergy-Greedy, 'LAS+fair' = GPU-proportional, 'LAS+tune' = Synergy-Tune);
  * it runs in a scratch directory (--workdir) so the trace pickle, the cache and plots are written there,
    not into Synergy's tree; the cluster config is given by absolute path;
  * the gRPC deployment modules that runner.py imports (never used in simulation) are replaced by empty
    modules, so no protobuf stubs need to be generated into the tree;
  * Runner.finish_job, Workload.generate_next_job and Job.allocate/deallocate are wrapped (the wrapped
    method is always called unchanged) to dump the generated jobs, each job's finish time and its
    time-weighted CPU / memory allocation;
  * the stop condition is Synergy's own (every job of the measured window 4000-4999 finished); --cap-s
    stops a run after that many CPU seconds and records that it did not end; --last-job N also stops it at the
    first round after job N's arrival (fgdopt's rule, below), whichever comes first;
  * --progress-h H prints the simulated hour and the CPU seconds every H simulated hours (to stderr).

--last-job N is the stop rule of fgdopt's ``experiments.synergy``, which generates jobs 0..N (N = the window's end
+ ceil(load x 1500) - 1, e.g. 18499 at 9 jobs/h) and stops at the first round (a multiple of the 300 s round,
strictly) after the last one's arrival, or when every measured job has finished, whichever is first. Jobs that
arrive after job N (Synergy's stream is endless) arrive after the last round before that stop, so they never run
in Synergy's run either; a job finishes only at a round's end, so the jobs finished by the stop are those whose
lease ended at or before it. The run then records ``ended = False`` and ``stop = last-job N``, and its mean and
p99 are over the measured jobs finished by the stop (as fgdopt's row is).

The trace: Synergy's ``trace/cluster_job_log`` (Philly) is not in the public repository snapshot. In the
default mode (single-GPU, exponential=True, sum_attempts=True) the trace contributes only the number of jobs
that pass the parser's duration filter (lengths are redrawn by get_gavel_like_iter(), every job asks for
1 GPU, arrivals are Poisson at run time), so --make-trace writes a stand-in of 30,000 one-attempt, 60-minute,
1-GPU jobs, and the unmodified parser builds the pickle from it with random.seed(42) (the state runner.py's
main() and benchmark() leave), in a first process that only builds the pickle (--build-pickle), as
runner.py's first run would.

Usage (from anywhere, with the synergy venv's python):
  python run_synergy.py --synergy /work/peers/synergy/simulator --workdir /work/peers/synergy/work \
      --make-trace --build-pickle
  python run_synergy.py --synergy ... --workdir ... --scheduler FIFO+tune --load 9 --split 20,70,10 \
      --seed 42 --out DIR
  python run_synergy.py ... --scheduler LAS+tune --load 9 --last-job 18499 --progress-h 100 --out DIR
Writes DIR/jobs-<scheduler>-<load>.csv (one row per finished job of the window), DIR/gen-<scheduler>-<load>.csv
(every generated job), DIR/run-<scheduler>-<load>.json (summary: mean/p99 JCT s, cpu_s, ended, command).
"""
import argparse
import csv
import datetime
import json
import logging
import os
import random
import resource
import sys
import types

N_STANDIN = 30000


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def make_trace(path):
    """Write the stand-in cluster_job_log: N_STANDIN jobs, one attempt each, 60 minutes, 1 GPU."""
    t0 = datetime.datetime(2017, 10, 1)
    fmt = '%Y-%m-%d %H:%M:%S'
    jobs = []
    for i in range(N_STANDIN):
        sub = t0 + datetime.timedelta(seconds=60 * i)
        start = sub + datetime.timedelta(seconds=10)
        end = start + datetime.timedelta(minutes=60)
        jobs.append({'jobid': f'standin_{i:05d}', 'vc': 'vc0', 'user': 'u0', 'status': 'Pass',
                     'submitted_time': sub.strftime(fmt),
                     'attempts': [{'start_time': start.strftime(fmt), 'end_time': end.strftime(fmt),
                                   'detail': [{'ip': 'm0', 'gpus': ['gpu0']}]}]})
    with open(path, 'w') as f:
        json.dump(jobs, f)


def stub_deployment(sim):
    """Stand-ins for the gRPC packages runner.py imports but never uses when simulating: ``deployment`` without its
    __init__ (which imports the generated protobuf stubs), its real ``helper`` module, and ``deployment.runtime``
    whose every attribute is an empty module."""
    class Stub(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith('__'):
                raise AttributeError(name)
            mod = Stub(self.__name__ + '.' + name)
            mod.__path__ = []
            sys.modules[mod.__name__] = mod
            setattr(self, name, mod)
            return mod

    pkg = types.ModuleType('deployment')
    pkg.__path__ = [os.path.join(sim, 'deployment')]
    sys.modules['deployment'] = pkg
    runtime = Stub('deployment.runtime')
    runtime.__path__ = []
    sys.modules['deployment.runtime'] = runtime
    pkg.runtime = runtime
    runtime.rpc  # noqa: B018  (creates deployment.runtime.rpc)


COLUMNS = ('policy', 'load', 'split', 'seed', 'stop', 'stop_s', 'ended', 'finished_in_window', 'mean_jct_s',
           'p99_jct_s', 'mean_jct_h', 'p99_jct_h', 'sim_time_s', 'cpu_s', 'command')


def collect(out):
    """Rewrite out/synergy.csv from the run-*.json summaries in out (one row per run, sorted)."""
    rows = []
    for name in sorted(os.listdir(out)):
        if name.startswith('run-') and name.endswith('.json'):
            with open(os.path.join(out, name)) as f:
                run = json.load(f)
            run['policy'] = run.pop('scheduler')
            run.setdefault('stop', 'window' if run['ended'] else 'cap')   # runs made before --last-job existed
            run.setdefault('stop_s', run['sim_time_s'])
            rows.append(run)
    rows.sort(key=lambda r: (r['policy'].split('+')[0], r['load'], r['policy'], r['split'], r['seed']))
    with open(os.path.join(out, 'synergy.csv'), 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction='ignore')
        w.writeheader()
        w.writerows(rows)
    print('wrote', os.path.join(out, 'synergy.csv'), len(rows), 'runs')


def scheduler_flags(name):
    """(class name, placement, fair, tune, opt) exactly as runner.benchmark derives them."""
    return (name.split('+')[0], 'place' in name, 'fair' in name, 'tune' in name, 'opt' in name)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--synergy', required=True, help="Synergy's simulator/ directory")
    p.add_argument('--workdir', required=True, help='scratch directory (trace pickle, cache, plots)')
    p.add_argument('--make-trace', action='store_true')
    p.add_argument('--build-pickle', action='store_true')
    p.add_argument('--scheduler', default='FIFO+tune')
    p.add_argument('--load', type=float, default=9.0, help='jobs per hour')
    p.add_argument('--split', default='20,70,10')
    p.add_argument('--seed', type=int, default=42)
    p.add_argument('--window', default='4000,5000')
    p.add_argument('--config', default='configs/default_cluster.ini')
    p.add_argument('--cap-s', type=float, default=0.0, help='stop after this many CPU seconds (0: never)')
    p.add_argument('--last-job', type=int, default=-1,
                   help="also stop at the first round strictly after this job id's arrival (fgdopt's rule; -1: never)")
    p.add_argument('--progress-h', type=float, default=0.0,
                   help='print the simulated hour and CPU seconds every this many simulated hours (0: never)')
    p.add_argument('--out', default=None)
    p.add_argument('--collect', action='store_true', help='only rewrite OUT/synergy.csv from the run summaries')
    a = p.parse_args()
    if a.collect:
        collect(os.path.abspath(a.out))
        return

    sim = os.path.abspath(a.synergy)
    work = os.path.abspath(a.workdir)
    out = os.path.abspath(a.out) if a.out else None
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, 'cluster_job_log')
    if a.make_trace:
        make_trace(trace)
        print('wrote', trace)
    sys.path.insert(0, sim)
    os.chdir(work)
    stub_deployment(sim)
    logging.basicConfig(format='%(module)s - %(funcName)s - %(levelname)s - %(message)s', level=logging.WARNING)
    import runner  # noqa: E402  (Synergy's runner.py)
    from jobs.job import Job  # noqa: E402
    from jobs.workload import Workload  # noqa: E402

    split = tuple(int(x) for x in a.split.split(','))
    window = tuple(int(x) for x in a.window.split(','))
    config = os.path.join(sim, a.config)
    sched, placement, fair, tune, opt = scheduler_flags(a.scheduler)

    def make_runner():
        return runner.Runner(cluster_job_log=trace, scheduler=sched, jobs_per_hour=a.load,
                             series_id_filter=window, model_class_split=split, exponential=True,
                             philly_arrival=False, multigpu=False, small_trace=False, static=False,
                             placement=placement, prioritize=False, fair=fair, tune=tune, opt=opt,
                             simulate=True, conn_list=None, config_file=config, num_jobs_default=0,
                             record_trace=False, rec_trace_file='./record', trace=None)

    if a.build_pickle:
        if os.path.exists('philly_jobs_sum_attempts_exp_single.pickle'):
            sys.exit(f'pickle already exists in {work}; remove it to rebuild')
        random.seed(42)  # runner.main(): random.seed(args.seed); benchmark(): random.seed(seed)
        make_runner()
        print('built', os.path.join(work, 'philly_jobs_sum_attempts_exp_single.pickle'))
        return
    if not os.path.exists('philly_jobs_sum_attempts_exp_single.pickle'):
        sys.exit(f'no trace pickle in {work}: run with --make-trace --build-pickle first')

    generated, finished, alloc = [], {}, {}
    orig_gen, orig_finish = Workload.generate_next_job, runner.Runner.finish_job
    orig_alloc, orig_dealloc = Job.allocate, Job.deallocate

    def gen(self, last, arrival=-1):
        job = orig_gen(self, last, arrival=arrival)
        generated.append((job.job_id, job.job_arrival_time, job.job_model.model_name, job.job_class_id,
                          job.job_gpu_demand, job.job_cpu_demand_orig, job.job_mem_demand_orig,
                          job.synergy_speedup, job.job_iteration_time, job.job_total_iteration))
        return job

    def fin(self, job):
        orig_finish(self, job)
        finished[job.job_id] = self.time

    def allocate(self, gpus, time=None, res_map=None, fair=True, simulate=True):
        orig_alloc(self, gpus, time=time, res_map=res_map, fair=fair, simulate=simulate)
        if time is not None:
            alloc.setdefault(self.job_id, []).append((time, self.cpus, self.mem))

    def deallocate(self, gpus, release_map=None, revert_iter=False, time=0, simulate=True):
        if revert_iter and alloc.get(self.job_id):
            alloc[self.job_id].pop()  # Synergy rolls the round back
        orig_dealloc(self, gpus, release_map=release_map, revert_iter=revert_iter, time=time, simulate=simulate)

    Workload.generate_next_job, runner.Runner.finish_job = gen, fin
    Job.allocate, Job.deallocate = allocate, deallocate

    random.seed(a.seed)  # as benchmark() does before each Runner
    c0 = cpu_seconds()
    r = make_runner()
    stop = {'s': float('inf')}                  # --last-job: the first round strictly after that job's arrival
    cap = c0 + a.cap_s if a.cap_s > 0 else float('inf')
    progress = {'next_h': a.progress_h}
    orig_set_time = r.set_time

    def set_time(t):
        orig_set_time(t)
        if stop['s'] == float('inf') and 0 <= a.last_job < len(generated):   # job ids are 0, 1, ... in order
            rd = r.scheduler.round_duration           # Synergy's rounds are at 0, rd, 2 rd, ...
            stop['s'] = (generated[a.last_job][1] // rd + 1) * rd
        if t > stop['s'] or (a.cap_s > 0 and cpu_seconds() > cap):
            r.terminate = True              # the event at t is still handled: its finishes are after the stop
        if a.progress_h > 0 and t / 3600 >= progress['next_h']:
            print(f'simulated {t / 3600:.0f} h, CPU {cpu_seconds() - c0:.1f} s, runnable {len(r.runnable_jobs)}, '
                  f'finished {len(r.finished_jobs)}', file=sys.stderr, flush=True)
            progress['next_h'] = (t / 3600 // a.progress_h + 1) * a.progress_h
    r.set_time = set_time
    r.run_simulation()
    cpu = cpu_seconds() - c0
    lo, hi = window
    gen_by_id = {g[0]: g for g in generated}
    rows = []
    for jid in sorted(j for j in finished if lo <= j < hi and finished[j] <= stop['s']):
        g = gen_by_id[jid]
        hist = alloc.get(jid, [])
        held = sum(t for t, _, _ in hist)
        cpus = sum(t * c for t, c, _ in hist) / held if held else float('nan')
        mem = sum(t * m for t, _, m in hist) / held if held else float('nan')
        rows.append(dict(job_id=jid, arrival_s=g[1], duration_s=g[8] * g[9], model=g[2], class_id=g[3],
                         gpus=g[4], cpu_demand=g[5], mem_demand_gb=g[6], speedup=g[7], cpus_alloc=cpus,
                         mem_alloc_gb=mem, run_s=held, finish_s=finished[jid], jct_s=finished[jid] - g[1]))
    ended = len(rows) == hi - lo
    stopped = r.time > stop['s']
    jcts = sorted(row['jct_s'] for row in rows)
    summary = dict(scheduler=a.scheduler, load=a.load, split=a.split, seed=a.seed,
                   stop=f'last-job {a.last_job}' if stopped else 'window' if ended else 'cap',
                   stop_s=stop['s'] if stopped else r.time, ended=ended,
                   finished_in_window=len(rows), generated=len(generated), sim_time_s=r.time, cpu_s=round(cpu, 2),
                   command=' '.join([os.path.basename(sys.argv[0])] + sys.argv[1:]))
    if jcts:
        import numpy as np
        summary['mean_jct_s'] = float(np.mean(jcts))
        summary['p99_jct_s'] = float(np.quantile(jcts, 0.99))  # pandas' default (linear), as stats.py prints
        summary['mean_jct_h'] = summary['mean_jct_s'] / 3600
        summary['p99_jct_h'] = summary['p99_jct_s'] / 3600
    print(json.dumps(summary))
    if out:
        os.makedirs(out, exist_ok=True)
        tag = f'{a.scheduler}-{a.load:g}'
        if a.split != '20,70,10' or a.seed != 42:
            tag += '-split{}-seed{}'.format(a.split.replace(',', '_'), a.seed)
        with open(os.path.join(out, f'jobs-{tag}.csv'), 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ['job_id'])
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(out, f'gen-{tag}.csv'), 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['job_id', 'arrival_s', 'model', 'class_id', 'gpus', 'cpu_demand', 'mem_demand_gb',
                        'speedup', 'iteration_time_s', 'total_iterations'])
            w.writerows(generated)
        with open(os.path.join(out, f'run-{tag}.json'), 'w') as f:
            json.dump(summary, f, indent=1)
        collect(out)


if __name__ == '__main__':
    main()
