"""How every array of a store is encoded: zstd, then a CRC-32C checksum (a leaf module:
the template writer and the CF description both use it)."""

from __future__ import annotations

# Zarr v3 array config of every array: chunks equal to the fill value are written too, so
# a missing chunk of a finished batch is damage (``verify``), never "all fill values".
WRITE_EVERY_CHUNK = {"write_empty_chunks": True}


def checksum_codecs() -> tuple:
    """The bytes-to-bytes codecs of every array: zstd, then a CRC-32C of the compressed
    chunk (Zarr v3 ``crc32c`` codec, RFC 3720 polynomial), so a corrupt chunk raises on
    read instead of decoding into garbage or a decompression error."""
    from zarr.codecs import Crc32cCodec, ZstdCodec

    return (ZstdCodec(level=0), Crc32cCodec())
