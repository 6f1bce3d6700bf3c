"""Near-image text: the words of the web pages an image appears on, weighted
by their distance to the image and their place in the page (Villegas and
Paredes 2014, section 2.3, equation 1). Takes the page mapping (or derives
it, page_map) and the pages; gives the `text_terms`, `image_urls`, `pages`,
`pages_xml` and `text_rejects` tables and the WEBUPV `scofeat` export. Takes
the search log too (search_log): gives `search_keywords`, the queries that
found each image, and `search_keyword_rejects`.
"""
