"""What every stage uses. Takes nothing from the stages above it; gives them
the config and its schema (config), where outputs go (layout), how tables
are written (tables: Parquet with their parameters in the metadata), atomic
writes (fsutil), progress lines and job logs (progress), the hashes that
decide when an output is stale (fingerprint), keeping unused libraries out
of a job (imports), each job's provenance record (provenance), the
project's error type (errors) and the checked command-line values (arguments).
"""
