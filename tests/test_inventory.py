"""Listing images, ids and shards."""

from __future__ import annotations

import os
import shutil

import pytest

from annobench.core.config import load_config
from annobench.sources.inventory import (
    InventoryError,
    build_inventory,
    list_images,
    shard_count,
    shard_of,
)
from helpers import REAL_IMAGES, bsds_photos, require_shared, write_image_list


def config_for(images=None, image_list="", per_shard=50, num_shards=0):
    overrides = {"input": {"images": str(images or ""), "image_list": str(image_list)},
                 "sharding": {"images_per_shard": per_shard, "num_shards": num_shards}}
    return load_config(overrides=overrides)


def test_folder_walk_finds_every_photo_with_its_stem_as_id():
    folder = require_shared(REAL_IMAGES / "bsds500" / "train")
    sources = list_images(config_for(folder))
    assert len(sources) == 200
    assert [s.image_id for s in sources] == sorted(p.stem for p in folder.glob("*.jpg"))
    assert all(s.source_path == f"{s.image_id}.jpg" for s in sources)


def test_walk_is_recursive_and_skips_non_images(real_images):
    sources = list_images(config_for(real_images / "exif_orientation"))
    assert sorted(s.image_id for s in sources) == [f"Landscape_{k}" for k in range(9)]


def test_sharding_is_deterministic_and_balanced():
    inventory = build_inventory(config_for(require_shared(REAL_IMAGES / "bsds500" / "train"), per_shard=50))
    assert inventory.n_shards == 4
    assert inventory.n_images == 200
    for shard, sources in enumerate(inventory.shards):
        assert [s.image_id for s in sources] == sorted(s.image_id for s in sources)
        assert all(shard_of(s.image_id, 4) == shard for s in sources)
        assert 25 <= len(sources) <= 80


def test_an_image_keeps_its_shard_when_others_are_added_or_removed(tmp_path):
    photos = bsds_photos(40)
    small = build_inventory(config_for(image_list=write_image_list(tmp_path / "a.csv", {p.stem: p for p in photos[:30]}), per_shard=10))
    large = build_inventory(config_for(image_list=write_image_list(tmp_path / "b.csv", {p.stem: p for p in photos}), per_shard=10))
    assert small.n_shards == large.n_shards == 4
    where = {s.image_id: k for k, shard in enumerate(large.shards) for s in shard}
    for k, shard in enumerate(small.shards):
        assert all(where[s.image_id] == k for s in shard)


def test_shard_count_is_a_power_of_two_with_the_mean_under_the_target():
    assert shard_count(0, 2000) == 1
    assert shard_count(2000, 2000) == 1
    assert shard_count(2001, 2000) == 2
    assert shard_count(510_123, 2000) == 256
    assert shard_count(510_123, 2000, num_shards=300) == 300


def test_image_list_gives_ids_and_resolves_relative_paths(tmp_path):
    photos = bsds_photos(3)
    (tmp_path / "raw").mkdir()
    for p in photos:
        shutil.copy(p, tmp_path / "raw" / p.name)
    listing = tmp_path / "list.csv"
    listing.write_text("image_id,path\n" + "".join(f"img{k:03d},raw/{p.name}\n" for k, p in enumerate(photos)))
    sources = list_images(config_for(image_list=listing))
    assert [s.image_id for s in sources] == ["img000", "img001", "img002"]
    assert all(os.path.isfile(s.path) for s in sources)
    assert sources[0].source_path == f"raw/{photos[0].name}"


def test_id_collision_is_a_clear_error(tmp_path):
    photo = bsds_photos(1)[0]
    (tmp_path / "sub").mkdir()
    shutil.copy(photo, tmp_path / "same.jpg")
    shutil.copy(photo, tmp_path / "sub" / "same.png")
    with pytest.raises(InventoryError, match=r"'same' <- same.jpg, sub/same.png.*image_list"):
        list_images(config_for(tmp_path))


@pytest.mark.parametrize("bad_id", ["a/b", " padded", "", ".."])
def test_unusable_ids_in_a_list_are_refused(tmp_path, bad_id):
    listing = tmp_path / "list.csv"
    listing.write_text(f'image_id,path\n"{bad_id}",x.jpg\n')
    with pytest.raises(InventoryError, match="unusable image_id"):
        list_images(config_for(image_list=listing))


def test_list_without_the_right_header_is_refused(tmp_path):
    listing = tmp_path / "list.csv"
    listing.write_text("id,file\na,b.jpg\n")
    with pytest.raises(InventoryError, match="image_id,path"):
        list_images(config_for(image_list=listing))


def test_editing_one_raw_file_changes_only_its_shard_fingerprint(tmp_path):
    for p in bsds_photos(40):
        shutil.copy(p, tmp_path / p.name)
    before = build_inventory(config_for(tmp_path, per_shard=10))
    fingerprints = [before.fingerprint(k) for k in range(4)]
    victim = before.shards[2][0]
    stat = os.stat(victim.path)
    os.utime(victim.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    after = build_inventory(config_for(tmp_path, per_shard=10))
    changed = [k for k in range(4) if fingerprints[k] != after.fingerprint(k)]
    assert changed == [2]


def test_path_ids_keep_repeated_stems_apart_and_unquote_back_to_the_path(tmp_path):
    """cats/001.jpg and dogs/001.jpg: refused with stem ids (the error names the option), kept apart with path ids."""
    from urllib.parse import unquote

    photos = bsds_photos()[:4]
    names = ["cats/001.jpg", "dogs/001.jpg", "dogs/100% sure/a b.png", "top.jpg"]
    for name, photo in zip(names, photos):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(photo, tmp_path / name)
    with pytest.raises(InventoryError, match="ingest.image_id: path"):
        list_images(config_for(tmp_path))
    config = config_for(tmp_path)
    config["ingest"]["image_id"] = "path"
    sources = list_images(config)
    assert [s.image_id for s in sources] == ["cats%2F001", "dogs%2F001", "dogs%2F100%25 sure%2Fa b", "top"]
    for source in sources:
        assert unquote(source.image_id) == os.path.splitext(source.source_path)[0]
        assert (tmp_path / source.source_path).is_file()


def test_path_ids_still_refuse_files_that_differ_only_in_their_extension(tmp_path):
    photo = bsds_photos()[0]
    for name in ("a/x.jpg", "a/x.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(photo, tmp_path / name)
    config = config_for(tmp_path)
    config["ingest"]["image_id"] = "path"
    with pytest.raises(InventoryError, match=r"'a%2Fx' <- a/x.jpg, a/x.png"):
        list_images(config)
