"""Jobs that keep pandas out still write and read their tables; a use of pandas fails loudly."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)


def test_tables_are_written_and_read_without_pandas_and_pandas_use_fails_clearly(tmp_path):
    done = run_python(f"""
        import sys
        from annobench.core.imports import keep_out
        keep_out("pandas")
        import numpy as np
        import pyarrow.parquet as pq
        from annobench.visual.stage import write_vectors
        write_vectors("gist", {{"a": 1}}, ["x", "y"], np.eye(2, dtype=np.float32), "{tmp_path}/v.parquet")
        assert pq.ParquetFile("{tmp_path}/v.parquet").read().column("image_id").to_pylist() == ["x", "y"]
        assert "pandas" not in sys.modules
        try:
            import pandas
        except ModuleNotFoundError as error:
            print(error)
    """)
    assert done.returncode == 0, done.stderr
    assert "pandas is kept out of this job" in done.stdout


def test_a_library_already_loaded_cannot_be_kept_out():
    done = run_python("""
        import json
        from annobench.core.imports import keep_out
        keep_out("json")
    """)
    assert done.returncode != 0 and "already imported, cannot keep out: json" in done.stderr
