"""Caffe networks (a `deploy.prototxt` and its `.caffemodel`) as ONNX models.

Caffe (Jia et al. 2014) describes a network in the text form of its
`NetParameter` message and stores the trained weights in the binary form of
the same message: each layer's `blobs`, matched to the definition's layers
by name (as Caffe's own `CopyTrainedLayersFrom` does). Both the current
form (`layer`, type strings) and the V1 form of the 2014-2015 model zoo
(`layers`, type enums: VGG's `VGG_ILSVRC_16_layers_deploy.prototxt`) are
read. OpenCV 5 has no Caffe reader, so the network is written as an ONNX
model (opset 13) that OpenCV reads; only the layers the asked-for output
needs are converted.

What a name means follows Caffe. A blob name (a `top`) is the blob as Caffe
holds it after the forward pass: VGG's `relu7` and `drop7` work in place on
blob `fc7`, so `fc7` is the seventh layer after its ReLU, what Caffe's
feature extraction (`extract_features`, `net.blobs['fc7']`) reads. A layer
name that is no blob name is that layer's own output.

Layers converted: Input, Convolution, InnerProduct, Pooling (MAX, AVE;
Caffe's rounding and clipping, see _pooling; global pooling), ReLU (and
its negative slope), Sigmoid, TanH, LRN across channels, Softmax, Concat,
Eltwise (sum with unit coefficients, product, max), BatchNorm and Scale,
Flatten, and Dropout and Split (identities at test time). Another type on
the way to the asked-for output is an error naming it.

caffe.proto field numbers used: NetParameter name 1, input 3, input_dim 4,
input_shape 8, layer 100, layers 2; LayerParameter name 1, blobs 7;
V1LayerParameter name 4, blobs 6; BlobProto num 1, channels 2, height 3,
width 4, data 5, shape 7, double_data 8; BlobShape dim 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from annobench.core.errors import AnnobenchError
from annobench.visual import onnx_model as onnx
from annobench.visual import protobuf as pb

# V1LayerParameter.LayerType -> the type string of the current form.
V1_TYPES = {
    "ABSVAL": "AbsVal", "ACCURACY": "Accuracy", "ARGMAX": "ArgMax", "BNLL": "BNLL", "CONCAT": "Concat",
    "CONTRASTIVE_LOSS": "ContrastiveLoss", "CONVOLUTION": "Convolution", "DATA": "Data",
    "DECONVOLUTION": "Deconvolution", "DROPOUT": "Dropout", "DUMMY_DATA": "DummyData",
    "EUCLIDEAN_LOSS": "EuclideanLoss", "ELTWISE": "Eltwise", "EXP": "Exp", "FLATTEN": "Flatten",
    "HDF5_DATA": "HDF5Data", "HDF5_OUTPUT": "HDF5Output", "HINGE_LOSS": "HingeLoss", "IM2COL": "Im2col",
    "IMAGE_DATA": "ImageData", "INFOGAIN_LOSS": "InfogainLoss", "INNER_PRODUCT": "InnerProduct", "LRN": "LRN",
    "MEMORY_DATA": "MemoryData", "MULTINOMIAL_LOGISTIC_LOSS": "MultinomialLogisticLoss", "MVN": "MVN",
    "POOLING": "Pooling", "POWER": "Power", "RELU": "ReLU", "SIGMOID": "Sigmoid",
    "SIGMOID_CROSS_ENTROPY_LOSS": "SigmoidCrossEntropyLoss", "SILENCE": "Silence", "SOFTMAX": "Softmax",
    "SOFTMAX_LOSS": "SoftmaxWithLoss", "SPLIT": "Split", "SLICE": "Slice", "TANH": "TanH",
    "WINDOW_DATA": "WindowData", "THRESHOLD": "Threshold",
}
IDENTITIES = ("Dropout", "Split")  # test-time identities: their tops are their bottom
DATA_LAYERS = ("Data", "ImageData", "MemoryData", "DummyData", "HDF5Data", "WindowData")


class CaffeError(AnnobenchError):
    """A Caffe network that cannot be read or converted (the message says which layer and why)."""


@dataclass
class Layer:
    name: str
    type: str
    bottoms: list[str]
    tops: list[str]
    params: pb.TextMessage
    inputs: list[str] = field(default_factory=list)  # the ONNX tensors it reads
    outputs: list[str] = field(default_factory=list)  # and writes


class CaffeNet:
    """A deploy.prototxt, read: its input, its layers, and the tensor each name stands for."""

    def __init__(self, text: str, what: str = "the prototxt"):
        self.what = what
        net = pb.parse_text(text, what)
        self.layers: list[Layer] = []
        self.input_name, self.input_shape = self._input(net)
        if net.all("layer") and net.all("layers"):
            raise CaffeError(f"{what}: has both `layer` and the older `layers`; Caffe reads one form")
        for entry in net.all("layer") or net.all("layers"):
            if not isinstance(entry, pb.TextMessage):
                raise CaffeError(f"{what}: a layer that is not a message")
            layer = self._layer(entry, v1=not net.all("layer"))
            if layer is not None:
                self.layers.append(layer)
        if self.input_name is None:
            raise CaffeError(f"{what}: no input (an `input:` with its dims, or an Input layer)")
        self._wire()

    def _input(self, net: pb.TextMessage) -> tuple[str | None, list[int] | None]:
        names = net.all("input")
        if not names:
            return None, None
        if len(names) > 1:
            raise CaffeError(f"{self.what}: {len(names)} inputs; a feature network takes one image")
        dims = [int(d) for d in net.all("input_dim")]
        if not dims and net.all("input_shape"):
            dims = [int(d) for d in net.last("input_shape").all("dim")]
        return str(names[0]), dims or None

    def _layer(self, entry: pb.TextMessage, v1: bool) -> Layer | None:
        name = str(entry.last("name", ""))
        kind = entry.last("type", "")
        kind = V1_TYPES.get(str(kind), str(kind)) if v1 else str(kind)
        if not _in_test_phase(entry):
            return None
        layer = Layer(name, kind, [str(b) for b in entry.all("bottom")], [str(t) for t in entry.all("top")], entry)
        if kind == "Input":
            if self.input_name is not None or len(layer.tops) != 1:
                raise CaffeError(f"{self.what}: layer {name}: a feature network takes one input blob")
            shape = entry.last("input_param", pb.TextMessage()).last("shape", pb.TextMessage())
            self.input_name, self.input_shape = layer.tops[0], [int(d) for d in shape.all("dim")] or None
            return None
        return layer

    def _wire(self) -> None:
        """Give every layer its ONNX input and output tensors, following Caffe's blobs in order."""
        self.blobs = {self.input_name: self.input_name}  # blob -> the tensor that holds it now
        self.ranks = {self.input_name: len(self.input_shape) if self.input_shape else 4}
        self.layer_outputs: dict[str, str] = {}
        taken = {self.input_name}
        for layer in self.layers:
            missing = [b for b in layer.bottoms if b not in self.blobs]
            if missing:
                raise CaffeError(f"{self.what}: layer {layer.name} reads blob {missing[0]}, which no layer "
                                 "before it writes")
            layer.inputs = [self.blobs[b] for b in layer.bottoms]
            if layer.type in IDENTITIES and layer.inputs:
                layer.outputs = [layer.inputs[0]] * len(layer.tops)
            else:
                layer.outputs = []
                for k, _ in enumerate(layer.tops):
                    tensor = layer.name if len(layer.tops) == 1 else f"{layer.name}#{k}"
                    while tensor in taken:
                        tensor += "'"
                    taken.add(tensor)
                    layer.outputs.append(tensor)
            for top, tensor in zip(layer.tops, layer.outputs):
                self.blobs[top] = tensor
                self.ranks.setdefault(tensor, _rank(layer, [self.ranks.get(t, 4) for t in layer.inputs]))
            if layer.outputs:
                self.layer_outputs.setdefault(layer.name, layer.outputs[0])

    def names(self) -> list[str]:
        """What a feature may name: the blobs, then the layers that are no blob."""
        return list(dict.fromkeys([*list(self.blobs)[1:], *self.layer_outputs]))

    def tensor_of(self, name: str) -> str | None:
        """The tensor a name stands for (module docstring), or None."""
        if name in self.blobs and name != self.input_name:
            return self.blobs[name]
        return self.layer_outputs.get(name)

    def to_onnx(self, target: str, weights: dict[str, list[np.ndarray]], weights_what: str) -> bytes:
        """An ONNX model computing tensor `target` (see tensor_of) from the input, with `weights` (read_weights)."""
        producer = {tensor: layer for layer in self.layers for tensor in layer.outputs
                    if layer.type not in IDENTITIES}
        needed, todo = [], [target]
        while todo:
            layer = producer.get(todo.pop())
            if layer is not None and all(layer is not seen for seen in needed):
                needed.append(layer)
                todo += layer.inputs
        order = [layer for layer in self.layers if any(layer is n for n in needed)]
        nodes, initializers = [], []
        for layer in order:
            blobs = weights.get(layer.name, [])
            try:
                made_nodes, made_tensors = _convert(layer, blobs, self.ranks.get(layer.inputs[0], 4)
                                                    if layer.inputs else 4, weights_what)
            except CaffeError as error:
                raise CaffeError(f"layer {layer.name} ({layer.type}): {error}") from None
            except (ValueError, IndexError) as error:
                raise CaffeError(f"layer {layer.name} ({layer.type}): its weights in {weights_what} do not fit "
                                 f"its definition ({error})") from None
            nodes += made_nodes
            initializers += made_tensors
        shape = [1, *self.input_shape[1:]] if self.input_shape else None
        return onnx.write_model(nodes, initializers, [onnx.value_info(self.input_name, shape)],
                                [onnx.value_info(target)])


def _in_test_phase(entry: pb.TextMessage) -> bool:
    """Whether a layer runs at test time (NetStateRule phase TEST = 1): Caffe's include/exclude rules."""
    def phase(rule) -> str:
        return str(rule.last("phase", "")) if isinstance(rule, pb.TextMessage) else ""

    include, exclude = entry.all("include"), entry.all("exclude")
    if include and not any(phase(rule) in ("", "TEST", "1") for rule in include):
        return False
    return not any(phase(rule) in ("TEST", "1") for rule in exclude)


def _rank(layer: Layer, ranks: list[int]) -> int:
    if layer.type == "InnerProduct":
        return 2
    if layer.type == "Flatten":
        return _param(layer, "flatten_param", "axis", 1) + 1
    return ranks[0] if ranks else 4


def _param(layer: Layer, section: str, name: str, default):
    values = layer.params.last(section, pb.TextMessage()).all(name)
    return values[-1] if values else default


def _pair(layer: Layer, section: str, name: str, default: int) -> tuple[int, int]:
    """A 2-D size of a convolution or pooling: `name` (one value or h, w) or `name_h` / `name_w`."""
    params = layer.params.last(section, pb.TextMessage())
    given = [int(v) for v in params.all(name)]
    if params.all(f"{name}_h") or params.all(f"{name}_w"):
        return int(params.last(f"{name}_h", default)), int(params.last(f"{name}_w", default))
    if len(given) > 2:
        raise CaffeError(f"{name} has {len(given)} values; only 2-D networks are converted")
    if not given:
        return default, default
    return (given[0], given[0]) if len(given) == 1 else (given[0], given[1])


def _true(value) -> bool:
    return str(value).lower() in ("true", "1")


def _convert(layer: Layer, blobs: list[np.ndarray], rank: int,
             weights_what: str = "the weights") -> tuple[list[bytes], list[list]]:
    """The ONNX nodes and initializers of one layer."""
    kind, name, inputs, outputs = layer.type, layer.name, layer.inputs, layer.outputs

    def weight(k: int, shape: tuple[int, ...]) -> list:
        if k >= len(blobs):
            raise CaffeError(f"needs weight blob {k + 1}, {weights_what} has {len(blobs)} for a layer of that name")
        tensor = f"{name}/w{k}"
        initializers.append(onnx.tensor(tensor, blobs[k].reshape(shape)))
        return [tensor]

    initializers: list[list] = []
    if kind in DATA_LAYERS:
        raise CaffeError("a data layer; the network should be a deploy prototxt with an input")
    if kind == "Convolution":
        out = int(_param(layer, "convolution_param", "num_output", 0))
        kh, kw = _pair(layer, "convolution_param", "kernel", 0) if _has(layer, "convolution_param", "kernel_h") \
            else _pair(layer, "convolution_param", "kernel_size", 0)
        group = int(_param(layer, "convolution_param", "group", 1))
        if int(_param(layer, "convolution_param", "axis", 1)) != 1 or not out or not kh:
            raise CaffeError("needs num_output, kernel_size and the channel axis 1")
        channels = blobs[0].size // (out * kh * kw) if blobs else 0
        args = inputs + weight(0, (out, channels, kh, kw))
        if _true(_param(layer, "convolution_param", "bias_term", "true")):
            args += weight(1, (out,))
        ph, pw = _pair(layer, "convolution_param", "pad", 0)
        sh, sw = _pair(layer, "convolution_param", "stride", 1)
        dh, dw = _pair(layer, "convolution_param", "dilation", 1)
        return [onnx.node("Conv", args, outputs, name, kernel_shape=[kh, kw], pads=[ph, pw, ph, pw],
                          strides=[sh, sw], dilations=[dh, dw], group=group)], initializers
    if kind == "InnerProduct":
        out = int(_param(layer, "inner_product_param", "num_output", 0))
        if int(_param(layer, "inner_product_param", "axis", 1)) != 1 or not out:
            raise CaffeError("needs num_output, on axis 1")
        transpose = _true(_param(layer, "inner_product_param", "transpose", "false"))
        inner = blobs[0].size // out if blobs else 0
        shape = (inner, out) if transpose else (out, inner)
        args = [f"{name}/flat"] + weight(0, shape)
        if _true(_param(layer, "inner_product_param", "bias_term", "true")):
            args += weight(1, (out,))
        nodes = [onnx.node("Flatten", inputs, [f"{name}/flat"], f"{name}/flatten", axis=1),
                 onnx.node("Gemm", args, outputs, name, transB=0 if transpose else 1)]
        return nodes, initializers
    if kind == "Pooling":
        return _pooling(layer)
    if kind == "ReLU":
        slope = float(_param(layer, "relu_param", "negative_slope", 0.0))
        if slope:
            return [onnx.node("LeakyRelu", inputs, outputs, name, alpha=slope)], initializers
        return [onnx.node("Relu", inputs, outputs, name)], initializers
    if kind in ("Sigmoid", "TanH"):
        return [onnx.node("Sigmoid" if kind == "Sigmoid" else "Tanh", inputs, outputs, name)], initializers
    if kind == "LRN":
        if str(_param(layer, "lrn_param", "norm_region", "ACROSS_CHANNELS")) not in ("ACROSS_CHANNELS", "0"):
            raise CaffeError("only LRN across channels converts to ONNX")
        return [onnx.node("LRN", inputs, outputs, name, size=int(_param(layer, "lrn_param", "local_size", 5)),
                          alpha=float(_param(layer, "lrn_param", "alpha", 1.0)),
                          beta=float(_param(layer, "lrn_param", "beta", 0.75)),
                          bias=float(_param(layer, "lrn_param", "k", 1.0)))], initializers
    if kind == "Softmax":
        return [onnx.node("Softmax", inputs, outputs, name,
                          axis=int(_param(layer, "softmax_param", "axis", 1)))], initializers
    if kind == "Concat":
        params = layer.params.last("concat_param", pb.TextMessage())
        axis = int(params.last("axis", params.last("concat_dim", 1)))
        return [onnx.node("Concat", inputs, outputs, name, axis=axis)], initializers
    if kind == "Eltwise":
        operation = str(_param(layer, "eltwise_param", "operation", "SUM"))
        coefficients = layer.params.last("eltwise_param", pb.TextMessage()).all("coeff")
        if operation in ("SUM", "1") and all(float(c) == 1.0 for c in coefficients):
            return [onnx.node("Sum", inputs, outputs, name)], initializers
        if operation in ("PROD", "0", "MAX", "2"):
            return [onnx.node("Mul" if operation in ("PROD", "0") else "Max", inputs, outputs, name)], initializers
        raise CaffeError("only SUM with unit coefficients, PROD and MAX convert")
    if kind == "BatchNorm":
        if len(blobs) < 3:
            raise CaffeError("needs its mean, variance and scale factor blobs")
        factor = float(blobs[2].reshape(-1)[0]) if blobs[2].size else 1.0
        factor = 1.0 / factor if factor else 0.0
        channels = blobs[0].size
        initializers += [onnx.tensor(f"{name}/scale", np.ones(channels, np.float32)),
                         onnx.tensor(f"{name}/bias", np.zeros(channels, np.float32)),
                         onnx.tensor(f"{name}/mean", blobs[0].reshape(-1) * np.float32(factor)),
                         onnx.tensor(f"{name}/var", blobs[1].reshape(-1) * np.float32(factor))]
        eps = float(_param(layer, "batch_norm_param", "eps", 1e-5))
        return [onnx.node("BatchNormalization", inputs + [f"{name}/{t}" for t in ("scale", "bias", "mean", "var")],
                          outputs, name, epsilon=eps)], initializers
    if kind == "Scale":
        if len(inputs) != 1 or int(_param(layer, "scale_param", "axis", 1)) != 1:
            raise CaffeError("only a learned scale on the channel axis converts")
        channels = blobs[0].size if blobs else 0
        shape = (channels,) + (1,) * (rank - 2)
        has_bias = _true(_param(layer, "scale_param", "bias_term", "false"))
        scaled = f"{name}/scaled" if has_bias else outputs[0]
        nodes = [onnx.node("Mul", inputs + weight(0, shape), [scaled], name)]
        if has_bias:
            nodes.append(onnx.node("Add", [scaled] + weight(1, shape), outputs, f"{name}/bias"))
        return nodes, initializers
    if kind == "Flatten":
        if int(_param(layer, "flatten_param", "end_axis", -1)) != -1:
            raise CaffeError("only flattening to the last axis converts")
        return [onnx.node("Flatten", inputs, outputs, name,
                          axis=int(_param(layer, "flatten_param", "axis", 1)))], initializers
    raise CaffeError("this layer type is not converted (see annobench.visual.caffe for those that are)")


def _has(layer: Layer, section: str, name: str) -> bool:
    return bool(layer.params.last(section, pb.TextMessage()).all(name))


def _pooling(layer: Layer) -> tuple[list[bytes], list[list]]:
    """Caffe's pooling: output size ceil((H + 2 pad - kernel) / stride) + 1 (or floor with
    round_mode FLOOR), the last window clipped to the image; an average divides by the window's
    cells within the padded image. A padded average pools the explicitly zero-padded input
    without counting past it (ONNX's count_include_pad does not say how a clipped window
    counts, and OpenCV and onnxruntime differ); Caffe's dropping of a window that would start in
    the padding (possible only when pad > kernel - stride) has no ONNX form and is refused."""
    method = str(_param(layer, "pooling_param", "pool", "MAX"))
    if method not in ("MAX", "0", "AVE", "1"):
        raise CaffeError(f"pooling {method} does not convert (MAX and AVE do)")
    average = method in ("AVE", "1")
    if _true(_param(layer, "pooling_param", "global_pooling", "false")):
        return [onnx.node("GlobalAveragePool" if average else "GlobalMaxPool", layer.inputs, layer.outputs,
                          layer.name)], []
    kh, kw = _pair(layer, "pooling_param", "kernel", 0) if _has(layer, "pooling_param", "kernel_h") \
        else _pair(layer, "pooling_param", "kernel_size", 0)
    if not kh:
        raise CaffeError("needs kernel_size (or global_pooling)")
    ph, pw = _pair(layer, "pooling_param", "pad", 0)
    sh, sw = _pair(layer, "pooling_param", "stride", 1)
    if ph > kh - sh or pw > kw - sw:
        raise CaffeError(f"pad {ph} x {pw} is larger than kernel - stride; Caffe's output size then has no ONNX form")
    ceil = int(str(_param(layer, "pooling_param", "round_mode", "CEIL")) in ("CEIL", "0"))
    window = {"kernel_shape": [kh, kw], "strides": [sh, sw], "ceil_mode": ceil}
    if not average:
        return [onnx.node("MaxPool", layer.inputs, layer.outputs, layer.name, pads=[ph, pw, ph, pw], **window)], []
    if not (ph or pw):
        return [onnx.node("AveragePool", layer.inputs, layer.outputs, layer.name, count_include_pad=0, **window)], []
    pads = f"{layer.name}/pads"
    return ([onnx.node("Pad", [layer.inputs[0], pads], [f"{layer.name}/padded"], f"{layer.name}/pad"),
             onnx.node("AveragePool", [f"{layer.name}/padded"], layer.outputs, layer.name, count_include_pad=0,
                       **window)],
            [onnx.tensor(pads, np.array([0, 0, ph, pw, 0, 0, ph, pw], np.int64))])


# ---------------------------------------------------------------- the weights


def read_weights(data: bytes | memoryview) -> dict[str, list[np.ndarray]]:
    """Layer name -> its blobs, from a .caffemodel (binary NetParameter, either form)."""
    found: dict[str, list[np.ndarray]] = {}
    layers = 0
    for number, wire, value in pb.fields(data):
        if wire != pb.LENGTH or number not in (2, 100):
            continue
        layers += 1
        entry = pb.by_number(value)
        name_field, blob_field = (1, 7) if number == 100 else (4, 6)
        if number == 2 and entry.get(1) and not entry.get(4):
            raise CaffeError("the weights are in Caffe's V0 form (before 2014): upgrade them with Caffe's "
                             "upgrade_net_proto_binary")
        blobs = [_blob(raw) for _, raw in entry.get(blob_field, [])]
        if blobs:
            found[pb.text(entry.get(name_field))] = blobs
    if not layers:
        raise CaffeError("no layers (NetParameter fields 100 or 2): not a Caffe model")
    return found


def _blob(raw: memoryview) -> np.ndarray:
    blob = pb.by_number(raw)
    data = pb.floats(blob.get(5)) if blob.get(5) else pb.doubles(blob.get(8)).astype(np.float32)
    if blob.get(7):
        shape = pb.integers(pb.by_number(blob[7][-1][1]).get(1))
    else:
        shape = [pb.integer(blob.get(k), 1) for k in (1, 2, 3, 4)]
        shape = [d for d in shape if d != 1] or [1]
    if int(np.prod(shape)) != data.size:
        raise CaffeError(f"a weight blob declares shape {shape} but holds {data.size} values")
    return data
