"""Benchmark mechanisms, one module each (docs/models.md). See docs/solver-contract.md."""
