"""CNN embeddings: the output of one layer of a network the user gives as a file.

The ImageCLEF 2016 release gave, beside its seven hand-made features, "the
seventh layer feature representations extracted from a deep CNN model
pre-trained with the ImageNet dataset using the Berkeley Caffe library"
(Gilbert et al. 2016, section 2.4). Here the network is a file the user
names in `features.cnn.NAME` (any number of them, each its own table
`cnn_NAME`): an ONNX model, or a Caffe model (`deploy.prototxt` and
`.caffemodel`; Jia et al. 2014) converted to ONNX on reading
(annobench.visual.caffe). OpenCV's DNN module runs it, on one thread.

The network reads the stored resized image, as every visual feature does:
the overview resized the images to at most 240 pixels "before visual
feature extraction" (same section), and a released feature must be
recomputable from the released images. The input recipe is the model's own
(its model zoo page): resize (the shorter side to `resize_to`, or both
sides to it), centre crop to `size`, channel order, then per channel
(pixel - mean) x scale / std, as Caffe's data transformer computes it.

A network is loaded and checked once per job and at planning: its files are
read (missing, unreadable or damaged files are one error naming the file),
the named layer is found (or the error lists the names it has), and one
image of the recipe's size goes through it (a size the network cannot take
is the same kind of error, OpenCV's own message rephrased). The check's
result (the vector's dimension) is cached under the build's work/cnn/ until
a file, the settings or this code changes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from annobench.core.errors import AnnobenchError
from annobench.core.fingerprint import file_state, params_hash
from annobench.core.fsutil import write_bytes_atomic

INTERPOLATIONS = {"linear": cv2.INTER_LINEAR, "area": cv2.INTER_AREA, "cubic": cv2.INTER_CUBIC}
MAX_MODEL_BYTES = 4 << 30  # larger files are refused unread (VGG16's caffemodel is 553 MB)
CHECKS = "work/cnn"  # the plan's cached checks, one JSON file a model
NAMES_SHOWN = 12  # names an unknown-layer error lists
TABLE_PREFIX = "cnn_"  # features.cnn.NAME is the table cnn_NAME
TABLES = (f"{TABLE_PREFIX}NAME",)  # the tables this module writes, as docs/tables.md names them


class CnnError(AnnobenchError):
    """A network that cannot be used as configured (the message names the file and the setting)."""


def table_name(model: str) -> str:
    return f"{TABLE_PREFIX}{model}"


def model_files(settings: dict) -> list[str]:
    """The files of a configured network: the model, and a Caffe network's prototxt."""
    return [settings["model"], *([settings["prototxt"]] if settings.get("prototxt") else [])]


def job_settings(settings: dict) -> dict:
    """A model's settings as its outputs depend on them (`optional` only decides whether the build goes on)."""
    return {key: value for key, value in settings.items() if key != "optional"}


def files_state(settings: dict) -> str:
    """size:mtime of the network's files: a job reruns when one changes."""
    return " ".join(file_state(path) for path in model_files(settings))


# ---------------------------------------------------------------- the input recipe


def network_input(rgb: np.ndarray, recipe: dict) -> np.ndarray:
    """An 8-bit RGB image as the network's input blob (1, 3, H, W), float32, by the recipe."""
    width, height = recipe["size"]
    target = recipe["resize_to"]
    h, w = rgb.shape[:2]
    if recipe["resize"] == "warp":
        new_w = new_h = target
    elif w <= h:  # shorter_side: the longer side in proportion, rounded down (torchvision's Resize)
        new_w, new_h = target, int(target * h / w)
    else:
        new_w, new_h = int(target * w / h), target
    image = rgb if (new_w, new_h) == (w, h) else cv2.resize(
        rgb, (new_w, new_h), interpolation=INTERPOLATIONS[recipe["interpolation"]])
    top, left = (new_h - height) // 2, (new_w - width) // 2  # Caffe's test-time crop offsets
    image = image[top:top + height, left:left + width]
    if recipe["channels"] == "BGR":
        image = image[:, :, ::-1]
    mean = np.asarray(recipe["mean"], np.float32)
    factor = np.float32(recipe["scale"]) / np.asarray(recipe["std"], np.float32)
    blob = (image.astype(np.float32) - mean) * factor
    return np.ascontiguousarray(blob.transpose(2, 0, 1)[None])


def recipe_problem(recipe: dict) -> str | None:
    """What makes a recipe impossible whatever the network, or None."""
    width, height = recipe["size"]
    if recipe["resize_to"] < max(width, height):
        return (f"resize_to {recipe['resize_to']} is smaller than the {width} x {height} crop "
                f"(the resized image must hold it)")
    return None


# ---------------------------------------------------------------- loading a network


@dataclass
class Network:
    name: str  # features.cnn.NAME
    net: object  # cv2.dnn.Net, cut to the layer
    recipe: dict
    dimension: int
    files: list[dict]  # each file read: path as configured, sha256, size

    def __call__(self, rgb: np.ndarray) -> np.ndarray:
        self.net.setInput(network_input(rgb, self.recipe))
        return np.asarray(self.net.forward(), np.float32).reshape(-1)


def load_network(name: str, settings: dict, paths: list[str] | None = None) -> Network:
    """The network of features.cnn.NAME, cut to its layer and checked on one input of the recipe's
    size. `paths` replaces the configured files (a recorded job replayed elsewhere)."""
    where = f"features.cnn.{name}"
    recipe = settings["input"]
    problem = recipe_problem(recipe)
    if problem:
        raise CnnError(f"{where}.input: {problem}")
    paths = paths or model_files(settings)
    model_path = paths[0]
    data, files = _read(paths[0], f"{where}.model"), []
    files.append(_described(settings["model"], data))
    if settings.get("prototxt"):
        text = _read(paths[1], f"{where}.prototxt")
        files.append(_described(settings["prototxt"], text))
        onnx_bytes, declared = _from_caffe(text, data, settings["layer"], paths[1], model_path)
    else:
        onnx_bytes, declared = _from_onnx(data, settings["layer"], model_path)
    del data
    try:
        net = cv2.dnn.readNetFromONNX(np.frombuffer(onnx_bytes, np.uint8))
    except cv2.error as error:
        raise CnnError(f"{model_path}: OpenCV cannot load the network ({where}): {opencv_message(error)}") from None
    del onnx_bytes
    width, height = recipe["size"]
    if declared and len(declared) == 4 and all(declared[1:]) and \
            (declared[1] != 3 or (declared[2], declared[3]) != (height, width)):
        raise CnnError(f"{model_path}: the network takes {declared[1]} x {declared[2]} x {declared[3]} "
                       f"(channels x height x width), {where}.input.size gives 3 x {height} x {width}")
    network = Network(name, net, recipe, 0, files)
    try:
        network.dimension = int(network(np.zeros((height, width, 3), np.uint8)).size)
    except cv2.error as error:
        raise CnnError(f"{model_path}: the network cannot take a 3 x {height} x {width} input ({where}.input): "
                       f"{opencv_message(error)}") from None
    return network


def opencv_message(error: Exception) -> str:
    """OpenCV's error on one line, without its source file, error code or C++ signature:
    `DNN/Gemm: Invalid dimension of dim K ..., 'K_a' is 1600 must be equal to 'K_b' is 2304`,
    `Assertion failed: node_proto.output_size() >= 1`."""
    lines = str(error).strip().splitlines() or [""]
    detail = " ".join(line.lstrip("> ").strip() for line in lines[1:] if line.strip())
    if detail:
        return detail
    head = lines[0].split(" error: ", 1)[-1]
    kind = re.match(r"\(-?\d+:([^)]*)\)\s*", head)
    head = re.sub(r"\s*in function '[^']*'", "", head[kind.end():] if kind else head).strip()
    return f"{kind.group(1)}: {head}" if kind and head else head or " ".join(str(error).split())


def _read(path: str, what: str) -> bytes:
    file = Path(path)
    try:
        size = file.stat().st_size
        if file.is_dir():
            raise CnnError(f"{path}: is a folder, not a network file ({what})")
        if size > MAX_MODEL_BYTES:
            raise CnnError(f"{path}: {size:,} bytes, more than the {MAX_MODEL_BYTES:,} a network file may have ({what})")
        return file.read_bytes()
    except FileNotFoundError:
        raise CnnError(f"{path}: no such file ({what})") from None
    except OSError as error:
        raise CnnError(f"{path}: cannot read it ({what}): {error.strerror or error}") from None


def _described(path: str, data: bytes) -> dict:
    return {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _from_onnx(data: bytes, layer: str, path: str) -> tuple[bytes, list | None]:
    from annobench.visual import onnx_model
    from annobench.visual.protobuf import ProtobufError

    try:
        graph = onnx_model.read_model(data)
    except ProtobufError as error:
        raise CnnError(f"{path}: not an ONNX model ({error})") from None
    if len(graph.inputs) != 1:
        raise CnnError(f"{path}: the network has {len(graph.inputs)} inputs; a feature network takes one image")
    names = graph.tensor_names()
    node = next((n for n in graph.nodes if n.name == layer and n.outputs), None)
    target = node.outputs[0] if node is not None else (layer if layer in graph.producers() else None)
    if target is None:
        raise CnnError(f"{path}: no node or tensor named {layer!r}; it has {_some(names)}")
    data_out = data if graph.outputs == [target] and len(graph.nodes) == len(onnx_model.needed_nodes(graph, target)) \
        else onnx_model.cut_to(graph, target)
    return data_out, graph.input_shapes.get(graph.inputs[0][0])


def _from_caffe(text: bytes, weights: bytes, layer: str, prototxt: str, model: str) -> tuple[bytes, list | None]:
    from annobench.visual.caffe import CaffeError, CaffeNet, read_weights
    from annobench.visual.protobuf import ProtobufError

    try:
        source = text.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CnnError(f"{prototxt}: not a Caffe prototxt (not UTF-8 text: {error.reason} at byte {error.start})") \
            from None
    try:
        net = CaffeNet(source, prototxt)
    except (CaffeError, ProtobufError) as error:
        raise CnnError(f"{prototxt}: not a Caffe network definition: {error}") from None
    target = net.tensor_of(layer)
    if target is None:
        raise CnnError(f"{prototxt}: no blob or layer named {layer!r}; it has {_some(net.names())}")
    try:
        blobs = read_weights(weights)
    except (CaffeError, ProtobufError) as error:
        raise CnnError(f"{model}: not Caffe weights ({error})") from None
    try:
        return net.to_onnx(target, blobs, model), net.input_shape
    except CaffeError as error:
        raise CnnError(f"{prototxt}: {error}") from None


def _some(names: list[str]) -> str:
    if len(names) <= NAMES_SHOWN:
        return ", ".join(names)
    half = NAMES_SHOWN // 2
    return ", ".join(names[:half]) + f", ... ({len(names) - NAMES_SHOWN} more) ..., " + ", ".join(names[-half:])


# ---------------------------------------------------------------- the plan's check, cached


def checked_dimension(name: str, settings: dict, out_dir: Path | str, code: str) -> int:
    """The vector dimension of features.cnn.NAME, from the build's cached check when nothing it
    depends on changed (files, settings, `code`: the fingerprint of this module's code), else
    loaded and checked now. A failed check is cached too, and raised again."""
    key = params_hash({"settings": job_settings(settings), "files": files_state(settings), "code": code,
                       "opencv": cv2.__version__})
    cache = Path(out_dir) / CHECKS / f"{name}.json"
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cached = {}
    if cached.get("key") != key:
        try:
            cached = {"key": key, "dimension": load_network(name, settings).dimension}
        except CnnError as error:
            cached = {"key": key, "error": str(error)}
        try:
            write_bytes_atomic(cache, json.dumps(cached, sort_keys=True).encode())
        except OSError:  # an output folder not writable yet: checked again next time
            pass
    if "error" in cached:
        raise CnnError(cached["error"])
    return int(cached["dimension"])


# ---------------------------------------------------------------- the job


def released_params(settings: dict, network: Network) -> dict:
    """What the table records of its network: the settings with each file by name, hash and size
    (not the path it had on the building machine) and the vector's dimension."""
    files = [{"file": Path(entry["path"]).name, "sha256": entry["sha256"], "size": entry["size"]}
             for entry in network.files]
    named = {key: Path(value).name for key, value in settings.items() if key in ("model", "prototxt") and value}
    return {**job_settings(settings), **named, "files": files, "dimension": network.dimension}


def description(name: str, settings: dict, network: Network) -> str:
    model = network.files[0]
    return (f"CNN embeddings of network {name}: the output of {settings['layer']!r} of {Path(model['path']).name} "
            f"(sha256 {model['sha256'][:16]}...), {network.dimension} float32 values per image, computed from the "
            f"stored resized image by the input recipe in this table's params")


def cnn_feature_job(job) -> list[dict]:
    """Rule feature_cnn_NAME: one network's vectors of a shard's images, on one OpenCV thread
    (the same bytes whatever --cores). Returns the network's files as its raw inputs."""
    from annobench.core.provenance import raw_file
    from annobench.visual.stage import extract_shard

    cv2.setNumThreads(1)
    name, settings = job.params["model"], job.params["settings"]
    roles = ["model", "prototxt"][:len(model_files(settings))]
    paths = [job.raw(role)[0]["absolute_path"] for role in roles] if job.recorded_raw is not None else None
    network = load_network(name, settings, paths)
    job.log(f"network {name}: {network.files[0]['path']}, layer {settings['layer']!r}, {network.dimension} values")
    extract_shard(table_name(name), released_params(settings, network), network, network.dimension,
                  job.input("images"), job.out_dir, job.output_files[0], job.log, job.every_seconds,
                  description(name, settings, network))
    return [raw_file(path, entry["path"], entry["sha256"], role)
            for path, entry, role in zip(paths or model_files(settings), network.files, roles)]
