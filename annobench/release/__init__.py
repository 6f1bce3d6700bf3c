"""The last stage. Takes every file of a build with the job records behind
them; gives the release folder, a BagIt bag (bag) whose payload holds the
files, their manifest and lineage (assemble); the audit that checks a
release or a build, a Croissant record (croissant), a Hugging Face dataset
card (dataset_card) and a static browser of the data (browser).
"""
