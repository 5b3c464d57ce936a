"""The study layer: parse and validate a study file into a frozen ``StudySpec``, and hash
what it says (the lowest layer of ``mbstudy.pipeline``; imports no other layer)."""
