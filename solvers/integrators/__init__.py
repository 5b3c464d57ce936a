"""Time integrators: kernel templates composed by :mod:`solvers.compose`."""
