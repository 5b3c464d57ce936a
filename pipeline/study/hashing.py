"""The study hash: what ``StudySpec.spec_hash`` covers, as canonical JSON.

A store records the hash of the study that made it; resuming requires the same hash. The
hash covers what the study file says once resolved (defaults filled in), never a
heuristic of the planner: an automatic batch size is recorded as ``"auto"``
(``None``), the batch sizes actually used are recorded in the store instead
(:mod:`mbstudy.pipeline.plan.batches`).

Stores made before that rule carry a hash that included each block's automatic batch
size; :func:`store_hash_matches` accepts them too, given the batch sizes the store
recorded, so upgrading mbstudy does not orphan existing stores.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from mbstudy.pipeline.study.references import model_file_record
from mbstudy.pipeline.study.spec import StudySpec

__all__ = ["HASH_FORMAT", "canonical_payload", "compute_spec_hash", "store_hash_matches"]

HASH_FORMAT = "mbstudy-study-v1"


def canonical_payload(
    spec: StudySpec, batch_sizes: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """Return what ``spec_hash`` covers, as JSON-ready data.

    Covered: the model and its resolved parameters (a file parameter such as ``netlist``
    by the SHA-256 of the file's content, not its path: see :mod:`.references`), t_end,
    samples, the resolved reference, the sampled series (as a set), and every block
    (sorted by name) fully resolved: methods, window, fixed parameters, the swept
    dimensions in case order (members of a zip group sorted by name) with their values,
    and the batch size the file sets (``None`` for "auto"; ``batch_sizes`` fills the
    automatic ones in, as hashes did before the batch plan left the hash).
    Not covered: comments, whitespace, key order, the order of ``[[runs]]`` blocks,
    the study's name and description, max_cases, ``output.store``, ``[cluster]``.
    """
    blocks = []
    for run in sorted(spec.runs, key=lambda r: r.name):
        axes = run.axes_dict
        dims = []
        for group in run.dim_groups():
            members = sorted(group)
            dims.append({"names": members, "values": [list(axes[n]) for n in members]})
        blocks.append(
            {
                "name": run.name,
                "formulation": run.formulation,
                "integrator": run.integrator,
                "t_end": run.t_end,
                "samples": run.samples,
                "fixed": dict(run.fixed),
                "dims": dims,
                "batch_size": (
                    run.batch_size
                    if run.batch_size is not None or batch_sizes is None
                    else batch_sizes.get(run.name)
                ),
            }
        )
    ref = spec.reference
    searches = {}
    if spec.searches:  # absent otherwise: the hash of a grid study is unchanged
        searches = {"searches": [repr(s) for s in sorted(spec.searches, key=lambda s: s.name)]}
    return {
        **searches,
        "format": HASH_FORMAT,
        "model": spec.model,
        "model_params": _content_addressed(spec.model_params),
        "t_end": spec.t_end,
        "samples": spec.samples,
        "reference": {
            "integrator": ref.integrator,
            "formulation": ref.formulation,
            "formulation_params": dict(ref.formulation_params),
            "integrator_params": dict(ref.integrator_params),
        },
        "series": sorted(spec.output.series),
        "blocks": blocks,
        # a mechanism file's content: an edited file is a different study
        **{k: v for k, v in model_file_record(spec.model).items() if k == "model_file_sha256"},
    }


def compute_spec_hash(spec: StudySpec, batch_sizes: Mapping[str, int] | None = None) -> str:
    """sha256 hex digest of :func:`canonical_payload` as canonical JSON."""
    text = json.dumps(
        canonical_payload(spec, batch_sizes),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _content_addressed(model_params) -> dict[str, Any]:
    """``model_params`` with each referenced file's path replaced by its content digest."""
    from mbstudy.pipeline.study.references import digest, file_params, read_regular_file

    out = dict(model_params)
    for name, path in file_params(model_params).items():
        out[name.removeprefix("model.")] = {"sha256": digest(read_regular_file(path))}
    return out


def store_hash_matches(spec: StudySpec, store_hash: str, batch_sizes: Mapping[str, int]) -> bool:
    """Whether a store whose attributes say ``store_hash`` (and ``batch_sizes``, the batch
    size of each block it was made with) holds this study: its hash is the study's, or the
    hash mbstudy computed before the automatic batch sizes left it."""
    if store_hash == spec.spec_hash:
        return True
    if all(run.batch_size is not None for run in spec.runs):
        return False  # no automatic batch size: the hash was always the same
    return store_hash == compute_spec_hash(spec, batch_sizes)
