"""Boxes (ImageCLEF 2016 subtask 1, Gilbert et al. 2016, sections 2.2 and 2.5): box ground truth,
box runs, their checker and the localisation measure of the 2015/2016 subtask 1.

A box is (image, concept, xmin, ymin, xmax, ymax) in inclusive integer pixel
coordinates, as in the PASCAL VOC devkit: width = xmax - xmin + 1 (the "+1"
convention). Callers import each name from the module that defines it (this
package re-exports nothing): ``model`` (schemas, box arithmetic, the image
list), ``truth`` (ground truth from VOC XML, COCO JSON, a CSV/Parquet table,
box text folders or labelled segmentations, with rejects), ``lines`` (one line
of a text or CSV run taken apart), ``coco_results`` (a COCO results list as a
run), ``checker`` (check_box_run and the check-box-run command), ``forms``
(box runs read and written in every form), ``measure`` (IoU, AP, MAP at
overlap thresholds), ``commands`` (the boxes and evaluate-boxes commands),
``baselines`` (whole-image and k-NN transfer runs), ``stage`` (planning and
the jobs of rules benchmark_boxes and box_baseline) and ``leaderboard`` (its
table and Markdown).
"""
