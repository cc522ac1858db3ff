"""Elastic jobs (Pollux, OSDI'21): jobs whose speed depends on their GPU count, placement and batch size, and
the planners that re-decide every job's allocation each interval.

* :mod:`fgdopt.elastic.applications`: Pollux's measured application traces (step times, validation curves);
* :mod:`fgdopt.elastic.goodput`: the goodput model (throughput x statistical efficiency) and its fitting;
* :mod:`fgdopt.elastic.jobs`: an elastic job's progress on an allocation, and Pollux's workload files;
* :mod:`fgdopt.elastic.policies`: the planners ``tiresias`` and ``optimus`` (and ``pollux``,
  :mod:`fgdopt.elastic.pollux`);
* :mod:`fgdopt.elastic.rounds`: the jobs run on fgdopt's event engine, the planner's interval planning as a round
  policy of the one round loop that places each allocation in the engine's ``ClusterState`` (elastic jobs, gangs
  that change size) and sets speeds;
* :mod:`fgdopt.elastic.results`: a run's outcome (finish times, JCTs, restarts, GPU time).
"""
