"""annobench: regenerate image-annotation benchmark datasets from raw data."""

__version__ = "0.1.0"

# Version of the on-disk layout of every table we write; bump it when a
# column, type or file naming changes so old outputs are never mistaken for new.
FORMAT_VERSION = 1
