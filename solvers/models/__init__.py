"""Benchmark mechanisms, one module each (docs/explanation/models.md). See
docs/explanation/solver-contract.md."""
