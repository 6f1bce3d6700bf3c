"""Projection: how long a whole build takes on C cores, from Snakemake's own DAG.

Takes a config (planned with a synthetic image list of N ids, no real data needed) and the
job records of a real build; gives each planned job a cost from the measured rates, a
simulated schedule on C cores with each rule's threads and memory, its makespan, critical
path and the cores' utilisation over time.
"""
