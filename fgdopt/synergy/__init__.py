"""Synergy (OSDI'22) on fgdopt's engine: CPU- and memory-aware GPU scheduling; profiles, workload, allocation."""
