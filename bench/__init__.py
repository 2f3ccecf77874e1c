"""support-ask's benchmarks: each figure is measured against a baseline in the same run.

Run them with `bench/run` (everything, a table on stdout) or `bench/run --smoke` (tiny
iteration counts: proves every benchmark still works, judges nothing). Machines are noisy,
so the figures that matter are ratios and differences against a baseline whose runs are
interleaved with the candidate's, never absolute times compared across runs.
"""
