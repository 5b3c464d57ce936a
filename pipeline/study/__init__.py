"""The study layer: parse and validate a study file into a frozen ``StudySpec``, and hash
what it says (the lowest layer of ``mbstudy.pipeline``; imports no other layer).

Modules: ``spec`` (the dataclasses, ``StudyError``), ``checks`` (value checkers),
``sections`` / ``network_section`` / ``cluster_section`` / ``blocks`` (one part of the
file each), ``hashing`` (``spec_hash``), ``overrides`` (``--set KEY=VALUE``), ``parse``
(``load_study``, ``parse_study``, ``check_study``), ``examples`` (the shipped study files).
"""

from mbstudy.pipeline.study.hashing import canonical_payload, compute_spec_hash
from mbstudy.pipeline.study.parse import check_study, load_study, parse_study
from mbstudy.pipeline.study.spec import (
    ClusterSpec,
    OutputSpec,
    ReferenceSpec,
    RunSpec,
    StudyError,
    StudySpec,
)

__all__ = [
    "ClusterSpec",
    "OutputSpec",
    "ReferenceSpec",
    "RunSpec",
    "StudyError",
    "StudySpec",
    "canonical_payload",
    "check_study",
    "compute_spec_hash",
    "load_study",
    "parse_study",
]
