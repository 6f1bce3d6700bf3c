"""Text illustration (the ImageCLEF 2016 teaser; Gilbert et al. 2016, sections 2.2, 2.5 and 3.5,
Tables 5-6).

Queries are documents (the text of a web page); each has exactly one
ground-truth image, and a run ranks up to 100 candidate images per query,
scored by R@k. Callers import each name from the module that defines it
(this package re-exports nothing): ``queries`` (query documents from saved
pages, the `queries` table), ``runs`` (ranking runs read, checked and
written), ``measure`` (the truth file, R@k and chance), ``baselines``
(random and tf-idf runs), ``commands`` (the bodies of `annobench
illustration`, `evaluate-illustration` and `check-illustration-run`),
``arguments`` (their parsers), ``stage`` (planning and the jobs of rules
illustration_queries, illustration_rank and illustration) and
``leaderboard`` (its table and Markdown).
"""
