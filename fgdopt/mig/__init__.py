"""NVIDIA Multi-Instance GPU (MIG): the slice rule, the evaluator, the suites and MIG over time (each module imports
only from below it; this file imports nothing, so :mod:`fgdopt.state` reads the slice rule from
:mod:`fgdopt.mig.slices` without importing anything above it):

================================  ===================================================================================
:mod:`fgdopt.mig.slices`          the profile table, the slice rule, :class:`~fgdopt.mig.slices.MigLayout` (read by
                                  ``ClusterState``), the exact re-layout of one GPU
:mod:`fgdopt.mig.frag`            the MIG form of the fragmentation evaluator F(M)
:mod:`fgdopt.mig.suites`          openb tasks mapped to profiles, MIG clusters and instances, adversarial instances
:mod:`fgdopt.mig.timeline`        MIG over time: the rule of the ``mig-repack`` mechanism (built in, in
                                  :mod:`fgdopt.timeline.preemption`), the static partition, openb jobs as profiles
================================  ===================================================================================

The MIG placement policies are policies (:mod:`fgdopt.policies.mig`), the ``mig-repack`` mechanism a mechanism
(:mod:`fgdopt.timeline.preemption`). The exact models are formulations (``formulations.mig``), the study an
experiment (``experiments.mig``).
"""
