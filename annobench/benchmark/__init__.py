"""The benchmark built around the features. Takes the images, regions and
feature tables and a vocabulary with its ground truth; gives the `concepts`,
`ground_truth` and `splits` tables, the nearest neighbours of each test
image, baseline runs in the ImageCLEF forms (runs), their evaluation by
the ImageCLEF and Dutta measures (measures), the `concept_results` and
`leaderboard` tables and the diagnostics beside them. From box ground
truth it gives the `boxes` and `box_rejects` tables, box runs and the
localisation measure of SPEC 9 (boxes); for content selection it takes box
instances and the descriptions that mention them, and gives P, R and F of a
run, of baselines and of the human upper bound (selection, selection_files).
In the workflow, box_stage builds the box truth, the box baselines (from
the k-NN runs) and the selection baselines, and box_leaderboard their
`box_leaderboard` and `selection_leaderboard` tables.
For captions it reads reference descriptions and caption runs and scores them
with Meteor 1.5 and the human upper bound (captions).
"""
