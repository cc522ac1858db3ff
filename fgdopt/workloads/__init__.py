"""Workloads from outside: the open job format (:mod:`fgdopt.workloads.format`) and the converters of the public
GPU-cluster traces into it (:mod:`fgdopt.workloads.convert`)."""
