"""How much a MATLAB v5 file may make the reader allocate, derived from its bytes.

A .mat file declares sizes (element lengths, array dimensions, cell and
struct counts) that a hostile or damaged file can set to anything. The
reader (annobench.regions.matfile) checks each one against what the file can
back before allocating:

- an element's declared length against the bytes left around it;
- a cell array's count against the bytes left / 8 (each cell has at least
  an 8-byte tag), a struct array's count x fields the same way;
- the cell and struct elements of a file against `max_elements` in all
  (each becomes a Python object: a field-less struct array needs no bytes);
- the bytes a file inflates against `inflation_ratio` x its own size (with
  `inflation_floor` below which small files are never refused; real MSRC-v2
  and BSDS500 files inflate 47x at the median, 225x at most), and every
  inflated element and decoded array against `max_bytes` in all (the
  configurable ceiling, segmentations.mat_max_bytes);
- the nesting of cells and structs against `max_depth` (BSDS500 uses 2).
A file over a limit raises MatFileError before the allocation it asks for.
"""

from __future__ import annotations

from dataclasses import dataclass

from annobench.core.errors import AnnobenchError

DEFAULT_MAX_BYTES = 256 * 2**20


class MatFileError(AnnobenchError):
    """The file is not a MATLAB v5 file this reader understands, or asks for more than its limits."""


@dataclass(frozen=True)
class MatLimits:
    max_bytes: int = DEFAULT_MAX_BYTES  # inflated elements and decoded arrays of one file, in all
    inflation_ratio: int = 512  # inflated bytes per byte of the file
    inflation_floor: int = 32 * 2**20  # a file may always inflate this much (if under max_bytes)
    max_elements: int = 1_000_000  # cell and struct elements of one file, in all
    max_depth: int = 16  # cells and structs inside one another

    @classmethod
    def from_config(cls, segmentations: dict) -> "MatLimits":
        return cls(max_bytes=segmentations.get("mat_max_bytes", DEFAULT_MAX_BYTES))


class Budget:
    """What one read_mat call has left to allocate; each charge raises MatFileError past a limit."""

    def __init__(self, limits: MatLimits, file_bytes: int):
        self.limits = limits
        self.bytes_left = limits.max_bytes
        self.inflate_left = min(limits.max_bytes, max(limits.inflation_floor, limits.inflation_ratio * file_bytes))
        self.elements_left = limits.max_elements

    def inflate(self, size: int) -> None:
        """Before inflating `size` bytes of a compressed element."""
        if size > self.inflate_left:
            raise MatFileError(
                f"compressed element declares {size:,} bytes inflated, over the {self.inflate_left:,} left to this "
                f"file (at most {self.limits.inflation_ratio}x its size, {self.limits.max_bytes:,} in all)")
        self.inflate_left -= size
        self.charge(size, "inflated element")

    def charge(self, size: int, what: str) -> None:
        """Before allocating `size` bytes for an array."""
        if size > self.bytes_left:
            raise MatFileError(f"{what} of {size:,} bytes, over the {self.bytes_left:,} left of the file's "
                               f"limit of {self.limits.max_bytes:,} (segmentations.mat_max_bytes)")
        self.bytes_left -= size

    def elements(self, count: int, per_element: int, bytes_left: int, what: str) -> None:
        """Before allocating `count` cell or struct elements of `per_element` tags each."""
        if count * per_element * 8 > bytes_left:
            raise MatFileError(f"{what} declares {count:,} elements x {per_element} tags; "
                               f"only {bytes_left:,} bytes are left to hold them")
        if count > self.elements_left:
            raise MatFileError(f"{what} declares {count:,} elements, over the {self.elements_left:,} left of "
                               f"the file's limit of {self.limits.max_elements:,}")
        self.elements_left -= count

    def deeper(self, depth: int) -> int:
        if depth >= self.limits.max_depth:
            raise MatFileError(f"cells and structs nested deeper than {self.limits.max_depth} levels")
        return depth + 1
