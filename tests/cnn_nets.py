"""Small convolutional networks with seeded weights, written as ONNX (onnx.helper) and as Caffe
(a deploy.prototxt and a .caffemodel written with Google's protobuf runtime from a hand-made
descriptor of the caffe.proto messages they use): the same network and weights in both forms.

The network: conv1 (3 -> 8, 3 x 3, pad 1) -> relu1 -> pool1 (max 3 x 3, stride 2, Caffe's
ceiling rounding) -> conv2 (8 -> 16, 3 x 3, pad 1, 2 groups) -> relu2 -> pool2 (average 3 x 3,
stride 2, its last window clipped at the border and divided by the cells it covers, as Caffe does) -> fc7 (inner product -> 64) -> relu7 -> fc8 (-> 10) -> prob (softmax). The ONNX
model names each node's output as the node (conv1, relu1, ..., fc7, relu7, fc8, prob).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SIDE = 48  # the network's input: 3 x SIDE x SIDE
FC7 = 64


def pooled(side: int, kernel: int, stride: int) -> int:
    """Caffe's pooled size without padding: ceil((side - kernel) / stride) + 1."""
    return -(-(side - kernel) // stride) + 1


def weights(seed: int = 7, side: int = SIDE) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    after = pooled(pooled(side, 3, 2), 3, 2)

    def normal(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {"conv1_w": normal(8, 3, 3, 3, scale=0.02), "conv1_b": normal(8, scale=0.1),
            "conv2_w": normal(16, 4, 3, 3, scale=0.1), "conv2_b": normal(16, scale=0.1),
            "fc7_w": normal(FC7, 16 * after * after, scale=0.05), "fc7_b": normal(FC7, scale=0.1),
            "fc8_w": normal(10, FC7, scale=0.2), "fc8_b": normal(10, scale=0.1)}


def onnx_model(path: Path, w: dict[str, np.ndarray], side: int = SIDE, symbolic: bool = False) -> Path:
    """The network as ONNX (opset 13); `symbolic`: batch, height and width left unnamed in the input."""
    import onnx
    from onnx import helper, numpy_helper

    nodes = [
        helper.make_node("Conv", ["data", "conv1_w", "conv1_b"], ["conv1"], "conv1", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], "relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], "pool1", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        helper.make_node("Conv", ["pool1", "conv2_w", "conv2_b"], ["conv2"], "conv2", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], group=2),
        helper.make_node("Relu", ["conv2"], ["relu2"], "relu2"),
        helper.make_node("AveragePool", ["relu2"], ["pool2"], "pool2", kernel_shape=[3, 3], strides=[2, 2],
                         ceil_mode=1, count_include_pad=0),
        helper.make_node("Flatten", ["pool2"], ["flat"], "flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc7_w", "fc7_b"], ["fc7"], "fc7", transB=1),
        helper.make_node("Relu", ["fc7"], ["relu7"], "relu7"),
        helper.make_node("Gemm", ["relu7", "fc8_w", "fc8_b"], ["fc8"], "fc8", transB=1),
        helper.make_node("Softmax", ["fc8"], ["prob"], "prob", axis=1),
    ]
    dims = ["batch", 3, "height", "width"] if symbolic else [1, 3, side, side]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("prob", onnx.TensorProto.FLOAT, [1, 10])],
                              [numpy_helper.from_array(array, name) for name, array in w.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return path


def onnx_cut(model: Path, output: str, path: Path) -> Path:
    """The ONNX model cut to one tensor by onnx's own extractor (the reference's model)."""
    from onnx import utils

    utils.extract_model(str(model), str(path), ["data"], [output])
    return path


# ---------------------------------------------------------------- Caffe

LAYERS = [  # name, type (current form), V1 type, bottom, top, parameters (text form)
    ("conv1", "Convolution", "CONVOLUTION", "data", "conv1", "convolution_param { num_output: 8 pad: 1 kernel_size: 3 }"),
    ("relu1", "ReLU", "RELU", "conv1", "conv1", ""),
    ("pool1", "Pooling", "POOLING", "conv1", "pool1", "pooling_param { pool: MAX kernel_size: 3 stride: 2 }"),
    ("conv2", "Convolution", "CONVOLUTION", "pool1", "conv2",
     "convolution_param { num_output: 16 pad: 1 kernel_size: 3 group: 2 }"),
    ("relu2", "ReLU", "RELU", "conv2", "conv2", ""),
    ("pool2", "Pooling", "POOLING", "conv2", "pool2", "pooling_param { pool: AVE kernel_size: 3 stride: 2 }"),
    ("fc7", "InnerProduct", "INNER_PRODUCT", "pool2", "fc7", f"inner_product_param {{ num_output: {FC7} }}"),
    ("relu7", "ReLU", "RELU", "fc7", "fc7", ""),
    ("drop7", "Dropout", "DROPOUT", "fc7", "fc7", "dropout_param { dropout_ratio: 0.5 }"),
    ("fc8", "InnerProduct", "INNER_PRODUCT", "fc7", "fc8", "inner_product_param { num_output: 10 }"),
    ("prob", "Softmax", "SOFTMAX", "fc8", "prob", ""),
]
V1_ENUM = {"CONVOLUTION": 4, "RELU": 18, "POOLING": 17, "INNER_PRODUCT": 14, "DROPOUT": 6, "SOFTMAX": 20}


def prototxt(v1: bool = False, side: int = SIDE) -> str:
    """The deploy.prototxt: the current form with an Input layer, or the V1 form of the 2014 model zoo
    (VGG's: `input:` and four `input_dim`, `layers` with type enums)."""
    if v1:
        lines = ['name: "small"', 'input: "data"'] + [f"input_dim: {d}" for d in (10, 3, side, side)]
        for name, _, kind, bottom, top, params in LAYERS:
            lines.append(f'layers {{ bottom: "{bottom}" top: "{top}" name: "{name}" type: {kind} {params} }}')
    else:
        lines = ['name: "small"',
                 f'layer {{ name: "data" type: "Input" top: "data" input_param {{ shape {{ dim: 1 dim: 3 '
                 f'dim: {side} dim: {side} }} }} }}']
        for name, kind, _, bottom, top, params in LAYERS:
            lines.append(f'layer {{\n  name: "{name}"\n  type: "{kind}"\n  bottom: "{bottom}"\n  top: "{top}"\n'
                         f'  {params}\n}}')
    return "\n".join(lines) + "\n"


def caffe_messages():
    """NetParameter, LayerParameter, V1LayerParameter and BlobProto as protobuf classes built from a
    descriptor of those fields of caffe.proto (a V1 type is written as its enum's number)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="caffe_subset.proto", package="caffe", syntax="proto2")

    def message(name, *fields):
        proto = file.message_type.add(name=name)
        for field_name, number, kind, label, type_name, packed in fields:
            entry = proto.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                entry.type_name = f".caffe.{type_name}"
            if packed:
                entry.options.packed = True

    optional, repeated = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message("BlobShape", ("dim", 1, F.TYPE_INT64, repeated, None, True))
    message("BlobProto", ("shape", 7, F.TYPE_MESSAGE, optional, "BlobShape", False),
            ("data", 5, F.TYPE_FLOAT, repeated, None, True), ("num", 1, F.TYPE_INT64, optional, None, False),
            ("channels", 2, F.TYPE_INT64, optional, None, False), ("height", 3, F.TYPE_INT64, optional, None, False),
            ("width", 4, F.TYPE_INT64, optional, None, False))
    message("LayerParameter", ("name", 1, F.TYPE_STRING, optional, None, False),
            ("type", 2, F.TYPE_STRING, optional, None, False), ("bottom", 3, F.TYPE_STRING, repeated, None, False),
            ("top", 4, F.TYPE_STRING, repeated, None, False),
            ("blobs", 7, F.TYPE_MESSAGE, repeated, "BlobProto", False))
    message("V1LayerParameter", ("bottom", 2, F.TYPE_STRING, repeated, None, False),
            ("top", 3, F.TYPE_STRING, repeated, None, False), ("name", 4, F.TYPE_STRING, optional, None, False),
            ("type", 5, F.TYPE_INT32, optional, None, False),
            ("blobs", 6, F.TYPE_MESSAGE, repeated, "BlobProto", False))
    message("NetParameter", ("name", 1, F.TYPE_STRING, optional, None, False),
            ("layers", 2, F.TYPE_MESSAGE, repeated, "V1LayerParameter", False),
            ("layer", 100, F.TYPE_MESSAGE, repeated, "LayerParameter", False))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"caffe.{name}"))
            for name in ("NetParameter", "BlobProto")}


def caffemodel(w: dict[str, np.ndarray], v1: bool = False) -> bytes:
    """The trained weights: every layer of the prototxt, blobs on those with weights (the current
    form with BlobShape, the V1 form with the legacy num/channels/height/width)."""
    classes = caffe_messages()
    net = classes["NetParameter"](name="small")
    for name, kind, v1_kind, bottom, top, _ in LAYERS:
        layer = net.layers.add() if v1 else net.layer.add()
        layer.name, layer.type = name, V1_ENUM[v1_kind] if v1 else kind
        layer.bottom.append(bottom)
        layer.top.append(top)
        for array in (w[f"{name}_w"], w[f"{name}_b"]) if f"{name}_w" in w else ():
            blob = layer.blobs.add()
            if v1:
                dims = (1,) * (4 - array.ndim) + array.shape
                blob.num, blob.channels, blob.height, blob.width = dims
            else:
                blob.shape.dim.extend(array.shape)
            blob.data.extend(array.reshape(-1).tolist())
    return net.SerializeToString()


def caffe_files(folder: Path, w: dict[str, np.ndarray], v1: bool = False, side: int = SIDE) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    deploy, model = folder / "deploy.prototxt", folder / "small.caffemodel"
    deploy.write_text(prototxt(v1, side), encoding="utf-8")
    model.write_bytes(caffemodel(w, v1))
    return deploy, model


# ---------------------------------------------------------------- the recipe, computed apart

def reference_input(rgb: np.ndarray, recipe: dict) -> np.ndarray:
    """The recipe on one image, written again from its description (docs/tables.md, cnn_NAME)."""
    import cv2

    h, w = rgb.shape[:2]
    target = recipe["resize_to"]
    if recipe["resize"] == "warp":
        size = (target, target)
    else:
        short, long = min(h, w), max(h, w)
        long = int(target * long / short)
        size = (target, long) if w <= h else (long, target)
    resized = cv2.resize(rgb, size, interpolation={"linear": cv2.INTER_LINEAR, "area": cv2.INTER_AREA,
                                                   "cubic": cv2.INTER_CUBIC}[recipe["interpolation"]])
    cw, ch = recipe["size"]
    y, x = (resized.shape[0] - ch) // 2, (resized.shape[1] - cw) // 2
    crop = resized[y:y + ch, x:x + cw].astype(np.float32)
    if recipe["channels"] == "BGR":
        crop = crop[..., [2, 1, 0]]
    blob = (crop - np.float32(recipe["mean"])) * np.float32(recipe["scale"]) / np.float32(recipe["std"])
    return blob.transpose(2, 0, 1)[None].astype(np.float32)
