"""The files a study refers to, as a store records them: ``referenced_files`` in the root
attributes (``"model.NAME" -> {path, sha256, text}``), and which of them changed since."""

from __future__ import annotations


def referenced_files_attr(study) -> dict[str, dict[str, str]]:
    """``"model.NAME" -> {path, sha256, text}`` of every file the study refers to (the
    texts the study hash covers by digest; pipeline/study/references.py)."""
    from mbstudy.pipeline.study.references import file_params, file_record

    return {name: file_record(path) for name, path in file_params(study.model_params).items()}


def changed_files(stored: dict, study) -> list[str]:
    """Names (and paths) of the files whose content differs from what the store recorded."""
    from mbstudy.pipeline.study.references import FileRefused, digest, file_params
    from mbstudy.pipeline.study.references import read_regular_file as read

    out = []
    for name, path in file_params(study.model_params).items():
        old = (stored.get(name) or {}).get("sha256")
        try:
            new = digest(read(path))
        except FileRefused:
            new = None
        if old is not None and old != new:
            out.append(f"{name} ({path})")
    return out
