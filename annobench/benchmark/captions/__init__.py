"""Captions (subtask 2 of ImageCLEF 2016, Gilbert et al. 2016): reference descriptions, caption
runs and the caption measure, Meteor 1.5 by the reference jar through pycocoevalcap.

Callers import each name from the module that defines it (this package re-exports
nothing): ``files`` (references and runs read from CSV or JSON, the `captions` table),
``meteor`` (the Java tools: one Meteor process a program, shared by its evaluations, the PTB tokenizer, and the
check that pycocoevalcap and Java are there), ``measure`` (per-image Meteor statistics,
corpus Meteor, BLEU, ROUGE-L, CIDEr, and the leave-one-out human upper bound),
``commands`` (the evaluate-captions command), ``baselines`` (nearest and consensus caption
transfer), ``blocks`` (Meteor statistics a block of test images at a time), ``stage``
(planning and the caption rules' jobs) and ``leaderboard`` (its table and Markdown).
"""
