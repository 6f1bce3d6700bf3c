"""The nearest training images of every test image on a feature, which the annotation
and box baselines, the caption baselines and the visual-overlap diagnostic build on.

Callers import each name from the module that defines it (this package re-exports nothing):
``search`` (the exact k-nearest-neighbour search over training vectors streamed in blocks),
``blocks`` (the search split into test blocks x training blocks of whole shards, merged
exactly) and ``stage`` (the jobs of rules benchmark_neighbours and benchmark_neighbour_block,
and the `neighbours` table written and read back).
"""
