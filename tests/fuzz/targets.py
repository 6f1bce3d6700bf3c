"""The fuzz targets: every reader of a file nobody here wrote, with its seeds made from the shared real files.

A target is a name, a seed builder and a reader. The seed builder takes a
folder for the reader's companion files (the concepts of a run, the label
maps next to a regions.csv) and gives {file name: bytes} of real inputs to
mutate, trimmed so that one case takes milliseconds. The reader takes the
path of one (mutated) file and the companions' folder; it returns "ok" or
"rejects" (a rejects row was written for the file) or raises one of the
target's documented errors. Anything else is a failure of the reader.

annobench is imported inside the functions: the parent process that makes
the cases never needs the readers, each child needs one target's.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]  # the checkout, above tests/fuzz/
REAL = REPO.parent / "shared" / "data" / "real"
SEGMENTATIONS = REAL / "segmentations"
MSRC_MATS = SEGMENTATIONS / "msrc_v2" / "newsegmentations_mats"
BSDS_MATS = SEGMENTATIONS / "bsds500" / "groundTruth" / "train"
RUNS = REAL / "runs" / "imageclef2014_devel"
BOXES = REAL / "boxes"
CAPTIONS = REAL / "captions" / "clipscore_example"
FLICKR = REAL / "content_selection" / "flickr30k_entities" / "annotation_test_half.json"
SCENE = REAL / "multilabel" / "scene"
PAGES = REAL / "pages"
FORMATS = REAL / "images" / "formats"
RUN_LINES, RUN_CONCEPTS = 30, 96  # the 2014 devel runs score 96 concepts a line


@dataclass(frozen=True)
class Target:
    name: str
    seeds: Callable[[Path], dict[str, bytes]]
    read: Callable[[Path, Path], str]
    documented: Callable[[], tuple[type[BaseException], ...]]  # imported in the child only


def sorted_files(folder: Path, pattern: str, n: int) -> list[Path]:
    return sorted(folder.glob(pattern))[:n]


def first_lines(path: Path, n: int) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[:n])


def msrc_map():
    """The first real MSRC-v2 label map and its labels."""
    from annobench.regions.matfile import read_mat

    variables = read_mat(sorted_files(MSRC_MATS, "*_GT.mat", 1)[0])
    return variables["newseg"].astype("int32"), variables["newlabels"].ravel().astype(int)


def annobench_errors():
    from annobench.core.errors import AnnobenchError

    return (AnnobenchError,)


# --- MAT files and the segmentation importers -------------------------------------

def mat_seeds(aux: Path) -> dict[str, bytes]:
    files = sorted_files(MSRC_MATS, "*_GT.mat", 3) + sorted_files(BSDS_MATS, "*.mat", 3)
    return {p.name: p.read_bytes() for p in files}


def read_mat_file(path: Path, aux: Path) -> str:
    from annobench.regions.matfile import read_mat

    read_mat(path)
    return "ok"


def imported(source: str, root: Path, **options) -> str:
    """Import a source folder; "rejects" when any rejects row came out."""
    from annobench.regions.importers import import_segmentations
    from annobench.regions.segmentation import SegmentationReject

    items = list(import_segmentations(source, root, **options))
    return "rejects" if any(isinstance(item, SegmentationReject) for item in items) else "ok"


def link_companions(path: Path, aux: Path) -> None:
    """The target's companion files next to the mutated one (the importers read folders)."""
    for companion in aux.iterdir():
        if not (path.parent / companion.name).exists():
            os.symlink(companion, path.parent / companion.name)


def bsds_seeds(aux: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted_files(BSDS_MATS, "*.mat", 3)}


def msrc_seeds(aux: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted_files(MSRC_MATS, "*_GT.mat", 3)}


def saiapr_seeds(aux: Path) -> dict[str, bytes]:
    """SAIAPR masks (-1 outside, 0 inside) of the regions of a real MSRC map, and their labels file."""
    import numpy as np

    from annobench.regions.matfile import write_mat

    label_map, labels = msrc_map()
    seeds, lines = {}, []
    for region in sorted(set(np.unique(label_map).tolist()) - {0})[:3]:
        write_mat(aux / "mask.mat", {"segimg_t": np.where(label_map == region, 0, -1).astype(np.float64)})
        seeds[f"img_{region}.mat"] = (aux / "mask.mat").read_bytes()
        lines.append(f"img {region} {region}\n")
    (aux / "mask.mat").unlink()
    (aux / "labels.txt").write_text("".join(lines), encoding="utf-8")
    return seeds


def canonical_seeds(aux: Path) -> dict[str, bytes]:
    """regions.csv of a real MSRC map, whose PNG is a companion."""
    import numpy as np

    from annobench.regions.segmentation import write_label_map

    label_map, labels = msrc_map()
    write_label_map(aux / "img.png", label_map)
    rows = [f"img,{region},class{region}\n" for region in sorted(set(np.unique(label_map).tolist()) - {0})]
    return {"regions.csv": ("image_id,region_id,label\n" + "".join(rows)).encode()}


def canonical_map_seeds(aux: Path) -> dict[str, bytes]:
    """The label map PNG, its regions.csv a companion."""
    csv = canonical_seeds(aux)["regions.csv"]
    png = (aux / "img.png").read_bytes()
    (aux / "img.png").unlink()
    (aux / "regions.csv").write_bytes(csv)
    return {"img.png": png}


def coco_seeds(aux: Path) -> dict[str, bytes]:
    """A COCO panoptic JSON of a real MSRC map, the PNG of segment ids a companion folder."""
    import numpy as np
    from PIL import Image

    label_map, labels = msrc_map()
    (aux / "panoptic").mkdir()
    rgb = np.stack([label_map % 256, label_map // 256 % 256, label_map // 65536], axis=-1).astype(np.uint8)
    Image.fromarray(rgb).save(aux / "panoptic" / "img.png")
    segments = [{"id": int(r), "category_id": int(r)} for r in sorted(set(np.unique(label_map).tolist()) - {0})]
    document = {"annotations": [{"file_name": "img.png", "segments_info": segments}],
                "categories": [{"id": s["category_id"], "name": f"class{s['category_id']}"} for s in segments]}
    return {"panoptic.json": json.dumps(document).encode()}


def labelme_seeds(aux: Path) -> dict[str, bytes]:
    """LabelMe files of the real VOC boxes of the toy example: one rectangle per object."""
    from xml.etree import ElementTree

    seeds = {}
    for path in sorted_files(BOXES / "voc_toyexample" / "gts_vocpascal_format", "*.xml", 3):
        root = ElementTree.parse(path).getroot()
        shapes = [{"label": obj.findtext("name"), "shape_type": "rectangle",
                   "points": [[float(obj.findtext("bndbox/xmin")), float(obj.findtext("bndbox/ymin"))],
                              [float(obj.findtext("bndbox/xmax")), float(obj.findtext("bndbox/ymax"))]]}
                  for obj in root.iter("object")]
        document = {"imageHeight": int(root.findtext("size/height")), "imageWidth": int(root.findtext("size/width")),
                    "shapes": shapes}
        seeds[path.stem + ".json"] = json.dumps(document, indent=1).encode()
    return seeds


def in_folder(source: str, **options) -> Callable[[Path, Path], str]:
    def read(path: Path, aux: Path) -> str:
        link_companions(path, aux)
        extra = {key: value(path, aux) for key, value in options.items()}
        return imported(source, path.parent, **extra)
    return read


# --- runs and ground truths of the benchmark --------------------------------------

def concepts_file(aux: Path) -> Path:
    path = aux / "concepts.txt"
    path.write_text("".join(f"concept{k:03d}\n" for k in range(RUN_CONCEPTS)), encoding="utf-8")
    return path


def run_text_seeds(aux: Path) -> dict[str, bytes]:
    concepts_file(aux)
    return {p.name: first_lines(p, RUN_LINES) for p in sorted(RUNS.glob("*.res"))}


def run_concepts(aux: Path) -> list[str]:
    return (aux / "concepts.txt").read_text(encoding="utf-8").split()


def read_run_file(path: Path, aux: Path) -> str:
    from annobench.benchmark.runs.files import read_run

    read_run(path, run_concepts(aux))
    return "ok"


def run_parquet_seeds(aux: Path) -> dict[str, bytes]:
    from annobench.benchmark.runs.files import read_run, write_run

    seeds = {}
    for name, data in run_text_seeds(aux).items():
        (aux / name).write_bytes(data)
        write_run(read_run(aux / name, run_concepts(aux)), aux / (name + ".parquet"), "parquet")
        seeds[name + ".parquet"] = (aux / (name + ".parquet")).read_bytes()
        (aux / name).unlink()
        (aux / (name + ".parquet")).unlink()
    return seeds


def box_run_seeds(form: str) -> Callable[[Path], dict[str, bytes]]:
    """The real detections (both examples) as one run in `form` (text, csv or parquet)."""
    def seeds(aux: Path) -> dict[str, bytes]:
        import pandas as pd

        from annobench.benchmark.boxes.forms import read_box_run, write_box_run

        run = pd.concat([read_box_run(BOXES / "padilla_odm" / "detections", geometry="xywh"),
                         read_box_run(BOXES / "voc_toyexample" / "dets_classname_abs_xywh", geometry="xywh")],
                        ignore_index=True)
        name = {"text": "run.txt", "csv": "run.csv", "parquet": "run.parquet"}[form]
        write_box_run(run, aux / name, form)
        data = (aux / name).read_bytes()
        (aux / name).unlink()
        return {name: data}
    return seeds


def read_box_run_file(path: Path, aux: Path) -> str:
    from annobench.benchmark.boxes.forms import read_box_run

    read_box_run(path)
    return "ok"


def box_truth_seeds(aux: Path) -> dict[str, bytes]:
    coco = BOXES / "voc_toyexample" / "gts_coco_format" / "toy_example_coco.JSON"
    voc = sorted_files(BOXES / "voc_toyexample" / "gts_vocpascal_format", "*.xml", 2)
    return {"coco.json": coco.read_bytes(), **{p.name: p.read_bytes() for p in voc}}


def read_box_truth_file(path: Path, aux: Path) -> str:
    """A COCO file is read as it is; a VOC XML file as the folder it is in."""
    from annobench.benchmark.boxes.truth import read_box_truth

    truth = read_box_truth(path.parent if path.suffix == ".xml" else path)
    return "rejects" if getattr(truth, "rejects", None) is not None and len(truth.rejects) else "ok"


def caption_reference_seeds(aux: Path) -> dict[str, bytes]:
    return {"refs.json": (CAPTIONS / "refs.json").read_bytes()}


def read_caption_references(path: Path, aux: Path) -> str:
    from annobench.benchmark.captions.files import read_references

    read_references(path)
    return "ok"


def caption_run_seeds(aux: Path) -> dict[str, bytes]:
    os.symlink(CAPTIONS / "refs.json", aux / "refs.json")
    return {p.name: p.read_bytes() for p in (CAPTIONS / "good_captions.json", CAPTIONS / "bad_captions.json")}


def read_caption_run(path: Path, aux: Path) -> str:
    from annobench.benchmark.captions.files import read_references, read_run

    read_run(path, read_references(aux / "refs.json"))
    return "ok"


def flickr_records(n: int = 40) -> list:
    return json.loads(FLICKR.read_text(encoding="utf-8"))[:n]


def selection_truth_seeds(aux: Path) -> dict[str, bytes]:
    return {"flickr30k.json": json.dumps(flickr_records()).encode()}


def read_selection_truth_file(path: Path, aux: Path) -> str:
    from annobench.benchmark.selection.files import read_selection_truth

    read_selection_truth(path)
    return "ok"


def selection_run_seeds(aux: Path) -> dict[str, bytes]:
    """A run selecting every boxed instance of the first images of the real Flickr30k Entities records."""
    from annobench.benchmark.selection.files import read_flickr30k_entities

    (aux / "truth.json").write_text(json.dumps(flickr_records()), encoding="utf-8")
    truth = read_flickr30k_entities(aux / "truth.json")
    rows = [f"{image_id},{instance}\n" for image_id in sorted(truth.images)[:5]
            for instance in sorted(truth.images[image_id].boxes)]
    return {"run.csv": ("image_id,instance\n" + "".join(rows)).encode()}


def read_selection_run_file(path: Path, aux: Path) -> str:
    from annobench.benchmark.selection.files import read_flickr30k_entities, read_selection_run

    read_selection_run(path, read_flickr30k_entities(aux / "truth.json"))
    return "ok"


def page_image_names(n: int) -> list[str]:
    names = [p.name for p in sorted((PAGES / "kiwix_wikipedia" / "I" / "m").iterdir()) if "," not in p.name]
    return names[:n]


def illustration_run_seeds(aux: Path) -> dict[str, bytes]:
    """A ranking of real image names (the Wikipedia pages' images) for three queries."""
    images = page_image_names(8)
    lines = [f"q{q},{rank},{image}\n" for q in range(3)
             for rank, image in enumerate(images[q:] + images[:q], 1)]
    return {"run.csv": ("query_id,rank,image_id\n" + "".join(lines)).encode()}


def read_illustration_run(path: Path, aux: Path) -> str:
    from annobench.benchmark.illustration.runs import read_ranking_run

    read_ranking_run(path)
    return "ok"


def illustration_truth_seeds(aux: Path) -> dict[str, bytes]:
    images = page_image_names(3)
    return {"truth.csv": ("query_id,image_id\n" + "".join(f"q{q},{i}\n" for q, i in enumerate(images))).encode()}


def read_illustration_truth(path: Path, aux: Path) -> str:
    from annobench.benchmark.illustration.measure import read_truth

    read_truth(path)
    return "ok"


def ground_truth_seeds(aux: Path) -> dict[str, bytes]:
    """The Mulan scene labels of the first photos as an image_id,concept CSV."""
    from xml.etree import ElementTree

    labels = [label.get("name") for label in ElementTree.parse(SCENE / "scene.xml").getroot()]
    rows = []
    for k, line in enumerate((SCENE / "scene-train.arff").read_text(encoding="utf-8").split("@data", 1)[1].split()[:40]):
        flags = line.split(",")[-len(labels):]
        rows += [f"photo{k},{label}\n" for label, flag in zip(labels, flags) if flag == "1"]
    return {"ground_truth.csv": ("image_id,concept\n" + "".join(rows)).encode()}


def read_ground_truth(path: Path, aux: Path) -> str:
    from annobench.benchmark.annotation.ground_truth import read_truth_csv

    read_truth_csv(path)
    return "ok"


# --- pages, archives, images, config -------------------------------------------------

def page_seeds(aux: Path) -> dict[str, bytes]:
    pages = sorted_files(PAGES / "kiwix_wikipedia" / "A", "*", 2) + sorted(
        (PAGES / "dataset_popular").rglob("*.html"))[:2]
    return {p.name: p.read_bytes() for p in pages}


def read_page_file(path: Path, aux: Path) -> str:
    from annobench.sources.pages import PageLimits, read_page

    read_page("page", path, PageLimits(max_bytes=20_000_000, timeout_seconds=10))
    return "ok"


def page_rejected():
    from annobench.sources.pages import PageRejected

    return (PageRejected,)


def warc_bytes(gzipped: bool) -> bytes:
    """A WARC of two real Wikipedia pages and the images each shows, as a crawl writes it."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=gzipped)
    base = "http://en.wikipedia.example/"
    records = [(f"A/{p.name}", "text/html; charset=utf-8", p) for p in sorted_files(PAGES / "kiwix_wikipedia" / "A", "*", 2)]
    records += [(f"I/m/{p.name}", "image/jpeg", p) for p in sorted_files(PAGES / "kiwix_wikipedia" / "I" / "m", "*.jpg", 2)]
    for address, content_type, path in records:
        http = StatusAndHeaders("200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(base + address, "response", payload=io.BytesIO(path.read_bytes()),
                                                      http_headers=http))
    return buffer.getvalue()


def warc_seeds(aux: Path) -> dict[str, bytes]:
    return {"crawl.warc": warc_bytes(False), "crawl.warc.gz": warc_bytes(True)}


def read_warc(path: Path, aux: Path) -> str:
    from annobench.sources.warc_index import IndexSettings, scan_archive

    _, rejects = scan_archive(str(path), IndexSettings())
    return "rejects" if rejects else "ok"


def image_seeds(aux: Path) -> dict[str, bytes]:
    """The real files of many formats; not JPEG 2000, which this Pillow cannot decode (an ImageRejected)."""
    return {p.name: p.read_bytes() for p in sorted(FORMATS.iterdir())
            if p.stat().st_size < 400_000 and p.suffix != ".jp2"}


def read_image(path: Path, aux: Path) -> str:
    from annobench.images.decode import DecodeLimits, decode_image

    decode_image(path.read_bytes(), DecodeLimits(max_pixels=50_000_000, min_width=1, min_height=1))
    return "ok"


def image_rejected():
    from annobench.images.decode import ImageRejected

    return (ImageRejected,)


def config_seeds(aux: Path) -> dict[str, bytes]:
    return {"config.yaml": (REPO / "config" / "config.yaml").read_bytes(),
            "demo.yaml": (REPO / "demo" / "config.yaml").read_bytes()}


def read_config(path: Path, aux: Path) -> str:
    from annobench.core.config import load_config

    load_config(path)
    return "ok"


TARGETS = {target.name: target for target in [
    Target("mat", mat_seeds, read_mat_file, annobench_errors),
    Target("regions_bsds", bsds_seeds, in_folder("bsds500"), annobench_errors),
    Target("regions_msrc", msrc_seeds, in_folder("msrc_v2"), annobench_errors),
    Target("regions_saiapr", saiapr_seeds, in_folder("saiapr", labels_file=lambda p, a: a / "labels.txt"),
           annobench_errors),
    Target("regions_canonical_csv", canonical_seeds, in_folder("canonical"), annobench_errors),
    Target("regions_canonical_png", canonical_map_seeds, in_folder("canonical"), annobench_errors),
    Target("regions_coco", coco_seeds, in_folder("coco_panoptic", annotations=lambda p, a: p), annobench_errors),
    Target("regions_labelme", labelme_seeds, in_folder("labelme"), annobench_errors),
    Target("run_text", run_text_seeds, read_run_file, annobench_errors),
    Target("run_parquet", run_parquet_seeds, read_run_file, annobench_errors),
    Target("box_run_text", box_run_seeds("text"), read_box_run_file, annobench_errors),
    Target("box_run_csv", box_run_seeds("csv"), read_box_run_file, annobench_errors),
    Target("box_run_parquet", box_run_seeds("parquet"), read_box_run_file, annobench_errors),
    Target("box_truth", box_truth_seeds, read_box_truth_file, annobench_errors),
    Target("caption_references", caption_reference_seeds, read_caption_references, annobench_errors),
    Target("caption_run", caption_run_seeds, read_caption_run, annobench_errors),
    Target("selection_truth", selection_truth_seeds, read_selection_truth_file, annobench_errors),
    Target("selection_run", selection_run_seeds, read_selection_run_file, annobench_errors),
    Target("illustration_run", illustration_run_seeds, read_illustration_run, annobench_errors),
    Target("illustration_truth", illustration_truth_seeds, read_illustration_truth, annobench_errors),
    Target("ground_truth", ground_truth_seeds, read_ground_truth, annobench_errors),
    Target("page", page_seeds, read_page_file, page_rejected),
    Target("warc", warc_seeds, read_warc, annobench_errors),
    Target("image", image_seeds, read_image, image_rejected),
    Target("config", config_seeds, read_config, annobench_errors),
]}


# --- the harness's own check: a reader that misbehaves as the file tells it -------------

def misbehave(path: Path, aux: Path) -> str:
    """ok | documented | rejects as named; raise, allocate, sleep or abort: the failures the harness must see."""
    import time

    from annobench.core.errors import AnnobenchError

    order = path.read_text(encoding="ascii").strip()
    if order == "documented":
        raise AnnobenchError(f"{path}: documented")
    if order == "raise":
        return {}["undocumented"]
    if order == "allocate":
        block = b"x" * (1536 << 20)  # written, so resident: past the 1 GB bound
        return "ok" if block else "rejects"
    if order == "sleep":
        time.sleep(3600)
    if order == "abort":
        os.abort()
    return order


HARNESS_CHECK = Target("harness_check", lambda aux: {}, misbehave, annobench_errors)
