"""Image ids made from paths and addresses, and the shard an id falls in.

Below both the inventory and the web-archive catalogue, which each name
images and shard them the same way.
"""

from __future__ import annotations

import hashlib
import math
import re

# Written as %XX in ids made from paths and addresses: '%' itself first, so unquote() reverses it.
ID_ESCAPED = re.compile(r"[%/\\\x00-\x1f\x7f]|^\s|\s$")


def encode_id(text: str) -> str:
    """`text` as an id: '%', separators, control characters and edge spaces as %XX; unquote() reverses it."""
    return ID_ESCAPED.sub(lambda found: "".join(f"%{b:02X}" for b in found.group().encode("utf-8")), text)


def shard_count(n_images: int, images_per_shard: int, num_shards: int = 0) -> int:
    """A power of two, so growing the collection splits shards instead of reshuffling them."""
    if num_shards:
        return num_shards
    needed = max(1, math.ceil(n_images / images_per_shard))
    return 1 << (needed - 1).bit_length()


def shard_of(image_id: str, n_shards: int) -> int:
    digest = hashlib.sha256(image_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n_shards
