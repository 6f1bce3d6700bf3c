"""Image-level concept annotation (SPEC 8; the ImageCLEF 2012-2014 photo annotation tasks and
Dutta et al.): every test image gets a score and a decision for each concept of the vocabulary.

Callers import each name from the module that defines it (this package re-exports nothing):
``ground_truth`` (image-level ground truth in every form the seeds use, the ImageCLEF 2012
exports), ``measure`` (the ImageCLEF 2012, 2013-2016 and Dutta measures), ``baselines`` (random,
trivial, k-NN label transfer and co-occurrence runs), ``diagnostics`` (Dutta's dataset
diagnostics), ``stage`` (planning, and the jobs of rules benchmark_truth and baseline) and
``leaderboard`` (the leaderboard table and its Markdown). The runs are read and written by
annobench.benchmark.runs.
"""
