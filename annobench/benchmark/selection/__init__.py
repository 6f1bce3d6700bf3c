"""Content selection (subtask 3 of ImageCLEF 2016, Gilbert et al. 2016, sections 2.5 and 3.4): for
each test image, choose the box instances its descriptions mention.

Callers import each name from the module that defines it (this package re-exports nothing):
``model`` (box instances, gold descriptions, SelectionError), ``files`` (the instances and
description CSVs, Flickr30k Entities records and run CSVs read), ``measure`` (P, R and F per
image and over the images, the human upper bound), ``baselines`` (random and largest-first
selections), ``stage`` (planning and the job of rule selection_baselines) and ``leaderboard``
(its table and Markdown).
"""
