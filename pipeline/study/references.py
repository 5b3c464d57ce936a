"""Files a study refers to (netlists and mechanism files): read safely, and identified by
their content, not their path.

* :func:`read_regular_file` (from :mod:`mbstudy.solvers.textfiles`, which the mechanism
  reader and the netlist reader use too) reads only a regular file (a FIFO, device or
  directory is refused without blocking), of at most :data:`MAX_FILE_BYTES`, as UTF-8.
* :func:`referenced_files` maps each file parameter of a study's model (:data:`FILE_PARAMS`)
  to the text of the file it names. The study hash covers the SHA-256 of those texts
  instead of their paths (:mod:`.hashing`), so editing a netlist is a different study and
  moving an unchanged study folder is not; the store keeps the texts in its root
  attributes (``referenced_files``) and a resume refused for a changed file names it.
* :func:`file_record` is the one record of a referenced file's content (path, sha256,
  text): the store's ``referenced_files`` entries and, through :func:`model_file_record`,
  a mechanism file given as the study's model (``model_file_text``,
  ``model_file_sha256``; the study hash covers that digest).
"""

from __future__ import annotations

import hashlib
import os

from mbstudy.solvers.api import MAX_FILE_BYTES, FileRefused, read_regular_file

__all__ = ["MAX_FILE_BYTES", "FileRefused", "changed_model_file", "digest", "file_params",
           "file_record",
           "model_file_record", "read_regular_file", "referenced_files"]

FILE_PARAMS = ("netlist",)  # model parameters whose value is a file path


def file_params(model_params) -> dict[str, str]:
    """``"model.NAME" -> path`` of every file parameter among ``model_params`` (pairs or a
    dict); inline texts (values with a line break) are not files."""
    items = model_params.items() if isinstance(model_params, dict) else model_params
    return {f"model.{k}": v for k, v in items
            if k in FILE_PARAMS and isinstance(v, str) and "\n" not in v}  # fmt: skip


def referenced_files(spec) -> dict[str, str]:
    """``"model.NAME" -> text`` of every file the study ``spec`` refers to."""
    return {name: read_regular_file(path) for name, path in file_params(spec.model_params).items()}


def digest(text: str) -> str:
    """SHA-256 hex digest of a referenced file's text (what the study hash covers)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_record(path: str | os.PathLike) -> dict[str, str]:
    """``{path, sha256, text}`` of the referenced file at ``path`` (:class:`FileRefused` if
    it is not a readable regular text file)."""
    text = read_regular_file(path)
    return {"path": str(path), "sha256": digest(text), "text": text}


def model_file_record(model: str) -> dict[str, str | None]:
    """A model given as a file (a mechanism file, its name possibly ending in
    ``#normalization=MODE``): ``model_file_text`` and ``model_file_sha256`` from
    :func:`file_record` (both None if it cannot be read); empty for a registry name."""
    from mbstudy.solvers.api import is_model_path, split_model_name

    if not is_model_path(model):
        return {}
    try:
        rec = file_record(split_model_name(model)[0])
    except FileRefused:
        return {"model_file_text": None, "model_file_sha256": None}
    return {"model_file_text": rec["text"], "model_file_sha256": rec["sha256"]}


def changed_model_file(attrs: dict, spec) -> list[str]:
    """``["study.model (PATH)"]`` if the study's model is a mechanism file whose digest
    differs from the store's root attribute ``model_file_sha256`` (a store made before
    the file was edited), else ``[]``."""
    old = attrs.get("model_file_sha256")
    new = model_file_record(spec.model).get("model_file_sha256")
    if old is None or old == new:
        return []
    from mbstudy.solvers.api import split_model_name

    return [f"study.model ({split_model_name(spec.model)[0]})"]
