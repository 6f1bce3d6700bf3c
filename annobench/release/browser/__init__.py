"""The static release browser. Takes a build's tables, stored images,
segmentations, boxes, baseline runs and box runs; gives `browse/`, a static
site that opens from disk: an index of the collection's figures, a
leaderboard, a paged grid of the images and one page per image. `writer`
walks the build and writes the site (build_browser, browser_settings);
`source` reads the build (its tables, the catalogue of images, each image
shard's rows); `figures` collects the index's counts and frequencies;
`index_pages` gathers the index, the leaderboard and the grid;
`image_pages` puts the page of each image together from the sections of
`image_sections`, `box_overlays` (the truth and box-run boxes, each run in
its own colour) and `caption_section`; `overlays` colours the regions and
draws them as PNGs; `charts` lays out the SVG bar and column charts;
`templating` renders the Jinja2 templates of `templates/`, which write all
of the site's markup with every value escaped; `files` names the site's
files, links them and writes them; `shards` splits the work into the jobs of
a build of several shards (a regrouping job, one job per image shard, the
index job).
"""
