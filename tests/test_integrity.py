"""The dataset's keys: every table's rows name images, pages, concepts and regions the dataset
holds, by construction, and the integrity check (build and audit) names any key that dangles."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annobench.release.integrity import check_keys, is_rejects
from helpers import REPO, run_snakemake


def column_values(table: Path, column: str) -> set:
    return set(pq.read_table(table, columns=[column]).column(0).to_pylist())


def test_no_released_table_names_an_image_the_dataset_does_not_hold(kiwix_build):
    release = kiwix_build / "release" / "data" / "tables"
    images = column_values(release / "images", "image_id")
    rejected = column_values(release / "rejects", "image_id")
    assert len(images) > 30 and len(rejected) >= 8  # the pages' icons, under 32 pixels
    assert all("reason" for _ in rejected)
    for table in sorted(p for p in release.iterdir() if p.is_dir()):
        if "image_id" not in pq.read_schema(next(table.glob("*.parquet"))).names:
            continue
        named = column_values(table, "image_id") - {"", None}
        allowed = images | rejected if is_rejects(table.name) else images
        assert named <= allowed, (table.name, sorted(named - allowed)[:5])
    # What a rejected image would have had is not in the dataset at all.
    for table in ("text_terms", "image_urls", "page_captions", "text_rejects"):
        assert not column_values(release / table, "image_id") & rejected, table
    assert check_keys(kiwix_build) == [] and check_keys(kiwix_build / "release" / "data") == []
    assert "Every key resolves." in (kiwix_build / "reports" / "integrity.md").read_text(encoding="utf-8")


def with_unknown_image(table_file: Path) -> None:
    """A text_terms row for an image the dataset does not hold, written into a shard in place."""
    table = pq.read_table(table_file)
    row = {name: [table.column(name)[0].as_py()] for name in table.column_names}
    row["image_id"] = ["no_such_image"]
    extra = pa.Table.from_pydict(row, schema=table.schema)
    pq.write_table(pa.concat_tables([table, extra]), table_file)


def test_a_dangling_key_fails_the_build_and_the_audit_naming_table_key_and_value(kiwix_build, tmp_path):
    workdir = tmp_path / "build"
    shutil.copytree(kiwix_build.parent, workdir, symlinks=True)
    out = workdir / "out"
    shard = sorted((out / "tables" / "text_terms").glob("*.parquet"))[0]
    shard.unlink()  # the release holds the build's files by hard link: write a new file
    shutil.copy(kiwix_build / "tables" / "text_terms" / shard.name, shard)
    with_unknown_image(shard)
    done = run_snakemake(workdir, "--cores", "2", "--configfile", str(workdir / "config.yaml"), check=False)
    assert done.returncode != 0
    assert "text_terms: image_id names no row of images.image_id: no_such_image" in done.stdout

    release = tmp_path / "release"
    shutil.copytree(kiwix_build / "release", release)
    released = release / "data" / "tables" / "text_terms" / shard.name
    with_unknown_image(released)
    audit = subprocess.run([sys.executable, "-m", "annobench.cli", "audit", str(release)],
                           capture_output=True, text=True, cwd=REPO)
    assert audit.returncode != 0
    assert "dangling: text_terms: image_id names no row of images.image_id: no_such_image" in audit.stdout


def test_a_release_without_a_name_of_its_own_mentions_no_other_dataset(kiwix_build):
    """The config names no release: planning says so in one line, and the card, the Croissant
    file and the browser describe this dataset, with the counts of its own tables."""
    log = (kiwix_build.parent / "build.log").read_text(encoding="utf-8")
    assert "release.name / release.title / release.description not set: the release is named 'out'" in log
    release = kiwix_build / "release" / "data"
    pages = [release / "README.md", release / "croissant.json", *sorted((release / "browse").rglob("*.html"))]
    for page in pages:
        text = page.read_text(encoding="utf-8").lower()
        assert "demo" not in text and "eight photos" not in text, page
    card = (release / "README.md").read_text(encoding="utf-8")
    images = pq.read_metadata(next((release / "tables" / "images").glob("*.parquet"))).num_rows
    assert "# out: a dataset built by annobench" in card and f"{images:,} images (" in card


def write_table(folder: Path, name: str, rows: dict) -> None:
    (folder / "tables" / name).mkdir(parents=True)
    pq.write_table(pa.table(rows), folder / "tables" / name / "all.parquet")


def test_rejects_of_other_inputs_may_name_images_the_dataset_lacks(tmp_path):
    """A segmentation or box line for an unknown image is a reject with that reason, not a dangling
    key; a text row for the same image is."""
    write_table(tmp_path, "images", {"image_id": ["a"]})
    write_table(tmp_path, "rejects", {"image_id": ["b"], "reason": ["cannot decode"]})
    for table in ("segmentation_rejects", "box_rejects"):
        write_table(tmp_path, table, {"image_id": ["a", "b", "zz"], "reason": ["x", "y", "no image with this id"]})
    assert check_keys(tmp_path) == []
    write_table(tmp_path, "text_rejects", {"image_id": ["zz"], "reason": ["x"]})
    assert [str(problem) for problem in check_keys(tmp_path)] == [
        "text_rejects: image_id names no row of images or rejects (the inputs): zz"]


def test_boxes_may_reach_the_last_pixel_numbered_from_one(tmp_path):
    """VOC numbers pixels from 1, so a box may end at the image's width; one past it dangles."""
    write_table(tmp_path, "images", {"image_id": ["a"], "width": [500], "height": [375]})
    box = {"image_id": ["a"], "xmin": [1], "ymin": [1], "xmax": [500], "ymax": [375]}
    write_table(tmp_path, "boxes", box)
    assert check_keys(tmp_path) == []
    shutil.rmtree(tmp_path / "tables" / "boxes")
    write_table(tmp_path, "boxes", {**box, "xmax": [501]})
    assert [problem.values for problem in check_keys(tmp_path)] == [("a (1, 1, 501, 375) in 500x375",)]
