"""Constraint formulations: kernel templates composed by :mod:`solvers.compose`."""
