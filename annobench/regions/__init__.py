"""Segmented regions. Takes human segmentations in their own formats (one
importer per format under importers/, MATLAB files through matfile) and
the raw images; gives the `regions` and `segmentation_rejects` tables with
their label maps, the 27 SAIAPR features of each region
(`region_features`), the spatial relations between regions
(`spatial_relations`), their statistics and the SAIAPR exports.
"""
