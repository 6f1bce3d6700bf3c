"""The benchmark built around the features. Takes the images, regions and
feature tables and a vocabulary with its ground truth; gives, for each
subtask, its ground truth, splits, baseline runs and their evaluations, and
a report that gathers every subtask's leaderboard.

A package per subtask, each of the same shape where it applies: ``model``,
``files``, ``measure``, ``baselines``, ``stage`` (planning, called from the
Snakefile, and the rules' jobs) and ``leaderboard`` (its table and Markdown):

- ``annotation``: image-level concept annotation (ImageCLEF 2012-2014,
  Dutta et al. 2018): ``ground_truth``, ``measure``, ``baselines``,
  ``diagnostics``, ``stage``, ``leaderboard``.
- ``region_annotation``: the SAIAPR region-level protocol: ``splits``,
  ``measure``, ``stage``.
- ``boxes``: localisation (ImageCLEF 2016 subtask 1, Gilbert et al.
  2016): ``model``, ``truth``, ``lines``, ``coco_results``, ``checker``,
  ``forms``, ``measure``, ``commands``, ``baselines``, ``stage``,
  ``leaderboard``.
- ``captions``: captions scored with Meteor 1.5 (subtask 2): ``files``,
  ``meteor``, ``measure``, ``blocks``, ``baselines``, ``commands``,
  ``stage``, ``leaderboard``.
- ``selection``: content selection (subtask 3): ``model``, ``files``,
  ``measure``, ``baselines``, ``stage``, ``leaderboard``.
- ``illustration``: text illustration (the 2016 teaser): ``queries``,
  ``runs``, ``measure``, ``baselines``, ``commands``, ``arguments``,
  ``stage``, ``leaderboard``.

Below them, what several subtasks share:

- ``neighbours``: each test image's nearest training images (``search``,
  ``blocks``, ``stage``), for the baselines and the diagnostics.
- ``runs``: the ImageCLEF concept runs, checked, read and written (the
  annotation baselines write them, the box baselines read them).
- ``splits`` (train/dev/test splits, ``split_ids``), ``vocabulary`` (the
  concepts), ``settings`` (the config's benchmark section), ``image_list``
  (the test images a run is checked against), ``problems`` (what a run
  checker reports), ``json_form`` (``json_bytes``, the evaluations' JSON) and
  ``leaderboard`` (numbers and Markdown tables of every leaderboard).

Above them, ``report`` is the benchmark_report job: every subtask's
leaderboard and the dataset diagnostics in one report. The ``subtasks``
contract of .importlinter keeps the subtasks from importing one another.
"""
