"""What a build reads and how it reads it safely. Takes the config's inputs
(image folders or id lists, page folders and their mapping, web archives)
and gives the listing of raw images with their ids and shards (inventory,
listing, ids), the web-archive catalogue and its tables (warc, warc_index:
`warc_records`, `warc_page_map`, `warc_rejects`), and pages parsed within
limits (pages) with the addresses of the images they show (page_images).
"""
