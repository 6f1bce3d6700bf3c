"""Image-level concept annotation (the ImageCLEF 2012-2014 photo annotation tasks: the ImageCLEF
2012 task page, Villegas and Paredes 2014; and Dutta et al. 2018): every test image gets a score
and a decision for each concept of the vocabulary.

Callers import each name from the module that defines it (this package re-exports nothing):
``ground_truth`` (image-level ground truth in every form its sources use, the ImageCLEF 2012
exports), ``measure`` (the ImageCLEF 2012, 2013-2016 and Dutta measures), ``baselines`` (random,
trivial, k-NN label transfer and co-occurrence runs), ``diagnostics`` (Dutta's dataset
diagnostics), ``stage`` (planning, and the jobs of rules benchmark_truth and baseline) and
``leaderboard`` (the leaderboard table and its Markdown). The runs are read and written by
annobench.benchmark.runs.
"""
