"""Global visual features of the stored images: colour histograms and GETLF
(colour), GIST (gist), dense colour-SIFT (dsift) and bags of its words
(bow: k-means codebooks and word assignment), and CNN embeddings from
networks given as files (cnn; Caffe files read by caffe, ONNX bytes by
onnx_model, both through protobuf). Takes the `images` table and
`resized/` (and the networks of features.cnn); gives one vector table per
feature (`colorhist`, `getlf`, `gist`, `cnn_*`, `bow_*`) and the codebooks
and projection they need. stage, bow_stage and cnn hold the shard jobs.
"""
