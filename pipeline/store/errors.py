"""The one exception of the store layer (a store that cannot be used as asked)."""


class StoreError(Exception):
    """A store that cannot be used as asked (another study's, locked, missing, corrupt)."""
