"""Benchmark mechanisms, one module each (PROBLEMS.md). See docs/solver-contract.md."""
