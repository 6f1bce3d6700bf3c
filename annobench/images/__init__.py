"""The first stage of a build. Takes the listed raw images (files or archive
records), decodes them within limits, normalises their orientation and
colour, stores a resized copy of each, and gives the `images` and
`rejects` tables and the `resized/` images every later stage reads; then
the `duplicates` table of images that share their bytes.
"""
