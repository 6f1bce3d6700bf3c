"""Region-level annotation (SAIAPR TC-12, Escalante et al. 2008, section 5): each labelled region of
a segmentation gets a label from a subset of the most frequent classes.

Callers import each name from the module that defines it (this package re-exports nothing):
``splits`` (the class subsets and the 70/30 region split), ``measure`` (e_hard, e_ontology
and their means) and ``stage`` (the uniform-random baseline scored on each subset, rule
region_benchmark).
"""
