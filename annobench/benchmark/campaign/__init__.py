"""An ImageCLEF round around the benchmark (Villegas and Paredes 2014, sections 2-3; Gilbert et al.
2016, section 3): what the organisers release, what they receive, and the results they publish.

- ``kit``: the participant's kit (``kit/``: the development truth, each subtask's test inputs,
  an example run of each subtask with its metadata, a README) and the organisers' test truth
  (``truth/``), rule campaign_kit;
- ``submissions``: the submitted runs found under ``input.submissions`` and their metadata, read
  when the build is planned;
- ``runs``: each submitted run checked with its subtask's checker against the kit and, when it
  passes, evaluated with every measure of its subtask against ``truth/`` (rule submission);
- ``intervals``: the confidence intervals of the results;
- ``results``: the results tables of every run, baselines and submissions (rule
  campaign_results), their Markdown report, and ``figures`` (SVG, one per measure).

The package sits above the subtasks (it checks and evaluates every subtask's runs) and below
``report``, which puts the accepted runs on the leaderboards (.importlinter).
"""
