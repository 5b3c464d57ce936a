"""Grid expansion: a :class:`~mbstudy.pipeline.study.StudySpec` -> the case table and batches.

::

    StudySpec --expand_grid--> Grid(blocks: BlockGrid..., references: ReferenceKey...)

Each ``[[runs]]`` block becomes a :class:`BlockGrid`: a product of dimensions (one per
axis, or one per zip group), its cases numbered in C order over the dimensions in file
order (the last dimension varies fastest, ``np.unravel_index(i, shape)``), split into
batches of ``batch_size`` consecutive cases. A batch is one task and one chunk of every
array along ``case`` in the store, so every write is chunk-aligned. The batch size is the
study file's ``batch_size``, or for ``"auto"`` the cost model's
(:mod:`mbstudy.pipeline.plan.batches`), or the one a store recorded
(:meth:`Grid.with_batch_sizes`, on resume).

Nothing here builds per-case Python objects for a whole block: coordinates, case ids and
reference indices are computed as arrays from the (small) per-dimension value tables, and
:meth:`BlockGrid.case_params` builds one case on demand.

Case ids
--------
``case_id`` is a stable 64-bit hash of the fully resolved case: the model, formulation,
integrator, t_end, samples and every model / formulation / integrator parameter with
defaults filled. It does not depend on key order in the file, on whether a value is
fixed or swept, nor on the block's name, so the same computation in two blocks (or two
versions of a study) has the same id. It is computed as a nonlinear 64-bit mix
(splitmix64's finaliser, a bijection) of the XOR of one blake2b-64 digest per
``(group, name, value)`` and one of the context; per dimension the XOR of its members'
digests is a small table, so ids of 10^6 cases cost a few array operations. Two distinct
cases collide only if the XOR of their differing digests vanishes (probability 2^-64
per pair).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from mbstudy.pipeline.plan.batches import auto_batch_size
from mbstudy.pipeline.study.spec import MethodParamViews, Pairs, RunSpec, StudySpec

if TYPE_CHECKING:
    from mbstudy.solvers.api import Entry

__all__ = [
    "BlockGrid",
    "CaseParams",
    "Dim",
    "Grid",
    "ReferenceKey",
    "expand_grid",
]

_ID_SALT = "mbstudy-case-v1"
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


# --------------------------------------------------------------------------------------
# data


@dataclass(frozen=True)
class Dim:
    """One product dimension of a block: one axis, or one zip group.

    Attributes
    ----------
    names : axis names (one, or the members of a zip group in file order).
    values : ``values[k]`` is the tuple of values of ``names[k]``; all have length
        :attr:`size` (column-wise: row ``j`` of a zip group is
        ``tuple(col[j] for col in values)``).
    """

    names: tuple[str, ...]
    values: tuple[tuple, ...]

    @property
    def size(self) -> int:
        """Number of positions along the dimension."""
        return len(self.values[0])

    def column(self, name: str) -> tuple:
        """Values of one member."""
        return self.values[self.names.index(name)]

    def row(self, j: int) -> tuple:
        """Values of every member at position ``j``."""
        return tuple(col[j] for col in self.values)


@dataclass(frozen=True)
class ReferenceKey:
    """What one reference trajectory depends on (besides ``StudySpec.reference``).

    Attributes
    ----------
    model_params : every model parameter, defaults filled in (model spec order).
    t_end, samples : the output window.
    """

    model_params: Pairs
    t_end: float
    samples: int

    @property
    def model_dict(self) -> dict[str, Any]:
        """``model_params`` as a dict."""
        return dict(self.model_params)


@dataclass(frozen=True)
class CaseParams(MethodParamViews):
    """Everything one case needs to run, fully resolved.

    Attributes
    ----------
    model, formulation, integrator : registry names.
    t_end, samples : output window.
    model_params, formulation_params, integrator_params : every parameter with defaults
        filled in (spec order).
    coords : the swept values of this case, ``(axis name, value)`` in file order
        (model axes as ``model.NAME``).
    block : the block's name; index : position along ``case``.
    case_id : :meth:`BlockGrid.case_ids` of this case; ref_index : index into
        ``Grid.references`` (-1 before :func:`expand_grid` resolved the references).
    """

    model: str
    formulation: str
    integrator: str
    t_end: float
    samples: int
    model_params: Pairs
    formulation_params: Pairs
    integrator_params: Pairs
    coords: Pairs
    block: str = ""
    index: int = 0
    case_id: int = 0
    ref_index: int = -1

    @property
    def model_dict(self) -> dict[str, Any]:
        """``model_params`` as a dict."""
        return dict(self.model_params)

    @property
    def coords_dict(self) -> dict[str, Any]:
        """``coords`` as a dict."""
        return dict(self.coords)

    def flat(self) -> dict[str, Any]:
        """Study-file spelling of every parameter: method params by name, ``model.NAME``."""
        out: dict[str, Any] = {f"model.{k}": v for k, v in self.model_params}
        out.update(self.formulation_params)
        out.update(self.integrator_params)
        return out


@dataclass(frozen=True)
class BlockGrid:
    """The cases of one ``[[runs]]`` block.

    Attributes
    ----------
    name, formulation, integrator, t_end, samples : from the block.
    dims : product dimensions in case order.
    axis_names : every swept name, file order.
    shape : ``dims`` sizes; n_cases : their product.
    batch_size : cases per batch = chunk length along ``case``; n_batches : ceil(n/bs).
    model : registry model name.
    model_params, formulation_params, integrator_params : resolved parameters of case 0
        (swept parameters hold their first value; :meth:`case_params` substitutes).
    targets : ``(axis name, groups)``: where each axis goes (``model`` /
        ``formulation`` / ``integrator``; a name both methods take goes to both).
    ref_dims : indices of the dimensions that hold model axes (they decide the
        reference); ref_table : reference index for each position of the sub-grid of
        ``ref_dims`` (C order); both set by :func:`expand_grid`.
    id_base, id_codes : the case-id tables (:meth:`id_tables`), precomputed so that
        :meth:`case_params` and :meth:`case_ids` hash nothing.
    """

    name: str
    formulation: str
    integrator: str
    t_end: float
    samples: int
    dims: tuple[Dim, ...]
    axis_names: tuple[str, ...]
    shape: tuple[int, ...]
    n_cases: int
    batch_size: int
    n_batches: int
    model: str = ""
    model_params: Pairs = ()
    formulation_params: Pairs = ()
    integrator_params: Pairs = ()
    targets: tuple[tuple[str, tuple[str, ...]], ...] = ()
    ref_dims: tuple[int, ...] = ()
    ref_table: tuple[int, ...] = ()
    id_base: int = -1  # -1: not precomputed
    id_codes: tuple[tuple[int, ...], ...] = ()

    # -- batches ---------------------------------------------------------------------
    def batch_range(self, b: int) -> tuple[int, int]:
        """Return ``(start, stop)`` of batch ``b`` along ``case``."""
        if not 0 <= b < self.n_batches:
            raise IndexError(f"batch {b} out of range [0, {self.n_batches})")
        start = b * self.batch_size
        return start, min(start + self.batch_size, self.n_cases)

    def batches(self) -> list[tuple[int, int]]:
        """Every ``batch_range``, in order."""
        return [self.batch_range(b) for b in range(self.n_batches)]

    # -- positions -------------------------------------------------------------------
    @property
    def strides(self) -> tuple[int, ...]:
        """C-order strides of the dimensions (in cases)."""
        out, acc = [], 1
        for size in reversed(self.shape):
            out.append(acc)
            acc *= size
        return tuple(reversed(out))

    def _locate(self, name: str) -> tuple[int, int]:
        for d, dim in enumerate(self.dims):
            if name in dim.names:
                return d, dim.names.index(name)
        raise KeyError(
            f"{name!r} is not an axis of block {self.name!r} "
            f"(axes: {', '.join(self.axis_names) or 'none'})"
        )

    def _range(self, start: int, stop: int | None) -> np.ndarray:
        stop = self.n_cases if stop is None else stop
        if not 0 <= start <= stop <= self.n_cases:
            raise IndexError(f"case range [{start}, {stop}) outside [0, {self.n_cases})")
        return np.arange(start, stop, dtype=np.int64)

    def dim_index(self, d: int, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Position along dimension ``d`` of each case in ``[start, stop)`` (int64)."""
        idx = self._range(start, stop)
        return (idx // self.strides[d]) % self.shape[d]

    # -- per case --------------------------------------------------------------------
    def case_params(self, i: int) -> CaseParams:
        """Return the fully resolved parameters of case ``i``."""
        i = int(i)
        if not 0 <= i < self.n_cases:
            raise IndexError(f"case {i} out of range [0, {self.n_cases})")
        groups = {
            "model": dict(self.model_params),
            "formulation": dict(self.formulation_params),
            "integrator": dict(self.integrator_params),
        }
        targets = dict(self.targets)
        coords: dict[str, Any] = {}
        for d, dim in enumerate(self.dims):
            j = (i // self.strides[d]) % self.shape[d]
            for name, col in zip(dim.names, dim.values, strict=True):
                coords[name] = col[j]
                pname = name.removeprefix("model.")
                for group in targets[name]:
                    groups[group][pname] = col[j]
        return CaseParams(
            model=self.model,
            formulation=self.formulation,
            integrator=self.integrator,
            t_end=self.t_end,
            samples=self.samples,
            model_params=tuple(groups["model"].items()),
            formulation_params=tuple(groups["formulation"].items()),
            integrator_params=tuple(groups["integrator"].items()),
            coords=tuple((n, coords[n]) for n in self.axis_names),
            block=self.name,
            index=i,
            case_id=self.case_id(i),
            ref_index=self._ref_index_of(i),
        )

    # -- vectorized ------------------------------------------------------------------
    def axis_values(self, name: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Coordinate array of axis ``name`` along ``case`` (for ``[start, stop)``).

        float64 for floats, int64 for ints, bool for bools, unicode for strings.
        """
        d, k = self._locate(name)
        column = _as_array(self.dims[d].values[k])
        return column[self.dim_index(d, start, stop)]

    def id_tables(self) -> tuple[int, tuple[tuple[int, ...], ...]]:
        """``(base, codes)``: the XOR of the context's and the fixed parameters' digests,
        and per dimension the XOR of its members' digests at each position."""
        if self.id_base >= 0:
            return self.id_base, self.id_codes
        return _id_tables(self)

    def case_ids(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Stable uint64 id of each case in ``[start, stop)`` (see the module docstring)."""
        idx = self._range(start, stop)
        base, codes = self.id_tables()
        acc = np.full(idx.shape, base, dtype=np.uint64)
        for d, table in enumerate(codes):
            acc ^= np.asarray(table, dtype=np.uint64)[(idx // self.strides[d]) % self.shape[d]]
        return _mix64(acc)

    def case_id(self, i: int) -> int:
        """``case_ids()[i]`` computed for one case (pure Python, no arrays)."""
        base, codes = self.id_tables()
        acc = base
        for d, table in enumerate(codes):
            acc ^= table[(i // self.strides[d]) % self.shape[d]]
        return _mix64_int(acc)

    def _ref_index_of(self, i: int) -> int:
        if not self.ref_table:
            return -1
        sub = 0
        for d in self.ref_dims:
            sub = sub * self.shape[d] + (i // self.strides[d]) % self.shape[d]
        return self.ref_table[sub]

    def ref_index(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Index into ``Grid.references`` of each case in ``[start, stop)`` (int32)."""
        idx = self._range(start, stop)
        if not self.ref_table:
            raise RuntimeError("references are resolved by expand_grid()")
        table = np.asarray(self.ref_table, dtype=np.int32)
        if not self.ref_dims:
            return np.full(idx.shape, table[0], dtype=np.int32)
        sub = np.zeros(idx.shape, dtype=np.int64)
        for d in self.ref_dims:
            sub = sub * self.shape[d] + (idx // self.strides[d]) % self.shape[d]
        return table[sub]


@dataclass(frozen=True)
class Grid:
    """Every block of a study and the references its cases need."""

    blocks: tuple[BlockGrid, ...]
    references: tuple[ReferenceKey, ...]

    @property
    def n_cases(self) -> int:
        """Total number of cases."""
        return sum(b.n_cases for b in self.blocks)

    @property
    def n_batches(self) -> int:
        """Total number of batches (tasks)."""
        return sum(b.n_batches for b in self.blocks)

    def block(self, name: str) -> BlockGrid:
        """Return the block named ``name``."""
        for b in self.blocks:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def batch_sizes(self) -> dict[str, int]:
        """The batch plan: cases per batch of every block, by block name."""
        return {b.name: b.batch_size for b in self.blocks}

    def with_batch_sizes(self, sizes: Mapping[str, int]) -> Grid:
        """The same grid cut into batches of ``sizes[name]`` (blocks not named keep theirs).

        A resumed store keeps the batch sizes it was made with (its chunks), whatever the
        cost model says today.
        """
        return replace(
            self,
            blocks=tuple(
                b if b.name not in sizes else _with_batch_size(b, int(sizes[b.name]))
                for b in self.blocks
            ),
        )


# --------------------------------------------------------------------------------------
# hashing helpers


def _canon(value: Any) -> str:
    """Canonical text of a normalized parameter value (type-tagged)."""
    if isinstance(value, bool | np.bool_):
        return "b:true" if value else "b:false"
    if isinstance(value, int | np.integer):
        return f"i:{int(value)}"
    if isinstance(value, float | np.floating):
        return f"f:{float(value) + 0.0!r}"
    if isinstance(value, str):
        return "s:" + json.dumps(value, ensure_ascii=True)
    raise TypeError(f"cannot hash parameter value {value!r}")


def _h64(text: str) -> int:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _contribution(group: str, name: str, value: Any) -> int:
    return _h64(f"{_ID_SALT}\x1f{group}\x1f{name}\x1f{_canon(value)}")


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (a bijection of uint64), vectorized; wraps mod 2**64."""
    z = z.astype(np.uint64, copy=True)
    z ^= z >> np.uint64(30)
    z *= _M1
    z ^= z >> np.uint64(27)
    z *= _M2
    z ^= z >> np.uint64(31)
    return z


def _mix64_int(z: int) -> int:
    """:func:`_mix64` of one Python int."""
    mask = (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def _id_tables(block: BlockGrid) -> tuple[int, tuple[tuple[int, ...], ...]]:
    swept = {(g, n.removeprefix("model.")) for n, gs in block.targets for g in gs}
    base = _h64(
        f"{_ID_SALT}\x1fcontext\x1f{block.model}\x1f{block.formulation}\x1f"
        f"{block.integrator}\x1f{_canon(block.t_end)}\x1f{_canon(block.samples)}"
    )
    for group, params in (
        ("model", block.model_params),
        ("formulation", block.formulation_params),
        ("integrator", block.integrator_params),
    ):
        for pname, value in params:
            if (group, pname) not in swept:
                base ^= _contribution(group, pname, value)
    targets = dict(block.targets)
    codes = []
    for dim in block.dims:
        table = [0] * dim.size
        for name, col in zip(dim.names, dim.values, strict=True):
            pname = name.removeprefix("model.")
            for group in targets[name]:
                for j, v in enumerate(col):
                    table[j] ^= _contribution(group, pname, v)
        codes.append(tuple(table))
    return base, tuple(codes)


def _as_array(values: tuple) -> np.ndarray:
    first = values[0]
    if isinstance(first, bool):
        return np.asarray(values, dtype=np.bool_)
    if isinstance(first, int):
        return np.asarray(values, dtype=np.int64)
    if isinstance(first, float):
        return np.asarray(values, dtype=np.float64)
    return np.asarray(values, dtype=np.str_)


# --------------------------------------------------------------------------------------
# building blocks


def _with_batch_size(block: BlockGrid, batch_size: int) -> BlockGrid:
    bs = max(1, min(batch_size, block.n_cases))
    return replace(block, batch_size=bs, n_batches=-(-block.n_cases // bs))


def _block_from_run(
    model: str, model_params: Pairs, run: RunSpec, batch_size: int | None = None,
    entry: Entry | None = None,
) -> BlockGrid:
    """A :class:`BlockGrid` without references (``ref_table`` empty).

    Its batch size is ``batch_size``, else the block's own (an explicit study
    ``batch_size``), else the cost model's (:func:`auto_batch_size`, with the model's
    ``entry`` the study resolved).
    """
    axes = run.axes_dict
    fixed = run.fixed_dict
    mp = dict(model_params)
    for key, value in fixed.items():
        if key.startswith("model."):
            mp[key.removeprefix("model.")] = value
    fp: dict[str, Any] = {}
    ip: dict[str, Any] = {}
    for keys, out in ((run.formulation_keys, fp), (run.integrator_keys, ip)):
        for k in keys:
            out[k] = axes[k][0] if k in axes else fixed[k]
    targets = []
    for name, values in run.axes:
        if name.startswith("model."):
            mp[name.removeprefix("model.")] = values[0]
            groups: tuple[str, ...] = ("model",)
        else:
            groups = tuple(
                g
                for g, keys in (
                    ("formulation", run.formulation_keys),
                    ("integrator", run.integrator_keys),
                )
                if name in keys
            )
        targets.append((name, groups))
    dims = tuple(
        Dim(names=group, values=tuple(axes[n] for n in group)) for group in run.dim_groups()
    )
    shape = tuple(d.size for d in dims)
    n_cases = math.prod(shape)
    bs = max(1, min(batch_size or run.batch_size or 1, n_cases))
    block = BlockGrid(
        name=run.name,
        formulation=run.formulation,
        integrator=run.integrator,
        t_end=run.t_end,
        samples=run.samples,
        dims=dims,
        axis_names=run.axis_names,
        shape=shape,
        n_cases=n_cases,
        batch_size=bs,
        n_batches=-(-n_cases // bs),
        model=model,
        model_params=tuple(mp.items()),
        formulation_params=tuple(fp.items()),
        integrator_params=tuple(ip.items()),
        targets=tuple(targets),
    )
    base, codes = _id_tables(block)
    block = replace(block, id_base=base, id_codes=codes)
    if batch_size is None and run.batch_size is None:
        block = _with_batch_size(block, auto_batch_size(block, entry))
    return block


def expand_grid(study: StudySpec, batch_sizes: Mapping[str, int] | None = None) -> Grid:
    """Expand every block of ``study`` and collect the references its cases need.

    ``batch_sizes`` (block name -> cases per batch, e.g. :attr:`Grid.batch_sizes` recorded
    by a store) overrides the study's batch sizes. References are ordered canonically (by
    t_end, samples, then model parameter values), so their order does not depend on the
    order of blocks in the file.
    """
    sizes = dict(batch_sizes or {})
    blocks = [
        _block_from_run(study.model, study.model_params, run, sizes.get(run.name),
                        study.model_entry)
        for run in study.runs
    ]
    keys: dict[ReferenceKey, int] = {}
    raw_tables: list[tuple[tuple[int, ...], list[ReferenceKey]]] = []
    for block in blocks:
        ref_dims = tuple(
            d for d, dim in enumerate(block.dims) if any(n.startswith("model.") for n in dim.names)
        )
        base = dict(block.model_params)
        table = []
        for pos in itertools.product(*(range(block.shape[d]) for d in ref_dims)):
            mp = dict(base)
            for d, j in zip(ref_dims, pos, strict=True):
                dim = block.dims[d]
                for name, col in zip(dim.names, dim.values, strict=True):
                    if name.startswith("model."):
                        mp[name.removeprefix("model.")] = col[j]
            key = ReferenceKey(tuple(mp.items()), block.t_end, block.samples)
            keys.setdefault(key, len(keys))
            table.append(key)
        raw_tables.append((ref_dims, table))
    order = sorted(keys, key=lambda k: (k.t_end, k.samples, tuple(v for _, v in k.model_params)))
    index = {k: j for j, k in enumerate(order)}
    out = [
        replace(b, ref_dims=dims, ref_table=tuple(index[k] for k in table))
        for b, (dims, table) in zip(blocks, raw_tables, strict=True)
    ]
    return Grid(blocks=tuple(out), references=tuple(order))
