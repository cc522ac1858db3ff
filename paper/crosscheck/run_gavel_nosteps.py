"""run_gavel.py with one change to Gavel's simulator, for a sensitivity check only (its rows are not Gavel's own runs):
a round runs ``throughput x 360`` steps (a float), not Gavel's ``int(throughput x 360)``, so a job's round lasts the
whole 360 s (to the last bit or so), as in fgdopt's default ``--steps continuous``. The change replaces
``Scheduler._get_num_steps`` at import time (jobs not packed in pairs, as in these runs; Gavel's tree is not edited);
a job's last round takes all its remaining steps once they are within 1e-9 of a round's. Everything else is
run_gavel.py's, including its arguments and dumps.

Usage: python run_gavel_nosteps.py --policy max_min_fairness --rate 4.8 --seed 0 -c 36:36:36 -s 4000 -e 5000 --out DIR
"""
import run_gavel  # sets Gavel's path and working directory
import scheduler


def _get_num_steps(self, job_id, worker_type, single_job_id=None):
    assert not job_id.is_pair()
    num_steps = self._throughputs[job_id][worker_type] * self._time_per_iteration
    remaining = self._get_remaining_steps(job_id)
    return remaining if num_steps >= remaining - 1e-9 * max(1.0, remaining) else num_steps


scheduler.Scheduler._get_num_steps = _get_num_steps
run_gavel.main()
