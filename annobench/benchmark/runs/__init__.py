"""Runs (the run formats of the ImageCLEF 2012 task page and of Villegas and Paredes 2014, section
2.2): check, read and write what a benchmark participant submits.

A run gives every test image a confidence score in [0, 1] and a binary
decision for each concept it is evaluated on. Three forms hold the same content:

- ``imageclef2012`` (the ImageCLEF 2012 task page): one line per image,
  ``id s0 d0 s1 d1 ... s(N-1) d(N-1)``, single spaces, every concept of the vocabulary in
  vocabulary order;
- ``imageclef2013`` (the 2013-2016 campaigns): each image has its own concept
  list (a companion file of lines ``id c_a c_b ...``); run line i belongs to
  concept-list line i and holds pairs only for that list's concepts, in list order;
- ``parquet``: one row per (line, listed concept), for runs too big for text tools.

Callers import each name from the module that defines it (this package
re-exports nothing): ``model`` (Run), ``concepts`` (the vocabulary and
concept lists), ``text_form`` and ``parquet_form`` (each form checked, read
and written), ``checker`` (check_run, the check-run command) and ``files``
(read_run, write_run). What a checker reports (RunProblem, RunFormatError)
is in annobench.benchmark.problems, shared with the box and ranking runs.
"""
