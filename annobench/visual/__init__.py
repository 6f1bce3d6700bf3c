"""Global visual features of the stored images: colour histograms and GETLF
(colour), GIST (gist), dense colour-SIFT (dsift) and bags of its words
(bow: k-means codebooks and word assignment). Takes the `images` table and
`resized/`; gives one vector table per feature (`colorhist`, `getlf`,
`gist`, `bow_*`) and the codebooks and projection they need. stage and
bow_stage hold the shard jobs.
"""
