"""Elastic jobs (Pollux, OSDI'21): jobs whose speed depends on their GPU count, placement and batch size, and
the planners that re-decide every job's allocation each interval.

* :mod:`fgdopt.elastic.applications`: Pollux's measured application traces (step times, validation curves);
* :mod:`fgdopt.elastic.goodput`: the goodput model (throughput x statistical efficiency) and its fitting;
* :mod:`fgdopt.elastic.jobs`: an elastic job's progress on an allocation, and Pollux's workload files;
* :mod:`fgdopt.elastic.policies`: the planners ``tiresias`` and ``optimus`` (and ``pollux``,
  :mod:`fgdopt.elastic.pollux`);
* :mod:`fgdopt.elastic.intervals`: the interval loop that runs jobs under a planner (Pollux's own form);
* :mod:`fgdopt.elastic.onengine`: the same on fgdopt's event engine, the planner as a mechanism that places each
  allocation in the engine's ``ClusterState`` (elastic jobs, gangs that change size) and sets speeds.
"""
