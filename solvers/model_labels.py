"""Names of a model's coordinates and constraint rows: the labels of a store's ``coord``
and ``constraint`` dimensions, of series plots and of ``mbstudy run``.

One style for every model, the one mechanism files use (solvers/mechanisms/rownames.py):
a coordinate is ``BODY.COORDINATE`` (``crank.theta``, ``rod.x``, ``top.e0``), a constraint
row ``JOINT.ROW`` with the joint named by its two bodies (``crank-ground.x``) or by what it
closes (``top.e_norm``). The first source that fits the size wins:

1. the model's ``SPEC.coordinate_labels`` / ``SPEC.constraint_labels``: the built-in
   models of fixed size (andrews, fourbar, manipulator, oscillator, parallelogram,
   pendulum, top);
2. the module's ``coordinate_names(n)`` / ``constraint_names(m)``: built-in models whose
   size varies with a parameter and whose structure repeats (nfourbar: ``crank0.x``,
   ``coupler0-crank1.y``);
3. the module's ``coordinate_names_of(model_params)``: models whose names come from a
   file named by a parameter (network: ``NODE.x`` for each free node of its netlist);
4. a mechanism file's generated ``COORD_NAMES`` / ``ROW_LABELS``;
5. generic ``q0, q1, ...`` / ``c0, c1, ...``: a network whose netlist is not given or
   not readable, and plugins that name nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from mbstudy.solvers import model_entry, registry

__all__ = ["constraint_labels", "coordinate_labels"]


def _labels(entry: registry.Entry, size: int, declared: Sequence[str],
            function: str, generated: str, prefix: str,
            from_params: Sequence[str] = ()) -> list[str]:  # fmt: skip
    module = entry.module
    make: Callable[[int], Sequence[str]] | None = getattr(module, function, None)
    for names in (tuple(declared or ()), tuple(make(size)) if make else (),
                  tuple(from_params), tuple(getattr(module, generated, ()) or ())):  # fmt: skip
        if names and len(names) == size:
            return [str(n) for n in names]
    return [f"{prefix}{i}" for i in range(size)]


def coordinate_labels(model: str | registry.Entry, n: int,
                      model_params: Mapping[str, object] | None = None,
                      swept: Collection[str] = ()) -> list[str]:
    """Names of the ``n`` coordinates of ``model`` (a name or a resolved entry, with its
    parameters where the names depend on them; ``swept``: the block's axis names); the
    generic ``q0, q1, ...`` when the model names none or names another count (a swept
    parameter changed its size)."""
    entry = model_entry.resolve(model)
    declared = getattr(entry.spec, "coordinate_labels", ())
    of_params = getattr(entry.module, "coordinate_names_of", None)
    from_params: Sequence[str] = ()
    if of_params is not None and model_params is not None:
        # names that depend on a swept parameter (the module's LABEL_PARAMS) would differ
        # between cases, so they are not used then
        if not any(f"model.{k}" in swept for k in getattr(entry.module, "LABEL_PARAMS", ())):
            from_params = of_params(model_params)
    return _labels(entry, n, declared, "coordinate_names", "COORD_NAMES", "q", from_params)


def constraint_labels(model: str | registry.Entry, m: int) -> list[str]:
    """Names of the ``m`` constraint rows of ``model``, as :func:`coordinate_labels`
    (generic ``c0, c1, ...``)."""
    entry = model_entry.resolve(model)
    declared = getattr(entry.spec, "constraint_labels", ())
    return _labels(entry, m, declared, "constraint_names", "ROW_LABELS", "c")
