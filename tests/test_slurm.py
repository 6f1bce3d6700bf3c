"""The demo build through a real single-node SLURM cluster equals the local build, byte for byte.

tests/slurm/cluster.sh installs (as root, from Debian's packages) and starts
munge, MariaDB, slurmdbd, slurmctld and slurmd, all state in a temporary
folder; the build then goes through config/profiles/slurm and the Snakemake
SLURM executor plugin. Skips, saying why, where the machine cannot do this.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess

import pytest

from helpers import REPO, run_snakemake, tree_bytes

CLUSTER = REPO / "tests" / "slurm" / "cluster.sh"
PROFILE = REPO / "config" / "profiles" / "slurm"
# The cluster's jobs start in seconds; the plugin's defaults wait 40 s before the first check.
FAST_POLLING = ("--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "2")


@pytest.fixture(scope="module")
def slurm_env(tmp_path_factory):
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("needs snakemake-executor-plugin-slurm (pip install -e '.[test]')")
    install = subprocess.run(["bash", str(CLUSTER), "install"], capture_output=True, text=True)
    if install.returncode == 3:
        pytest.skip(f"cannot set up a SLURM cluster on this machine: {install.stderr.strip()}")
    assert install.returncode == 0, install.stderr[-4000:]
    state = tmp_path_factory.mktemp("slurm-cluster")
    # A loaded CI machine may take longer than the script's 60 s default to come up.
    start = subprocess.run(["bash", str(CLUSTER), "start", str(state)], capture_output=True, text=True,
                           env={**os.environ, "CLUSTER_START_TIMEOUT": "240"})
    try:
        assert start.returncode == 0, f"the cluster did not start:\n{start.stderr[-6000:]}"
        conf = start.stdout.strip().removeprefix("export SLURM_CONF=")
        # The plugin's job steps drop SLURM_* variables; wrappers in bin/ carry SLURM_CONF.
        yield {**os.environ, "SLURM_CONF": conf, "PATH": f"{state / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    finally:
        subprocess.run(["bash", str(CLUSTER), "stop", str(state)], capture_output=True, text=True)


def test_demo_build_through_slurm_equals_the_local_build(slurm_env, demo_default_workdir, tmp_path):
    """The local build is demo_default_workdir's; the cluster builds its config in another folder."""
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    config = cluster / "config.yaml"
    shutil.copy(demo_default_workdir / "config.yaml", config)  # the demo's files named where they are
    cores = str(len(os.sched_getaffinity(0)))  # what the node offers: a group job must fit on it
    try:
        run_snakemake(cluster, "--workflow-profile", str(PROFILE), "--configfile", str(config),
                      "--jobs", "4", "--cores", cores, *FAST_POLLING, env=slurm_env, timeout=1800)
    except subprocess.TimeoutExpired:
        queue = subprocess.run(["squeue", "-o", "%i %j %T %r %C %m"], capture_output=True, text=True, env=slurm_env)
        pytest.fail(f"the SLURM build did not finish in 30 min; queue:\n{queue.stdout}")

    built = tree_bytes(demo_default_workdir / "out")
    assert len(built) > 40 and tree_bytes(cluster / "out") == built

    # Every job ran inside a SLURM job that the accounting saw complete, several jobs to a group.
    records = [json.loads(p.read_text()) for p in sorted((cluster / "out" / "provenance" / "jobs").glob("*.json"))]
    job_ids = {record["rule"]: record["slurm_job_id"] for record in records}
    assert None not in job_ids.values(), job_ids
    assert job_ids["ingest_shard"] == job_ids["feature_gist"] == job_ids["bow_sample"]  # group "shard"
    # The demo is a small build: its searches and its runs are a job each (merged), one group.
    assert job_ids["benchmark_neighbours_merged"] == job_ids["baseline_merged"]  # group "benchmark"
    sacct = subprocess.run(["sacct", "-X", "--noheader", "--parsable2", "-o", "JobID,State",
                            "-j", ",".join(sorted(set(job_ids.values())))],
                           capture_output=True, text=True, env=slurm_env, check=True)
    states = dict(line.split("|") for line in sacct.stdout.split())
    assert states == {job_id: "COMPLETED" for job_id in set(job_ids.values())}
