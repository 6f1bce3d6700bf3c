"""annobench: regenerate image-annotation benchmark datasets and check them.

The whole build runs with Snakemake (`snakemake --cores all` in the
checkout); these commands run single stages on folders of your own, score
and check runs, and audit builds and releases.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from annobench import __version__
from annobench.core.arguments import Parser, non_negative_int, positive_int, share


def _inventory(args: argparse.Namespace) -> int:
    from annobench.core.config import load_config
    from annobench.sources.inventory import build_inventory

    overrides = {"input": {"images": args.images}} if args.images else None
    inventory = build_inventory(load_config(args.configfile, overrides))
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

    from annobench.core.config import deep_merge, load_config
    from annobench.images.decode import DecodeLimits, ImageRejected, decode_image
    from annobench.visual.stage import make_extractor, write_vectors

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
        from annobench.visual.dsift import DsiftParams, write_descriptors

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
    from annobench.core.config import load_config
    from annobench.core.fingerprint import params_hash
    from annobench.sources.pages import PageLimits
    from annobench.text.captions import CaptionFilter
    from annobench.text.features import TextParams
    from annobench.text.page_map import derive_mapping, write_mapping
    from annobench.core import layout
    from annobench.core.tables import rows_to_table, write_table
    from annobench.text.stage import SCHEMAS, extract_text, read_mapping, write_scofeat, write_text_tables

    config = load_config(args.configfile)
    out = Path(args.out)
    if args.warc:
        pages, derived_mapping = _index_archives(args.warc, config, out)
    else:
        pages, derived_mapping = _folder(args.pages), None
    out.mkdir(parents=True, exist_ok=True)
    mapping = Path(args.mapping) if args.mapping else out / "mapping.csv"
    if derived_mapping is not None and not args.mapping:
        mapping.write_bytes(derived_mapping)
    elif not args.mapping:
        derived = derive_mapping(pages, PageLimits.from_config(config["text"]))
        write_mapping(derived, mapping, out / "images.csv", pages)
        print(f"derived {len(derived.mapping)} image/page rows for {len(derived.images)} images -> {mapping} "
              f"({len(derived.unresolved)} <img> addresses without a local file, see unresolved.csv)")
    rows = sorted(set(read_mapping(mapping)), key=lambda r: (r.image_id, r.page_id, r.img_src))
    result = extract_text(rows, pages, TextParams.from_config(config["text"]), PageLimits.from_config(config["text"]),
                          log=lambda line: None)
    write_text_tables(result, out, 0, params_hash(config["text"]))
    captions = result.page_captions(CaptionFilter.from_config(config["text"]))  # these pages are the collection
    write_table(rows_to_table(captions, SCHEMAS["page_captions"]), out / layout.table_file("page_captions", 0),
                "page_captions", params_hash(config["text"]["captions"]))
    write_scofeat([str(out / "tables" / "text_terms" / "shard-00000.parquet")], out / "exports" / "text.scofeat",
                  out / "exports" / "text_iids.txt")
    with_terms = sum(1 for terms in result.terms_by_image.values() if terms)
    print(f"{with_terms} of {len(result.terms_by_image)} images have text features; "
          f"{len(result.tables['text_rejects'])} rejects rows -> {out}")
    return 0


def _index_archives(archives: list[str], config: dict, out: Path):
    """Index web archives into `out` (its warc tables and unresolved.csv): their pages and mapping CSV."""
    from annobench.core.fingerprint import params_hash
    from annobench.sources.warc_index import (
        IndexSettings,
        WarcPages,
        index_for,
        mapping_csv,
        write_unresolved,
        write_warc_tables,
    )

    config["input"]["warc"], config["output"] = archives, str(out)
    index = index_for(config, log=lambda line: print(line, file=sys.stderr))
    write_warc_tables(index, out, params_hash(IndexSettings.from_config(config).key_fields()))
    write_unresolved(index, out / "unresolved.csv")
    print(f"{len(index.archives)} archive(s): {len(index.pages)} pages, {len(index.images)} images, "
          f"{len(index.mapping)} image/page rows, {len(index.unresolved)} addresses without an image record, "
          f"{len(index.rejects)} rejected records -> {out}/tables/warc_records, warc_page_map, warc_rejects, "
          "unresolved.csv")
    return WarcPages(index.pages), mapping_csv(index.mapping)


def _pages_map(args: argparse.Namespace) -> int:
    from annobench.core.config import load_config
    from annobench.text.page_map import derive_mapping, write_mapping

    if args.warc:
        out = Path(args.out)
        _, mapping = _index_archives(args.warc, load_config(args.configfile), out)
        (out / "mapping.csv").write_bytes(mapping)
        return 0
    pages, out = _folder(args.pages), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    derived = derive_mapping(pages)
    write_mapping(derived, out / "mapping.csv", out / "images.csv", Path(args.pages))
    print(f"{len(derived.mapping)} rows, {len(derived.images)} images, {len(derived.unusable_pages)} unusable pages, "
          f"{len(derived.unresolved)} unresolved addresses -> {out}/mapping.csv, images.csv, unresolved.csv")
    return 0


def _regions(args: argparse.Namespace) -> int:
    """Segmentation import, region features and relations for a folder, outside Snakemake (one shard)."""
    from annobench.core.config import load_config
    from annobench.core.fingerprint import params_hash
    from annobench.images.decode import DecodeLimits, oriented_size
    from annobench.regions.matlimits import MatLimits
    from annobench.regions.stage import (
        REGION_TABLES,
        STATS_TABLES,
        RegionSettings,
        process_segmentations,
        read_ontology,
        region_statistics,
        saiapr_exports,
        write_region_outputs,
    )
    from annobench.sources.inventory import check_unique_ids, walk_image_folder

    config = load_config(args.configfile)
    sources = walk_image_folder(Path(args.images), config["ingest"]["extensions"], config["ingest"]["image_id"])
    check_unique_ids(sources)
    images = {s.image_id: s.path for s in sources}
    sizes = {image_id: size for image_id, path in images.items() if (size := oriented_size(path))}
    region_settings = RegionSettings(
        kind=args.kind, options={"annotator": args.annotator} if args.kind == "bsds" else {},
        stripe_fraction=args.stripe_fraction, parents=read_ontology(args.ontology) if args.ontology else {},
        limits=DecodeLimits.from_config(config["ingest"]), mat_limits=MatLimits.from_config(config["segmentations"]),
    )
    out = Path(args.out)
    result = process_segmentations(region_settings, args.masks, images, sizes, wanted=lambda image_id: True,
                                   log=lambda line: None)
    settings = {"kind": args.kind, "annotator": args.annotator, "stripe_fraction": args.stripe_fraction}
    tables = {name: str(out / "tables" / name / "shard-00000.parquet") for name in REGION_TABLES}
    write_region_outputs(result, tables, out / "segmentations" / "shard-00000", params_hash(settings))
    stats = {name: str(out / "tables" / name / "all.parquet") for name in STATS_TABLES}
    summary = region_statistics([tables["regions"]], [tables["region_features"]], [tables["spatial_relations"]],
                                stats, str(out / "reports" / "top_labels.png"), params_hash(settings))
    saiapr_exports([tables["regions"]], [tables["region_features"]], [tables["spatial_relations"]],
                   str(out / "exports" / "saiapr" / "features.txt"), str(out / "exports" / "saiapr" / "labels.txt"),
                   str(out / "exports" / "saiapr" / "relations.txt"))
    print(f"{summary['segmentations']} segmentations, {summary['regions']} regions, "
          f"{len(result.tables['segmentation_rejects'])} rejects rows -> {out}")
    return 0


def _audit(args: argparse.Namespace) -> int:
    from annobench.release.audit import default_jobs, main_audit

    return main_audit(args.release_dir, args.recompute, jobs=args.jobs or default_jobs())


def _bench(args: argparse.Namespace) -> int:
    import tempfile

    from annobench.bench import cnn_section, print_projections, run_bench
    from annobench.core.errors import AnnobenchError

    def build_and_project(workdir: Path) -> None:
        builds = [Path(d).resolve() for d in args.records]
        if not builds:  # no measured builds given: measure one now
            builds = [path.resolve() for path in
                      run_bench(args.images, args.cores, workdir, args.images_per_shard, cnn=cnn)["builds"]]
        print_projections(builds, args.project_images, args.project_cores, args.mem_gb,
                          Path(args.plot) if args.plot else None, cnn=cnn, peaks=args.peaks)

    try:
        cnn = cnn_section(args.cnn_config) if args.cnn_config else None
    except (AnnobenchError, FileNotFoundError) as error:
        return _fail(error)
    try:
        if args.workdir:
            build_and_project(Path(args.workdir))
        else:
            with tempfile.TemporaryDirectory(prefix="annobench-bench-") as work:
                build_and_project(Path(work))
    except RuntimeError as error:  # snakemake failed: its own report is the message
        return _fail(error)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    """Every measure of docs/measures.md (ImageCLEF 2012, ImageCLEF 2013-2016, Dutta et al. 2018) for
    one run against a ground truth, as JSON."""
    from annobench.benchmark.annotation.ground_truth import read_truth_csv, truth_matrix
    from annobench.benchmark.annotation.measure import evaluate, per_concept_table
    from annobench.benchmark.json_form import json_bytes
    from annobench.benchmark.runs.concepts import read_concepts
    from annobench.benchmark.runs.files import read_run
    from annobench.core.fsutil import write_bytes_atomic

    concepts = read_concepts(args.concepts)
    run = read_run(args.run, concepts, args.concept_lists)
    label_sets = read_truth_csv(args.truth).label_sets()
    unknown = sorted({c for labels in label_sets.values() for c in labels} - set(concepts))
    if unknown:
        return _fail(f"{args.truth}: concept(s) not in {args.concepts}: {', '.join(unknown[:10])}")
    missing = sorted(set(label_sets) - set(run.image_ids))
    if missing:
        return _fail(f"{args.run}: no line for {len(missing)} image(s) of the ground truth, e.g. "
                     f"{', '.join(missing[:5])}")
    truth = truth_matrix(label_sets, run.image_ids, concepts)
    measures = evaluate(truth, run.scores, run.decisions, run.listed, seed=args.seed, top_k=args.top_k)
    write_bytes_atomic(args.json, json_bytes(measures))
    if args.per_concept:
        table = per_concept_table(truth, run.scores, run.decisions, concepts, run.listed)
        write_bytes_atomic(args.per_concept, table.to_csv(index=False).encode())
    print(f"{len(run.image_ids)} images x {len(concepts)} concepts: MAP-samples {measures['MAP-samples']:.4f}, "
          f"MF1-samples {measures['MF1-samples']:.4f}, MiAP {measures['MiAP']:.4f}, F1_L {measures['F1_L']:.4f} "
          f"-> {args.json}")
    return 0


def _evaluate_selection(args: argparse.Namespace) -> int:
    """Content selection (ImageCLEF 2016 subtask 3, Gilbert et al. 2016, sections 2.5 and 3.4): a run,
    the human upper bound or a baseline, as JSON."""
    from annobench.benchmark.json_form import json_bytes
    from annobench.benchmark.selection.files import read_selection_truth
    from annobench.benchmark.selection.measure import summarise
    from annobench.core.fsutil import write_bytes_atomic

    if args.baseline is None and (args.k is not None or args.seed is not None):
        return _fail("--k and --seed are settings of --baseline")
    if args.baseline == "largest" and args.seed is not None:
        return _fail("--seed is a setting of --baseline random; largest-first has no randomness")
    truth = read_selection_truth(args.truth, args.instances)
    scores, described = _selection_scores(args, truth)
    summary = {**summarise(scores), **described,
               "truth": {"path": str(args.truth), "instances_file": args.instances, **truth.summary()}}
    write_bytes_atomic(args.json, json_bytes(summary))
    print(f"{summary['run']}: {summary['images']} images, P {summary['P']['mean']:.4f}, "
          f"R {summary['R']['mean']:.4f}, F {summary['F']['mean']:.4f} -> {args.json}")
    return 0


def _selection_scores(args: argparse.Namespace, truth) -> tuple[dict, dict]:
    """Per-image scores of what --run, --human or --baseline asks for, and the JSON keys saying what it was."""
    from annobench.benchmark.selection.baselines import DEFAULT_K, largest_selection, random_selection
    from annobench.benchmark.selection.files import read_selection_run
    from annobench.benchmark.selection.measure import human_scores, run_scores

    settings = {"std": "population"}
    if args.human:
        scores = human_scores(truth)
        return scores, {"run": "human", "settings": settings, "images_left_out": len(truth.images) - len(scores)}
    if args.run:
        selection = read_selection_run(args.run, truth)
        return run_scores(truth, selection), {"run": str(args.run), "settings": settings,
                                              "images_not_in_run": len(set(truth.images) - set(selection))}
    settings["k"] = DEFAULT_K if args.k is None else args.k
    if args.baseline == "random":
        settings["seed"] = 0 if args.seed is None else args.seed
        selection = random_selection(truth, settings["seed"], settings["k"])
    else:
        selection = largest_selection(truth, settings["k"])
    return run_scores(truth, selection), {"run": args.baseline, "settings": settings}


def _evaluate_captions(args: argparse.Namespace) -> int:
    from annobench.benchmark.captions.commands import evaluate_captions_main

    return evaluate_captions_main(args.refs, args.run, args.human, args.tokenize, args.json, args.table)


def _check_run(args: argparse.Namespace) -> int:
    from annobench.benchmark.runs.checker import check_run_main

    return check_run_main(args.concepts, args.run, args.concept_lists, images_path=args.images)


def _boxes(args: argparse.Namespace) -> int:
    from annobench.benchmark.boxes.commands import boxes_main

    return boxes_main(args.truth, args.out, args.segmentations, args.concepts, args.images, args.image_id_from,
                      geometry=args.geometry, outside=args.outside)


def _evaluate_boxes(args: argparse.Namespace) -> int:
    from annobench.benchmark.boxes.commands import evaluate_boxes_main

    return evaluate_boxes_main(args.truth, args.run, args.json, args.thresholds, args.interpolation, args.min_boxes,
                               geometry=args.geometry, truth_geometry=args.truth_geometry, images=args.images)


def _check_box_run(args: argparse.Namespace) -> int:
    from annobench.benchmark.boxes.checker import check_box_run_main

    return check_box_run_main(args.run, args.concepts, args.images, geometry=args.geometry)


def _check_caption_run(args: argparse.Namespace) -> int:
    from annobench.benchmark.captions.checker import check_caption_run_main

    return check_caption_run_main(args.run, args.images)


def _check_selection_run(args: argparse.Namespace) -> int:
    from annobench.benchmark.selection.checker import check_selection_run_main

    return check_selection_run_main(args.run, args.instances)


def _label_stats(args: argparse.Namespace) -> int:
    from annobench.benchmark.annotation.diagnostics import label_set_stats
    from annobench.benchmark.annotation.ground_truth import read_truth_csv
    from annobench.benchmark.json_form import json_bytes
    from annobench.core.fsutil import write_bytes_atomic

    train, test = read_truth_csv(args.train).label_sets(), read_truth_csv(args.test).label_sets()
    stats = label_set_stats(list(train.values()), list(test.values()))
    write_bytes_atomic(args.json, json_bytes(stats))
    print(f"{stats['test_images']} test images: unique label sets {stats['unique_label_sets']:.4f}, "
          f"novel {stats['novel_label_sets']:.4f} -> {args.json}")
    return 0


def _annotator(text: str) -> str | int:
    return text if text == "all" else positive_int(text)


def _folder(path: str) -> Path:
    """An input folder that must exist: a mistyped path is an error, not an empty result."""
    if not Path(path).is_dir():
        raise FileNotFoundError(2, "no such folder", path)
    return Path(path)


def _fail(message) -> int:
    print(f"annobench: {message}", file=sys.stderr)
    return 2


def _report(error) -> int:
    """The project's error: one line; a run that does not parse, one line per problem (the first 20)."""
    lines = error.report_lines()
    for line in lines[:20]:
        print(line, file=sys.stderr)
    if len(lines) > 20:
        print(f"{getattr(error, 'path', 'annobench')}: {len(lines) - 20} more problem(s); the command's checker "
              "(check-run, check-box-run, check-illustration-run) lists them all", file=sys.stderr)
    return 2


GEOMETRY_HELP = ("how a folder of box text files gives a box: xyxy (xmin ymin xmax ymax, the maximum inclusive, as "
                 "VOC), xyxy-exclusive (the maximum one past the box) or xywh (left top width height); required "
                 "for such a folder, which does not say it (VOC XML, COCO JSON, the tables and the WxH+X+Y text "
                 "form say theirs)")
IMAGES_HELP = ("the images: one id a line, CSV image_id[,width,height], or a build folder (its images table, with "
               "sizes); other images are {other}, boxes leaving their image too")


def _geometry_option(parser: argparse.ArgumentParser, flag: str = "--geometry", help_text: str = GEOMETRY_HELP) -> None:
    from annobench.benchmark.boxes.model import GEOMETRIES

    parser.add_argument(flag, default=None, choices=GEOMETRIES, help=help_text)


def _page_source(parser: argparse.ArgumentParser, pages_help: str, warc_help: str) -> None:
    """--pages FOLDER or --warc FILE...: where a command's pages come from."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pages", help=pages_help)
    source.add_argument("--warc", nargs="+", metavar="FILE", help=warc_help)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="annobench", description=__doc__)
    parser.add_argument("--version", action="version", version=f"annobench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)

    inventory = commands.add_parser("inventory", help="list the input images and their shards, without building")
    inventory.add_argument("--configfile", default=None, help="config file (default: the package's config/config.yaml)")
    inventory.add_argument("--images", default=None, help="image folder (overrides input.images)")
    inventory.set_defaults(handler=_inventory)

    feature = commands.add_parser(
        "feature", help="compute a visual feature for given image files (as they are, not resized)"
    )
    feature.add_argument("name", choices=["colorhist", "getlf", "gist", "dsift"],
                         help="dsift writes the raw dense SIFT descriptors (image_id, x, y, descriptor)")
    feature.add_argument("--kind", choices=["sift", "csift", "rgbsift", "opponentsift"],
                         help="descriptor kind, for dsift")
    feature.add_argument("images", nargs="+", help="image files; image_id is the file stem")
    feature.add_argument("--out", required=True,
                         help="Parquet file to write: image_id, vector (dsift: image_id, x, y, descriptor)")
    feature.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                         help="override a parameter of the feature, e.g. colour=false or seed=7")
    feature.add_argument("--configfile", default=None, help="take defaults from this config (default: the package's config/config.yaml)")
    feature.set_defaults(handler=_feature)

    text = commands.add_parser("text", help="near-image text features of saved pages or web archives, outside "
                                            "snakemake")
    _page_source(text, "folder of saved pages (page_id = path under it)",
                 "web archives (.warc, .warc.gz, or folders of them) holding the pages and images "
                 "(page_id = the page's address)")
    text.add_argument("--mapping", default=None,
                      help="CSV image_id,page_id,img_src; derived from the pages or archives if absent")
    text.add_argument("--out", required=True, help="folder for the tables and the .scofeat export")
    text.add_argument("--configfile", default=None,
                      help="take the text settings from this config (default: the package's config/config.yaml)")
    text.set_defaults(handler=_text)

    pages_map = commands.add_parser(
        "pages-map", help="derive mapping.csv from saved pages whose images sit beside them, or from web archives"
    )
    _page_source(pages_map, "folder of saved pages with their images (page_id = path under it)",
                 "web archives (.warc, .warc.gz, or folders of them): page_id = the page's address, "
                 "image_id = the image's address without its scheme (docs: input.warc)")
    pages_map.add_argument("--out", required=True,
                           help="folder for mapping.csv and unresolved.csv, and images.csv (a folder) or the "
                                "tables warc_records, warc_page_map and warc_rejects (archives)")
    pages_map.add_argument("--configfile", default=None,
                           help="take the warc and text settings from this config (default: the package's config/config.yaml)")
    pages_map.set_defaults(handler=_pages_map)

    regions = commands.add_parser("regions", help="region features and spatial relations of segmented images")
    regions.add_argument("--kind", required=True, choices=["canonical", "saiapr", "msrc", "bsds", "coco", "labelme"],
                         help="how the segmentations are laid out (see segmentations.kind in the config)")
    regions.add_argument("--images", required=True, help="folder of the images (image_id = file stem)")
    regions.add_argument("--masks", required=True, help="the segmentations, as the kind lays them out")
    regions.add_argument("--out", required=True, help="folder for the tables, label maps, statistics and exports")
    regions.add_argument("--annotator", default="all", type=_annotator,
                         help="bsds: all, or one annotator's number")
    regions.add_argument("--stripe-fraction", type=share, default=0.2,
                         help="width of the alignment stripes, share of the image size")
    regions.add_argument("--ontology", default=None, help="CSV child,parent: stores each region's label path")
    regions.add_argument("--configfile", default=None, help="take the decoding limits from this config (default: the package's config/config.yaml)")
    regions.set_defaults(handler=_regions)

    audit = commands.add_parser(
        "audit", help="verify a release (hashes, the bag, lineage, raw inputs; optionally recompute) or a build "
                      "folder (files missing or differing from their job records)")
    audit.add_argument("release_dir", metavar="FOLDER",
                       help="a release (the bag's folder, or its data/ with MANIFEST.jsonl) or a build's output "
                            "folder (with provenance/)")
    audit.add_argument("--recompute", type=non_negative_int, default=0, metavar="N",
                       help="rebuild N sampled jobs' outputs in a scratch folder and compare them byte for byte")
    audit.add_argument("--jobs", type=non_negative_int, default=0, metavar="N",
                       help="files hashed at a time (default: the cores this process may use, at most 8); "
                            "the verdict does not depend on it")
    audit.set_defaults(handler=_audit)

    bench = commands.add_parser("bench", help="run the whole pipeline on N real images and print its costs")
    bench.add_argument("--images", type=positive_int, default=200, help="number of images (BSDS500 photos repeated)")
    bench.add_argument("--cores", type=positive_int, default=2, help="cores snakemake may use")
    bench.add_argument("--images-per-shard", type=positive_int, default=None,
                       help="sharding.images_per_shard of the build (default: 2,000, or a quarter of the images)")
    bench.add_argument("--workdir", default=None, help="keep the build here (default: a temporary folder)")
    bench.add_argument("--records", action="append", default=[], metavar="BUILD_DIR",
                       help="project from the job records of this finished build (its folder with out/ and "
                            ".snakemake/) instead of building; repeat to combine builds of different sizes")
    bench.add_argument("--project-images", type=positive_int, help="images of each projected release (default: its own)")
    bench.add_argument("--project-cores", type=positive_int, default=32, help="cores of the projected machine")
    bench.add_argument("--mem-gb", type=float, default=256, help="memory of the projected machine")
    bench.add_argument("--peaks", action="store_true", help="also print every rule's projected peak memory a job")
    bench.add_argument("--plot", default=None, help="write the cores' utilisation over time here (PNG)")
    bench.add_argument("--cnn-config", default=None, metavar="CONFIG",
                       help="a config whose features.cnn networks the bench build computes and the projection "
                            "plans, with baselines on them (paths relative to the current folder)")
    bench.set_defaults(handler=_bench)

    evaluate = commands.add_parser(
        "evaluate", help="score a run against a ground truth: the ImageCLEF 2012-2016 and Dutta et al. measures")
    evaluate.add_argument("--truth", required=True, help="CSV image_id,concept: the concepts present in each image")
    evaluate.add_argument("--run", required=True,
                          help="the run: ImageCLEF 2012 form, 2013-2016 form (with --concept-lists) or .parquet")
    evaluate.add_argument("--concepts", required=True, help="one concept a line, in the run's column order")
    evaluate.add_argument("--concept-lists", default=None,
                          help="lines 'id c_a c_b ...': each image's own concepts (ImageCLEF 2013-2016 runs)")
    evaluate.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                          help="decisions for P_L..F1_I = the K best-scoring concepts (default: the run's own)")
    evaluate.add_argument("--seed", type=non_negative_int, default=0, help="order of tied scores in MAP-samples (default 0)")
    evaluate.add_argument("--json", required=True, help="where to write the measures")
    evaluate.add_argument("--per-concept", default=None, metavar="CSV",
                          help="also write per-concept counts, P, R, F and AP")
    evaluate.set_defaults(handler=_evaluate)

    selection = commands.add_parser(
        "evaluate-selection", help="score content selection (which box instances descriptions mention): a run, "
                                   "the human upper bound or a baseline")
    selection.add_argument("--truth", required=True,
                           help="CSV image_id,description,instance (with --instances), or Flickr30k Entities "
                                "phrase records (JSON)")
    selection.add_argument("--instances", default=None,
                           help="CSV image_id,instance[,xmin,ymin,xmax,ymax]: each image's box instances "
                                "(with a description CSV)")
    scored = selection.add_mutually_exclusive_group(required=True)
    scored.add_argument("--run", default=None, help="CSV image_id,instance: the instances selected per image")
    scored.add_argument("--human", action="store_true",
                        help="the human upper bound: each description against the image's others")
    scored.add_argument("--baseline", choices=["random", "largest"], default=None,
                        help="random: up to K instances at random per image; largest: the K largest boxes")
    selection.add_argument("--k", type=positive_int, default=None, metavar="K",
                           help="instances a baseline selects per image (default 3)")
    selection.add_argument("--seed", type=non_negative_int, default=None, help="seed of the random baseline (default 0)")
    selection.add_argument("--json", required=True, help="where to write P, R and F")
    selection.set_defaults(handler=_evaluate_selection)

    captions = commands.add_parser(
        "evaluate-captions", help="score a caption run (one sentence per image) against reference descriptions "
                                  "with Meteor 1.5, or the human upper bound (needs the captions extra and Java)")
    captions.add_argument("--refs", required=True,
                          help="reference captions: CSV image_id,caption, COCO caption JSON or {image: [captions]}")
    scored = captions.add_mutually_exclusive_group(required=True)
    scored.add_argument("--run", default=None,
                        help="CSV image_id,caption, COCO results JSON or {image: caption}: one caption per image")
    scored.add_argument("--human", action="store_true",
                        help="the human upper bound: each reference against the image's other references")
    captions.add_argument("--tokenize", choices=["ptb", "none"], default="ptb",
                          help="ptb: pycocoevalcap's PTB tokenizer (Java); none: the text as written")
    captions.add_argument("--json", required=True, help="where to write the measures")
    captions.add_argument("--table", default=None, metavar="DIR",
                          help="also write the references as the captions table, DIR/tables/captions/all.parquet")
    captions.set_defaults(handler=_evaluate_captions)

    check_run = commands.add_parser(
        "check-run", help="validate a run file like the official ImageCLEF checker (exit 2 and one line per problem)")
    check_run.add_argument("--concepts", required=True, help="one concept a line, in the run's column order")
    check_run.add_argument("--concept-lists", default=None, help="lines 'id c_a c_b ...' (ImageCLEF 2013-2016)")
    check_run.add_argument("--images", default=None,
                           help="the test images in run order (one id a line, or a CSV with an image_id column such "
                                "as the ground truth): a 2012-form run must have exactly one line for each, in order")
    check_run.add_argument("run", help="the run file (ImageCLEF 2012 or 2013-2016 form, or .parquet)")
    check_run.set_defaults(handler=_check_run)

    boxes = commands.add_parser(
        "boxes", help="read box ground truth (VOC XML, COCO JSON, a table, box text files or segmentations) into "
                      "the boxes table, bad boxes into box rejects")
    boxes.add_argument("--truth", required=True,
                       help="a VOC XML folder, a COCO JSON file, a CSV or Parquet table "
                            "image_id,concept,xmin,ymin,xmax,ymax, a folder of box text files 'class A B C D' "
                            "(with --geometry), or (with --segmentations) the segmentations")
    boxes.add_argument("--segmentations", default=None, metavar="KIND",
                       choices=["canonical", "saiapr", "msrc_v2", "bsds500", "coco_panoptic", "labelme"],
                       help="derive the boxes from labelled segmentations of this kind (each region's bounding box)")
    boxes.add_argument("--concepts", default=None,
                       help="the vocabulary (one concept a line, or the concepts CSV): other concepts are rejected")
    boxes.add_argument("--images", default=None, help=IMAGES_HELP.format(other="rejected"))
    _geometry_option(boxes)
    boxes.add_argument("--outside", default="reject", choices=["reject", "clip"],
                       help="a box leaving its image (of known size): rejected, or clipped to the image and kept "
                            "with a row in tables/box_notes (default: reject)")
    boxes.add_argument("--image-id-from", default="file", choices=["file", "filename"],
                       help="VOC XML: the image id is the file's stem or the stem of its <filename>")
    boxes.add_argument("--out", required=True,
                       help="folder to write tables/boxes, tables/box_rejects and tables/box_notes in")
    boxes.set_defaults(handler=_boxes)

    evaluate_boxes = commands.add_parser(
        "evaluate-boxes",
        help="score a box run against box ground truth: AP and MAP at IoU thresholds (ImageCLEF 2016 subtask 1)")
    evaluate_boxes.add_argument("--truth", required=True,
                                help="VOC XML folder, COCO JSON, CSV or Parquet table, or folder of box text files "
                                     "'class A B C D' (with --geometry or --truth-geometry)")
    evaluate_boxes.add_argument("--run", required=True,
                                help="the box run: text, CSV or Parquet form, a folder of "
                                     "'class confidence A B C D' files (with --geometry), or COCO results (COCO truth)")
    evaluate_boxes.add_argument("--thresholds", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9",
                                help="IoU thresholds, comma-separated, each in [0, 1]; 0 ignores the box")
    evaluate_boxes.add_argument("--interpolation", default="all", choices=["all", "11"],
                                help="AP over all recall points (VOC 2010+) or at 11 recall levels (VOC 2007)")
    evaluate_boxes.add_argument("--min-boxes", type=non_negative_int, default=0, metavar="N",
                                help="evaluate only images with at least N ground-truth boxes (0: every image)")
    _geometry_option(evaluate_boxes)
    _geometry_option(evaluate_boxes, "--truth-geometry", "the geometry of a ground truth folder of box text files "
                                                         "when it is not the run's --geometry")
    evaluate_boxes.add_argument("--images", default=None, help=IMAGES_HELP.format(other="problems of the run and "
                                                                                       "rejected from the truth"))
    evaluate_boxes.add_argument("--json", required=True, help="where to write MAP and AP per threshold")
    evaluate_boxes.set_defaults(handler=_evaluate_boxes)

    check_box_run = commands.add_parser(
        "check-box-run", help="validate a box run (exit 2 and one line per problem, naming line and field)")
    check_box_run.add_argument("--concepts", default=None, help="the vocabulary, one concept a line")
    check_box_run.add_argument("--images", default=None, help=IMAGES_HELP.format(other="problems"))
    _geometry_option(check_box_run)
    check_box_run.add_argument("run", help="the box run: text, CSV or Parquet form, or a folder of detections files")
    check_box_run.set_defaults(handler=_check_box_run)

    check_caption_run = commands.add_parser(
        "check-caption-run", help="validate a caption run (exit 2 and one line per problem)")
    check_caption_run.add_argument("--images", default=None,
                                   help="the test images: one id a line, or a CSV with an image_id column; other "
                                        "images are problems")
    check_caption_run.add_argument("run", help="CSV image_id,caption, COCO results JSON or {image: caption}")
    check_caption_run.set_defaults(handler=_check_caption_run)

    check_selection_run = commands.add_parser(
        "check-selection-run", help="validate a content-selection run (exit 2 and one line per problem)")
    check_selection_run.add_argument("--instances", default=None,
                                     help="CSV image_id,instance[,...]: the test images' box instances; other images "
                                          "and instances are problems")
    check_selection_run.add_argument("run", help="CSV image_id,instance: the instances selected per image")
    check_selection_run.set_defaults(handler=_check_selection_run)

    from annobench.benchmark.illustration.arguments import add_commands as add_illustration_commands

    add_illustration_commands(commands)

    label_stats = commands.add_parser(
        "label-stats", help="unique and novel label-set shares of a test set (Dutta et al., section 4)")
    label_stats.add_argument("--train", required=True, help="CSV image_id,concept of the training images")
    label_stats.add_argument("--test", required=True, help="CSV image_id,concept of the test images")
    label_stats.add_argument("--json", required=True, help="where to write the figures")
    label_stats.set_defaults(handler=_label_stats)

    demo = commands.add_parser("demo", help="(re)write the embedded demo dataset")
    demo.add_argument("--out", default="demo", help="folder to write (default: demo)")
    demo.set_defaults(handler=_demo)
    for choice in commands._choices_actions:  # `annobench COMMAND --help` opens with what it does
        commands.choices[choice.dest].description = choice.help
    return parser


def main(argv: list[str] | None = None) -> int:
    import os

    # One BLAS thread, as every workflow job has: sums in the same order give the same bytes.
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    from annobench.core.errors import AnnobenchError

    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except AnnobenchError as error:  # bad input, named: one line; anything else is a bug and keeps its traceback
        return _report(error)
    except OSError as error:  # a missing or unreadable input: one line, not a traceback
        return _fail(error.strerror and f"{error.strerror}: {error.filename}" if error.filename else error)


if __name__ == "__main__":
    sys.exit(main())
