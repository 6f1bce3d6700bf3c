"""The `annobench` command. Later stages add their subcommands here."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from annobench import __version__


def _inventory(args: argparse.Namespace) -> int:
    from annobench.config import load_config
    from annobench.inventory import InventoryError, build_inventory

    overrides = {"input": {"images": args.images}} if args.images else None
    config = load_config(args.configfile, overrides)
    try:
        inventory = build_inventory(config)
    except InventoryError as error:
        print(f"annobench: {error}", file=sys.stderr)
        return 2
    sizes = [len(s) for s in inventory.shards]
    print(f"{inventory.n_images} images in {inventory.n_shards} shard(s); "
          f"smallest {min(sizes)}, largest {max(sizes)}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from annobench.demo import write_demo

    write_demo(Path(args.out))
    print(f"demo dataset written to {args.out}")
    return 0


def _feature(args: argparse.Namespace) -> int:
    """Compute a feature for given image files as they are (decoded, oriented, sRGB; not resized)."""
    import numpy as np
    import yaml

    from annobench.config import deep_merge, load_config
    from annobench.decode import DecodeLimits, ImageRejected, decode_image
    from annobench.features import make_extractor, write_vectors

    overrides = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"annobench: --param takes key=value, got {item!r}", file=sys.stderr)
            return 2
        overrides[key] = yaml.safe_load(value)
    config = load_config(args.configfile)
    config = load_config(args.configfile, {"features": {args.name: deep_merge(config["features"][args.name], overrides)}})
    params = config["features"][args.name]
    ids = [Path(p).stem for p in args.images]
    if len(set(ids)) != len(ids):
        print("annobench: two images share a file stem (their image_id)", file=sys.stderr)
        return 2
    if args.name == "dsift" and args.kind is None:
        print("annobench: feature dsift needs --kind sift|csift|rgbsift|opponentsift", file=sys.stderr)
        return 2
    limits = DecodeLimits.from_config(config["ingest"])
    images, failed = [], []
    for path in args.images:
        try:
            images.append(decode_image(Path(path).read_bytes(), limits).pixels)
        except (ImageRejected, OSError) as error:
            failed.append(f"{path}: {error}")
    if failed:
        print("annobench: nothing written; cannot use:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    if args.name == "dsift":
        from annobench.dsift import DsiftParams, write_descriptors

        count = write_descriptors(ids, images, args.kind, DsiftParams.from_config(params), args.out)
        print(f"dsift {args.kind}: {count} descriptors of {len(ids)} image(s) -> {args.out}")
        return 0
    extract = make_extractor(args.name, params)
    vectors = np.stack([extract(rgb) for rgb in images]).astype(np.float32)
    write_vectors(args.name, params, ids, vectors, args.out)
    print(f"{args.name}: {len(ids)} vectors of {vectors.shape[1]} values -> {args.out}")
    return 0


def _text(args: argparse.Namespace) -> int:
    """Text features of a folder of pages, outside Snakemake (one shard)."""
    from annobench.config import load_config
    from annobench.fingerprint import params_hash
    from annobench.page_map import derive_mapping, write_mapping
    from annobench.pages import PageLimits
    from annobench.text_features import TextParams
    from annobench.text_stage import extract_text, read_mapping, write_scofeat, write_text_tables

    config = load_config(args.configfile)
    pages, out = Path(args.pages), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mapping = Path(args.mapping) if args.mapping else out / "mapping.csv"
    if not args.mapping:
        derived = derive_mapping(pages, PageLimits.from_config(config["text"]))
        write_mapping(derived, mapping, out / "images.csv", pages)
        print(f"derived {len(derived.mapping)} image/page rows for {len(derived.images)} images -> {mapping} "
              f"({len(derived.unresolved)} <img> addresses without a local file, see unresolved.csv)")
    rows = sorted(set(read_mapping(mapping)), key=lambda r: (r.image_id, r.page_id, r.img_src))
    result = extract_text(rows, pages, TextParams.from_config(config["text"]), PageLimits.from_config(config["text"]),
                          log=lambda line: None)
    write_text_tables(result, out, 0, params_hash(config["text"]))
    write_scofeat([str(out / "tables" / "text_terms" / "shard-00000.parquet")], out / "exports" / "text.scofeat",
                  out / "exports" / "text_iids.txt")
    with_terms = sum(1 for terms in result.terms_by_image.values() if terms)
    print(f"{with_terms} of {len(result.terms_by_image)} images have text features; "
          f"{len(result.tables['text_rejects'])} rejects rows -> {out}")
    return 0


def _pages_map(args: argparse.Namespace) -> int:
    from annobench.page_map import derive_mapping, write_mapping

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    derived = derive_mapping(Path(args.pages))
    write_mapping(derived, out / "mapping.csv", out / "images.csv", Path(args.pages))
    print(f"{len(derived.mapping)} rows, {len(derived.images)} images, {len(derived.unusable_pages)} unusable pages, "
          f"{len(derived.unresolved)} unresolved addresses -> {out}/mapping.csv, images.csv, unresolved.csv")
    return 0


def _regions(args: argparse.Namespace) -> int:
    """Segmentation import, region features and relations for a folder, outside Snakemake (one shard)."""
    from annobench.config import load_config
    from annobench.decode import DecodeLimits, oriented_size
    from annobench.fingerprint import params_hash
    from annobench.inventory import InventoryError, walk_image_folder, check_unique_ids
    from annobench.region_stage import (
        REGION_TABLES, process_segmentations, read_ontology, region_statistics, saiapr_exports,
    )

    config = load_config(args.configfile)
    try:
        sources = walk_image_folder(Path(args.images), config["ingest"]["extensions"])
        check_unique_ids(sources)
    except InventoryError as error:
        print(f"annobench: {error}", file=sys.stderr)
        return 2
    images = {s.image_id: s.path for s in sources}
    sizes = {image_id: size for image_id, path in images.items() if (size := oriented_size(path))}
    parents = read_ontology(args.ontology) if args.ontology else {}
    options = {"annotator": args.annotator} if args.kind == "bsds" else {}
    out = Path(args.out)
    result = process_segmentations(
        args.kind, args.masks, images, sizes, options, args.stripe_fraction, parents,
        DecodeLimits.from_config(config["ingest"]), wanted=lambda image_id: True, log=lambda line: None,
    )
    from annobench.region_stage import write_region_outputs

    settings = {"kind": args.kind, "annotator": args.annotator, "stripe_fraction": args.stripe_fraction}
    tables = {name: str(out / "tables" / name / "shard-00000.parquet") for name in REGION_TABLES}
    write_region_outputs(result, tables, out / "segmentations" / "shard-00000", params_hash(settings))
    stats = {name: str(out / "tables" / "region_stats" / f"{name}.parquet")
             for name in ("label_frequencies", "regions_per_image", "relation_frequencies")}
    summary = region_statistics([tables["regions"]], [tables["region_features"]], [tables["spatial_relations"]],
                                stats, str(out / "reports" / "top_labels.png"), params_hash(settings))
    saiapr_exports([tables["regions"]], [tables["region_features"]], [tables["spatial_relations"]],
                   str(out / "exports" / "saiapr" / "features.txt"), str(out / "exports" / "saiapr" / "labels.txt"),
                   str(out / "exports" / "saiapr" / "relations.txt"))
    print(f"{summary['segmentations']} segmentations, {summary['regions']} regions, "
          f"{len(result.tables['segmentation_rejects'])} rejects rows -> {out}")
    return 0


def _audit(args: argparse.Namespace) -> int:
    from annobench.release import main_audit

    return main_audit(args.release_dir, args.recompute)


def _bench(args: argparse.Namespace) -> int:
    import tempfile

    from annobench.bench import run_bench

    if args.workdir:
        run_bench(args.images, args.cores, Path(args.workdir), args.images_per_shard)
    else:
        with tempfile.TemporaryDirectory(prefix="annobench-bench-") as work:
            run_bench(args.images, args.cores, Path(work), args.images_per_shard)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="annobench", description=__doc__)
    parser.add_argument("--version", action="version", version=f"annobench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    inventory = commands.add_parser("inventory", help="list the input images and their shards, without building")
    inventory.add_argument("--configfile", default=None, help="config file (default: config/config.yaml)")
    inventory.add_argument("--images", default=None, help="image folder (overrides input.images)")
    inventory.set_defaults(run=_inventory)

    feature = commands.add_parser(
        "feature", help="compute a visual feature for given image files (as they are, not resized)"
    )
    feature.add_argument("name", choices=["colorhist", "getlf", "gist", "dsift"],
                         help="dsift writes the raw dense SIFT descriptors (image_id, x, y, descriptor)")
    feature.add_argument("--kind", choices=["sift", "csift", "rgbsift", "opponentsift"],
                         help="descriptor kind, for dsift")
    feature.add_argument("images", nargs="+", help="image files; image_id is the file stem")
    feature.add_argument("--out", required=True, help="Parquet file to write (image_id, vector)")
    feature.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                         help="override a parameter of the feature, e.g. colour=false or seed=7")
    feature.add_argument("--configfile", default=None, help="take defaults from this config")
    feature.set_defaults(run=_feature)

    text = commands.add_parser("text", help="near-image text features of a folder of pages, outside snakemake")
    text.add_argument("--pages", required=True, help="folder of saved pages (page_id = path under it)")
    text.add_argument("--mapping", default=None, help="CSV image_id,page_id,img_src; derived from the pages if absent")
    text.add_argument("--out", required=True, help="folder for the tables and the .scofeat export")
    text.add_argument("--configfile", default=None, help="take the text settings from this config")
    text.set_defaults(run=_text)

    pages_map = commands.add_parser(
        "pages-map", help="derive mapping.csv and an image list from saved pages whose images sit beside them"
    )
    pages_map.add_argument("--pages", required=True)
    pages_map.add_argument("--out", required=True, help="folder for mapping.csv, images.csv, unresolved.csv")
    pages_map.set_defaults(run=_pages_map)

    regions = commands.add_parser("regions", help="region features and spatial relations of segmented images")
    regions.add_argument("--kind", required=True, choices=["canonical", "saiapr", "msrc", "bsds", "coco", "labelme"])
    regions.add_argument("--images", required=True, help="folder of the images (image_id = file stem)")
    regions.add_argument("--masks", required=True, help="the segmentations, as the kind lays them out")
    regions.add_argument("--out", required=True, help="folder for the tables, label maps, statistics and exports")
    regions.add_argument("--annotator", default="all", type=lambda v: v if v == "all" else int(v),
                         help="bsds: all, or one annotator's number")
    regions.add_argument("--stripe-fraction", type=float, default=0.2)
    regions.add_argument("--ontology", default=None, help="CSV child,parent")
    regions.add_argument("--configfile", default=None)
    regions.set_defaults(run=_regions)

    audit = commands.add_parser("audit", help="verify a release: hashes, lineage, raw inputs; optionally recompute")
    audit.add_argument("release_dir")
    audit.add_argument("--recompute", type=int, default=0, metavar="N",
                       help="rebuild N sampled jobs' outputs in a scratch folder and compare them byte for byte")
    audit.set_defaults(run=_audit)

    bench = commands.add_parser("bench", help="run the whole pipeline on N real images and print its costs")
    bench.add_argument("--images", type=int, default=200, help="number of images (BSDS500 photos repeated)")
    bench.add_argument("--cores", type=int, default=2)
    bench.add_argument("--images-per-shard", type=int, default=2000)
    bench.add_argument("--workdir", default=None, help="keep the build here (default: a temporary folder)")
    bench.set_defaults(run=_bench)

    demo = commands.add_parser("demo", help="(re)write the embedded demo dataset")
    demo.add_argument("--out", default="demo", help="folder to write (default: demo)")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    import os

    # One BLAS thread, as every workflow job has: sums in the same order give the same bytes.
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    from annobench.config import ConfigError

    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ConfigError as error:
        print(f"annobench: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
