"""CNN features (features.cnn): networks of real shapes through OpenCV's DNN module, one core.

    python3 perf/bench_cnn.py [--images 20] [--keep FOLDER]

Needs onnx (the test extra: pip install -e ".[test]") and the BSDS500 photos
of ../shared. Two networks of the shapes the CNN features are used with, with
seeded random weights (the times and memory depend on the shapes, not on the
values):

- VGG16 (Simonyan and Zisserman 2015, configuration D): 13 convolutions of
  3 x 3 in five blocks, each block max-pooled, then fc6, fc7 (4,096 values,
  the feature) and fc8; 224 x 224 input. Written twice: as ONNX, and as the
  Caffe model zoo's pair (a deploy.prototxt and a 553 MB .caffemodel, the
  2016 configuration), which annobench converts on reading.
- ResNet-50 (He et al. 2016, Table 1): a 7 x 7 convolution, max pooling,
  3 + 4 + 6 + 3 bottleneck blocks (1 x 1, 3 x 3, 1 x 1 convolutions and a
  shortcut, batch normalisation folded into the convolutions as exported
  networks have it), global average pooling: the 2,048 pooled values are
  the feature; 224 x 224 input.

Each network runs in a fresh process with cv2.setNumThreads(1), as a build's
job does: annobench loads it (reading, converting, cutting to the layer,
OpenCV's import and one check image), then computes the feature of N photos
as the pipeline stores them (at most 240 pixels), recipe included. Printed:
load seconds, ms per image (mean, and the slowest), the process's peak memory
(ru_maxrss), the model file's size.
"""

from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from common import bsds_photos, peak_rss_mb  # noqa: E402

VGG_BLOCKS = [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]]
RESNET_STAGES = [(3, 64), (4, 128), (6, 256), (3, 512)]  # blocks, width (the output is 4 x width)
CAFFE_RECIPE = {"size": [224, 224], "resize": "shorter_side", "resize_to": 256, "interpolation": "linear",
                "channels": "BGR", "mean": [103.939, 116.779, 123.68], "scale": 1.0, "std": [1.0, 1.0, 1.0]}
TORCHVISION_RECIPE = {**CAFFE_RECIPE, "channels": "RGB", "mean": [123.675, 116.28, 103.53], "scale": 1 / 255,
                      "std": [0.229, 0.224, 0.225]}


class Weights:
    """He-initialised float32 weights from one seeded generator, named and kept in order."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.arrays: dict[str, np.ndarray] = {}

    def conv(self, name: str, out: int, inp: int, k: int) -> list[str]:
        scale = np.sqrt(2.0 / (inp * k * k))
        self.arrays[f"{name}_w"] = (self.rng.standard_normal((out, inp, k, k), np.float32) * scale).astype(np.float32)
        self.arrays[f"{name}_b"] = np.zeros(out, np.float32)
        return [f"{name}_w", f"{name}_b"]

    def fc(self, name: str, out: int, inp: int) -> list[str]:
        self.arrays[f"{name}_w"] = (self.rng.standard_normal((out, inp), np.float32)
                                    * np.float32(np.sqrt(2.0 / inp))).astype(np.float32)
        self.arrays[f"{name}_b"] = np.zeros(out, np.float32)
        return [f"{name}_w", f"{name}_b"]


def vgg16_nodes(weights: Weights) -> list:
    from onnx import helper

    nodes, previous, channels = [], "data", 3
    for block, widths in enumerate(VGG_BLOCKS, start=1):
        for k, width in enumerate(widths, start=1):
            name = f"conv{block}_{k}"
            nodes.append(helper.make_node("Conv", [previous, *weights.conv(name, width, channels, 3)], [name], name,
                                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
            nodes.append(helper.make_node("Relu", [name], [f"relu{block}_{k}"], f"relu{block}_{k}"))
            previous, channels = f"relu{block}_{k}", width
        nodes.append(helper.make_node("MaxPool", [previous], [f"pool{block}"], f"pool{block}", kernel_shape=[2, 2],
                                      strides=[2, 2]))
        previous = f"pool{block}"
    nodes.append(helper.make_node("Flatten", [previous], ["flat"], "flatten", axis=1))
    previous, inputs = "flat", 512 * 7 * 7
    for name, out in (("fc6", 4096), ("fc7", 4096), ("fc8", 1000)):
        nodes.append(helper.make_node("Gemm", [previous, *weights.fc(name, out, inputs)], [name], name, transB=1))
        relu = name.replace("fc", "relu")
        if name != "fc8":
            nodes.append(helper.make_node("Relu", [name], [relu], relu))
        previous, inputs = relu, out
    return nodes


def resnet50_nodes(weights: Weights) -> list:
    from onnx import helper

    def conv(name, source, out, inp, k, stride=1, relu=True):
        made = [helper.make_node("Conv", [source, *weights.conv(name, out, inp, k)], [name], name,
                                 kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride])]
        if relu:
            made.append(helper.make_node("Relu", [name], [f"{name}_relu"], f"{name}_relu"))
        return made, (f"{name}_relu" if relu else name)

    nodes, previous = conv("conv1", "data", 64, 3, 7, 2)
    nodes.append(helper.make_node("MaxPool", [previous], ["pool1"], "pool1", kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    previous, channels = "pool1", 64
    for stage, (blocks, width) in enumerate(RESNET_STAGES, start=2):
        for block in range(blocks):
            name, stride = f"res{stage}{chr(ord('a') + block)}", 2 if block == 0 and stage > 2 else 1
            a, out_a = conv(f"{name}_a", previous, width, channels, 1)
            b, out_b = conv(f"{name}_b", out_a, width, width, 3, stride)
            c, out_c = conv(f"{name}_c", out_b, 4 * width, width, 1, relu=False)
            nodes += a + b + c
            shortcut = previous
            if block == 0:
                projection, shortcut = conv(f"{name}_proj", previous, 4 * width, channels, 1, stride, relu=False)
                nodes += projection
            nodes.append(helper.make_node("Add", [out_c, shortcut], [f"{name}_sum"], f"{name}_sum"))
            nodes.append(helper.make_node("Relu", [f"{name}_sum"], [name], name))
            previous, channels = name, 4 * width
    nodes.append(helper.make_node("GlobalAveragePool", [previous], ["pool5"], "pool5"))
    nodes.append(helper.make_node("Flatten", ["pool5"], ["flat"], "flatten", axis=1))
    nodes.append(helper.make_node("Gemm", ["flat", *weights.fc("fc1000", 1000, 2048)], ["fc1000"], "fc1000",
                                  transB=1))
    return nodes


def write_onnx(path: Path, nodes: list, weights: Weights, output: str) -> None:
    import onnx
    from onnx import helper, numpy_helper

    graph = helper.make_graph(
        nodes, path.stem, [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info(output, onnx.TensorProto.FLOAT, [1, 1000])],
        [numpy_helper.from_array(array, name) for name, array in weights.arrays.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    path.write_bytes(model.SerializeToString())


def write_vgg16_caffe(folder: Path, weights: Weights) -> tuple[Path, Path]:
    """VGG16 as the Caffe model zoo's pair: the V1 deploy prototxt of 2014 (`input_dim`, `layers`
    with type enums) and the weights as a binary NetParameter (current form, BlobShape)."""
    from annobench.visual import protobuf as pb

    lines, previous = ['name: "VGG_ILSVRC_16_layers"', 'input: "data"'] + [f"input_dim: {d}" for d in (10, 3, 224, 224)], "data"
    layers = []  # (name, [blobs])
    for block, widths in enumerate(VGG_BLOCKS, start=1):
        for k, width in enumerate(widths, start=1):
            name = f"conv{block}_{k}"
            lines.append(f'layers {{ bottom: "{previous}" top: "{name}" name: "{name}" type: CONVOLUTION '
                         f"convolution_param {{ num_output: {width} pad: 1 kernel_size: 3 }} }}")
            lines.append(f'layers {{ bottom: "{name}" top: "{name}" name: "relu{block}_{k}" type: RELU }}')
            layers.append((name, [weights.arrays[f"{name}_w"], weights.arrays[f"{name}_b"]]))
            previous = name
        lines.append(f'layers {{ bottom: "{previous}" top: "pool{block}" name: "pool{block}" type: POOLING '
                     "pooling_param { pool: MAX kernel_size: 2 stride: 2 } }")
        previous = f"pool{block}"
    for name, out in (("fc6", 4096), ("fc7", 4096), ("fc8", 1000)):
        lines.append(f'layers {{ bottom: "{previous}" top: "{name}" name: "{name}" type: INNER_PRODUCT '
                     f"inner_product_param {{ num_output: {out} }} }}")
        if name != "fc8":
            relu, drop = name.replace("fc", "relu"), name.replace("fc", "drop")
            lines.append(f'layers {{ bottom: "{name}" top: "{name}" name: "{relu}" type: RELU }}')
            lines.append(f'layers {{ bottom: "{name}" top: "{name}" name: "{drop}" type: DROPOUT '
                         "dropout_param { dropout_ratio: 0.5 } }")
        layers.append((name, [weights.arrays[f"{name}_w"], weights.arrays[f"{name}_b"]]))
        previous = name
    lines.append('layers { bottom: "fc8" top: "prob" name: "prob" type: SOFTMAX }')
    deploy, model = folder / "VGG_ILSVRC_16_layers_deploy.prototxt", folder / "VGG_ILSVRC_16_layers.caffemodel"
    deploy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open(model, "wb") as handle:
        handle.write(pb.string_field(1, "VGG_ILSVRC_16_layers"))
        for name, blobs in layers:
            parts = [pb.string_field(1, name), pb.string_field(2, "Convolution" if name.startswith("conv")
                                                                 else "InnerProduct")]
            for blob in blobs:
                data = memoryview(np.ascontiguousarray(blob, "<f4")).cast("B")
                shape = pb.length_field(7, pb.packed_ints(1, blob.shape))
                parts += pb.nested(7, [shape, *pb.nested(5, [data])])
            size = sum(len(part) for part in parts)
            handle.write(pb.length_header(100, size))
            for part in parts:
                handle.write(part)
    return deploy, model


def measure(spec: dict, n_images: int) -> dict:
    """In a fresh process: load the network as a job does, then the feature of n real photos."""
    import cv2

    from annobench.images.resize import resize_area
    from annobench.visual.cnn import load_network

    cv2.setNumThreads(1)
    photos = [resize_area(cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB), 240) for p in bsds_photos()[:n_images]]
    started = time.perf_counter()
    network = load_network(spec["name"], spec["settings"])
    load = time.perf_counter() - started
    times = []
    for rgb in photos:
        started = time.perf_counter()
        vector = network(rgb)
        times.append(time.perf_counter() - started)
    return {"load_s": load, "ms_mean": 1000 * float(np.mean(times)), "ms_max": 1000 * max(times),
            "dimension": int(vector.size), "peak_mib": peak_rss_mb(), "images": len(photos)}


def networks(folder: Path) -> list[dict]:
    """Write the three networks into `folder`; their names and settings. Run in a process of its
    own: Linux carries a process's peak memory over into the programs it starts (exec keeps
    ru_maxrss), so the measuring processes must not be started by one that held the weights."""
    built = []
    weights = Weights(16)
    nodes = vgg16_nodes(weights)
    write_onnx(folder / "vgg16.onnx", nodes, weights, "fc8")
    deploy, model = write_vgg16_caffe(folder, weights)
    del weights, nodes
    built.append({"name": "vgg16_onnx", "settings": {"model": str(folder / "vgg16.onnx"), "prototxt": "",
                                                     "layer": "relu7", "input": TORCHVISION_RECIPE}})
    built.append({"name": "vgg16_caffe", "settings": {"model": str(model), "prototxt": str(deploy), "layer": "fc7",
                                                      "input": CAFFE_RECIPE}})
    weights = Weights(50)
    write_onnx(folder / "resnet50.onnx", resnet50_nodes(weights), weights, "fc1000")
    built.append({"name": "resnet50_onnx", "settings": {"model": str(folder / "resnet50.onnx"), "prototxt": "",
                                                        "layer": "pool5", "input": TORCHVISION_RECIPE}})
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=20, help="real photos each network computes (default 20)")
    parser.add_argument("--keep", default=None, help="write the networks here and keep them")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--build", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(json.loads(args.child), args.images)))
        return
    if args.build:
        print(json.dumps(networks(Path(args.build))))
        return
    from annobench.bench import machine_speed

    with tempfile.TemporaryDirectory(prefix="bench-cnn-") as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, __file__, "--build", str(folder)], capture_output=True, text=True,
                              check=True)
        specs = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"this process: peak {peak_rss_mb():.0f} MiB before measuring (each measuring process starts from it)")
        speed = machine_speed()
        print(f"machine: float32 product {speed['gemm_gflops']:.0f} GFLOP/s, 256x256 FFT forth and back "
              f"{speed['fft_ms']:.2f} ms (one core); load average {os.getloadavg()[0]:.1f}")
        print(f"{'network':14s} {'file MB':>8s} {'load s':>7s} {'ms/image':>9s} {'slowest':>8s} {'dim':>5s} "
              f"{'peak MiB':>9s}")
        for spec in specs:
            done = subprocess.run([sys.executable, __file__, "--images", str(args.images), "--child", json.dumps(spec)],
                                  capture_output=True, text=True, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            size = Path(spec["settings"]["model"]).stat().st_size / 1e6
            print(f"{spec['name']:14s} {size:8.0f} {result['load_s']:7.1f} {result['ms_mean']:9.0f} "
                  f"{result['ms_max']:8.0f} {result['dimension']:5d} {result['peak_mib']:9.0f}   "
                  f"({result['images']} BSDS500 photos, stored size, one thread)")


if __name__ == "__main__":
    main()
