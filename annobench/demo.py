"""The embedded demo dataset: real photos that scikit-image ships, with pages and masks.

`annobench demo --out demo` regenerates the committed `demo/` folder. The
photos come from `skimage.data` (public-domain or CC0 images bundled with the
package, so no network is needed); the files are written in several formats
on purpose, so the demo exercises EXIF orientation, greyscale, 16-bit, alpha,
a truncated file and a byte-identical duplicate. The pages and masks are ours.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data, filters, measure, morphology
from skimage.draw import disk, polygon

from annobench.images.decode import EXIF_ORIENTATION_TAG


def _jpeg(pixels: np.ndarray, quality: int = 90, exif: Image.Exif | None = None) -> bytes:
    buffer = io.BytesIO()
    image = Image.fromarray(pixels)
    image.save(buffer, "JPEG", quality=quality, exif=exif.tobytes() if exif else b"")
    return buffer.getvalue()


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=True)
    return buffer.getvalue()


def _transparent_background(rgba: np.ndarray) -> np.ndarray:
    """Make the white background transparent and black underneath, so a reader
    that ignores alpha shows black where the image should be white."""
    out = rgba.copy()
    background = (rgba[..., :3] >= 250).all(axis=-1)
    out[background] = (0, 0, 0, 0)
    return out


def demo_images() -> dict[str, bytes]:
    """File name -> bytes of every demo image."""
    astronaut = _jpeg(data.astronaut())
    # Stored rotated a quarter turn clockwise with EXIF orientation 6: it
    # displays upright only if the reader applies the tag.
    chelsea_exif = Image.Exif()
    chelsea_exif[EXIF_ORIENTATION_TAG] = 6
    chelsea_stored = np.ascontiguousarray(np.rot90(data.chelsea(), k=1))
    coins16 = data.coins().astype(np.uint16) * 257
    logo = Image.fromarray(_transparent_background(data.logo()))
    return {
        "astronaut.jpg": astronaut,
        "astronaut_copy.jpg": astronaut,  # byte-identical: listed in the duplicates table
        "chelsea.jpg": _jpeg(chelsea_stored, exif=chelsea_exif),
        "coffee.jpg": _jpeg(data.coffee()),
        "rocket.jpg": _jpeg(data.rocket()),
        "camera.png": _png(Image.fromarray(data.camera())),
        "coins.png": _png(Image.fromarray(coins16)),
        "logo.png": _png(logo.resize((250, 250), Image.Resampling.LANCZOS)),
        "truncated.jpg": astronaut[: len(astronaut) // 3],  # rejected: cannot decode
    }


PAGES = {
    "space": (
        "utf-8",
        """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Space exploration in pictures</title>
<style>body { font-family: serif; }</style><script>var tracking = "not text";</script></head>
<body><h1>Space exploration in pictures</h1>
<p>The early years of human spaceflight were documented by official photographers.
Portraits of crew members in their pressure suits became iconic.</p>
<figure><img src="../images/astronaut.jpg" alt="Astronaut Eileen Collins in her flight suit" width="240">
<figcaption>Eileen Collins, the first woman to pilot a space shuttle, posing with the flag.</figcaption></figure>
<p>Launch vehicles grew larger with every decade of the programme. Engineers tested engines
for months before a launch window opened.</p>
<figure><img src="../images/rocket.jpg" alt="A rocket on the launch pad">
<figcaption>A rocket standing on its launch pad before lift-off.</figcaption></figure>
<p>Read more about <a href="https://example.org/missions">past missions</a>.</p>
</body></html>
""",
    ),
    "kitchen": (
        "iso-8859-1",
        """<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">
<title>Caf\u00e9 notes: coffee and cats</title></head>
<body><h2>Morning caf\u00e9</h2>
<p>A cup of espresso with a thick cr\u00e8me on a saucer, served on a wooden table.</p>
<img src="/demo/images/coffee.jpg" title="Espresso cup">
<h2>The office cat</h2>
<p>Our tabby cat Chelsea sleeps next to the coffee machine most afternoons.</p>
<a href="chelsea.html"><img data-src="../images/chelsea.jpg" src="placeholder.gif" alt="Chelsea the tabby cat"></a>
</body></html>
""",
    ),
    "collection": (
        "utf-8",
        """<html><head><title>Test images collection</title></head><body>
<p>Classic test images used in image processing courses.</p>
<table><tr><td><img src="../images/camera.png" alt="cameraman"></td><td>The cameraman on a field with a tripod.</td></tr>
<tr><td><img src="../images/coins.png" alt="coins"></td><td>Greek coins from Pompeii on a dark background.</td></tr>
<tr><td><img src="../images/logo.png" alt="logo"></td><td>A snake logo with a transparent background.</td></tr>
<tr><td><img src="../images/astronaut.jpg"></td><td>The astronaut again, as a thumbnail.</td></tr></table>
</body></html>
""",
    ),
}

PAGE_MAP = [
    ("astronaut", "space.html", "../images/astronaut.jpg"),
    ("rocket", "space.html", "../images/rocket.jpg"),
    ("coffee", "kitchen.html", "/demo/images/coffee.jpg"),
    ("chelsea", "kitchen.html", "../images/chelsea.jpg"),
    ("camera", "collection.html", "../images/camera.png"),
    ("coins", "collection.html", "../images/coins.png"),
    ("logo", "collection.html", "../images/logo.png"),
    ("astronaut", "collection.html", "../images/astronaut.jpg"),
    ("truncated", "collection.html", "../images/truncated.jpg"),  # not in the page: reported
]


# The search log (input.search_log): which query found each image in which engine, at which rank, as
# ImageCLEF's web collections kept it (Gilbert et al. 2016, section 2.4). Lines name their image by
# address (file:///..., the form image_urls resolves the demo pages' addresses to; a fragment and a
# percent-encoded dot show the normalisation) or by image_id; the last names an image the demo does
# not have, so the rejects table has a row.
SEARCH_LOG = [
    ("astronaut in space suit", "google", 3, "file:///images/astronaut.jpg", ""),
    ("nasa astronaut portrait", "bing", 1, "", "astronaut"),
    ("astronaut with flag", "yahoo", 7, "", "astronaut_copy"),
    ("tabby cat sleeping", "google", 2, "file:///images/chelsea.jpg#main", ""),
    ("espresso cup", "bing", 5, "file:///demo/images/coffee%2Ejpg", ""),
    ("rocket launch pad", "google", 1, "file:///images/rocket.jpg", ""),
    ("rocket launch pad", "yahoo", 4, "", "rocket"),
    ("cameraman test image", "yahoo", 4, "", "camera"),
    ("greek coins", "google", 12, "", "coins"),
    ("snake logo", "bing", 9, "", "logo"),
    ("golden gate bridge at night", "google", 2, "https://example.org/images/bridge.jpg", ""),
]


# A small vocabulary (keywords match the pages' words, parents form a two-level hierarchy) and
# image-level ground truth, so the demo build shows a leaderboard.
CONCEPTS = [
    ("person", "people;man;woman;astronaut;cameraman;crew", ""),
    ("animal", "pet", ""),
    ("cat", "tabby;kitten", "animal"),
    ("food", "meal;breakfast", ""),
    ("drink", "coffee;espresso;cup", "food"),
    ("vehicle", "rocket;shuttle", ""),
    ("sky", "clouds", ""),
    ("space", "spaceflight;mission;launch", ""),
    ("money", "coins;coin;currency", ""),
    ("graphic", "logo;snake", ""),
]

GROUND_TRUTH = [
    ("astronaut", "person"), ("astronaut", "space"),
    ("astronaut_copy", "person"), ("astronaut_copy", "space"),
    ("chelsea", "cat"), ("chelsea", "animal"),
    ("coffee", "drink"), ("coffee", "food"),
    ("rocket", "vehicle"), ("rocket", "sky"), ("rocket", "space"),
    ("camera", "person"), ("camera", "sky"),
    ("coins", "money"),
    ("logo", "graphic"),
]


def coins_regions() -> tuple[np.ndarray, list[tuple[int, str]]]:
    """Each coin a region (Otsu threshold + connected components), the rest background."""
    coins = data.coins()
    foreground = coins > filters.threshold_otsu(coins)
    foreground = morphology.closing(foreground, morphology.disk(2))
    labels = measure.label(foreground, connectivity=1)
    areas = np.bincount(labels.ravel())
    small = np.flatnonzero(areas <= 150)
    labels = measure.label(np.isin(labels, small, invert=True) & (labels > 0), connectivity=1)
    label_map = np.where(labels > 0, labels + 1, 1).astype(np.uint16)
    regions = [(1, "background")] + [(k + 1, "coin") for k in range(1, labels.max() + 1)]
    return label_map, regions


def astronaut_regions() -> tuple[np.ndarray, list[tuple[int, str]]]:
    """Hand-drawn outlines (row, col) of the objects; the rest is background."""
    label_map = np.ones((512, 512), dtype=np.uint16)
    outlines = {
        2: ([0, 0, 100, 230, 512, 512], [0, 150, 130, 100, 40, 0]),  # flag
        3: (  # person
            [512, 300, 200, 150, 60, 25, 30, 80, 160, 200, 330, 512],
            [40, 60, 100, 130, 150, 200, 280, 305, 300, 330, 365, 380],
        ),
        4: ([0, 0, 150, 230, 290, 290, 230, 150], [390, 440, 460, 470, 440, 380, 355, 380]),  # shuttle
    }
    for region_id, (rows, cols) in outlines.items():
        label_map[polygon(rows, cols, shape=label_map.shape)] = region_id
    label_map[disk((430, 390), 105, shape=label_map.shape)] = 5
    return label_map, [(1, "background"), (2, "flag"), (3, "person"), (4, "shuttle"), (5, "helmet")]


def write_demo(dest: Path) -> None:
    images = dest / "images"
    images.mkdir(parents=True, exist_ok=True)
    for name, content in demo_images().items():
        (images / name).write_bytes(content)
    pages = dest / "pages"
    pages.mkdir(parents=True, exist_ok=True)
    for page_id, (encoding, html) in PAGES.items():
        (pages / f"{page_id}.html").write_bytes(html.encode(encoding))
    _write_csv(pages / "mapping.csv", ["image_id", "page_id", "img_src"], PAGE_MAP)
    _write_csv(dest / "search_log.csv", ["query", "engine", "rank", "url", "image_id"], SEARCH_LOG)
    segmentations = dest / "segmentations"
    segmentations.mkdir(parents=True, exist_ok=True)
    rows = []
    for image_id, make in (("astronaut", astronaut_regions), ("coins", coins_regions)):
        label_map, regions = make()
        (segmentations / f"{image_id}.png").write_bytes(_png(Image.fromarray(label_map)))
        rows.extend((image_id, region_id, label) for region_id, label in regions)
    _write_csv(segmentations / "regions.csv", ["image_id", "region_id", "label"], rows)
    benchmark = dest / "benchmark"
    benchmark.mkdir(parents=True, exist_ok=True)
    _write_csv(benchmark / "concepts.csv", ["concept", "keywords", "parent"], CONCEPTS)
    _write_csv(benchmark / "ground_truth.csv", ["image_id", "concept"], GROUND_TRUTH)


def _write_csv(path: Path, header: list[str], rows: list[tuple]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
