"""ONNX models as bytes: cut one down to the tensor a feature reads, and write a new one.

The CNN feature hands OpenCV's DNN module an ONNX model whose only output is
the tensor it wants (a node's output, fc7 say). Asking OpenCV's `forward`
for an inner layer's output instead depends on the engine: OpenCV 5's new
engine reuses inner buffers and can return another layer's values, and
layer fusion may fold the next activation into the one asked for. A model
cut down to that tensor has one output and none of the layers after it, so
every engine computes the same thing, and the layers after it cost nothing.

The fields used (onnx/onnx.proto, IR version 3 and later):
ModelProto: ir_version 1, opset_import 8, graph 7 (the others are copied);
GraphProto: node 1, name 2, initializer 5, input 11, output 12,
value_info 13; NodeProto: input 1, output 2, name 3, op_type 4,
attribute 5; TensorProto: dims 1, data_type 2, name 8, raw_data 9;
ValueInfoProto: name 1, type 2; TypeProto.tensor_type 1 (elem_type 1,
shape 2: dim 1: dim_value 1, dim_param 2); AttributeProto: name 1, type 20,
f 2, i 3, ints 8, floats 7; OperatorSetIdProto: domain 1, version 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from annobench.visual import protobuf as pb

FLOAT, INT64 = 1, 7  # TensorProto.DataType
ATTR_FLOAT, ATTR_INT, ATTR_FLOATS, ATTR_INTS = 1, 2, 6, 7  # AttributeProto.AttributeType
IR_VERSION, OPSET = 7, 13  # what write_model declares: Softmax over one axis needs opset 13


@dataclass
class Node:
    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    raw: memoryview | bytes  # the NodeProto's bytes, copied as they are


@dataclass
class Graph:
    """A model's graph, its parts kept as the bytes they were read from."""

    header: list[tuple[int, int, object]]  # ModelProto's fields but the graph, in order
    name: str
    nodes: list[Node]
    initializers: dict[str, memoryview]  # name -> TensorProto bytes
    inputs: list[tuple[str, memoryview]]  # (name, ValueInfoProto bytes), initializers left out
    input_shapes: dict[str, list[int | None]] = field(default_factory=dict)  # static dims, None where symbolic
    outputs: list[str] = field(default_factory=list)

    def producers(self) -> dict[str, Node]:
        return {output: node for node in self.nodes for output in node.outputs if output}

    def tensor_names(self) -> list[str]:
        """Names a feature may name: node names and the tensors nodes write, in graph order."""
        return list(dict.fromkeys(n for node in self.nodes for n in (node.name, *node.outputs) if n))


def read_model(data: bytes | memoryview) -> Graph:
    """The graph of an ONNX model's bytes (ProtobufError if they are not one)."""
    header, graph_bytes = [], None
    for number, wire, value in pb.fields(data):
        if number == 7 and wire == pb.LENGTH:
            graph_bytes = value
        else:
            header.append((number, wire, value))
    if graph_bytes is None:
        raise pb.ProtobufError("no graph (ModelProto field 7): not an ONNX model")
    if not any(number == 1 for number, _, _ in header):
        raise pb.ProtobufError("no ir_version (ModelProto field 1): not an ONNX model")
    graph = by_fields(graph_bytes)
    nodes = []
    for _, raw in graph.get(1, []):
        node = pb.by_number(raw)
        nodes.append(Node(pb.text(node.get(3)), pb.text(node.get(4)), pb.texts(node.get(1)),
                          pb.texts(node.get(2)), raw))
    initializers = {pb.text(pb.by_number(raw).get(8)): raw for _, raw in graph.get(5, [])}
    inputs, shapes = [], {}
    for _, raw in graph.get(11, []):
        info = pb.by_number(raw)
        name = pb.text(info.get(1))
        if name not in initializers:
            inputs.append((name, raw))
            shapes[name] = _shape(info)
    outputs = [pb.text(pb.by_number(raw).get(1)) for _, raw in graph.get(12, [])]
    return Graph(header, pb.text(graph.get(2)), nodes, initializers, inputs, shapes, outputs)


def by_fields(data) -> dict[int, list]:
    found: dict[int, list] = {}
    for number, wire, value in pb.fields(data):
        if wire == pb.LENGTH:
            found.setdefault(number, []).append((wire, value))
    return found


def _shape(info: dict) -> list[int | None]:
    """The static dims of a ValueInfoProto's tensor type, None for a symbolic or missing dim."""
    type_proto = pb.by_number(info[2][-1][1]) if info.get(2) else {}
    tensor = pb.by_number(type_proto[1][-1][1]) if type_proto.get(1) else {}
    shape = pb.by_number(tensor[2][-1][1]) if tensor.get(2) else {}
    dims = []
    for _, raw in shape.get(1, []):
        dim = pb.by_number(raw)
        dims.append(pb.integer(dim.get(1)) if dim.get(1) else None)
    return dims


def needed_nodes(graph: Graph, target: str) -> list[Node]:
    """The nodes `target` depends on, in graph order."""
    producers = graph.producers()
    keep, todo = set(), [target]
    while todo:
        node = producers.get(todo.pop())
        if node is None or id(node) in keep:
            continue
        keep.add(id(node))
        todo += node.inputs
    return [node for node in graph.nodes if id(node) in keep]


def cut_to(graph: Graph, target: str) -> bytes:
    """The model's bytes with `target` (a tensor a node writes) as its only output, and only the
    nodes, initializers and inputs it needs (their bytes copied once, as they are)."""
    nodes = needed_nodes(graph, target)
    used = {name for node in nodes for name in node.inputs}
    chunks: list = []
    for node in nodes:
        chunks += pb.nested(1, [node.raw])
    chunks.append(pb.string_field(2, graph.name or "cut"))
    for name, raw in graph.initializers.items():
        if name in used:
            chunks += pb.nested(5, [raw])
    for name, raw in graph.inputs:
        if name in used:
            chunks += pb.nested(11, [raw])
    chunks.append(pb.length_field(12, value_info(target)))
    header = []
    for number, wire, value in graph.header:
        header.append(pb.key(number, wire))
        if wire == pb.VARINT:
            header.append(pb.varint(value))
        elif wire == pb.LENGTH:
            header += [pb.varint(len(value)), value]
        else:
            header.append(value)
    return b"".join(header + pb.nested(7, chunks))


# ---------------------------------------------------------------- writing a model


def value_info(name: str, shape: list[int] | None = None) -> bytes:
    """A float tensor's ValueInfoProto. Without `shape`, an empty TensorShapeProto: OpenCV's
    importer wants a shape on every graph output, and infers the real one itself."""
    dims = b"".join(pb.length_field(1, pb.int_field(1, d)) for d in shape or [])
    tensor = pb.int_field(1, FLOAT) + pb.length_field(2, dims)
    return pb.string_field(1, name) + pb.length_field(2, pb.length_field(1, tensor))


def tensor(name: str, values: np.ndarray) -> list:
    """A TensorProto's chunks: float32 (or int64) data as raw little-endian bytes, not copied
    when the array is already contiguous float32."""
    array = np.ascontiguousarray(values)
    data_type, dtype = (INT64, "<i8") if array.dtype.kind in "iu" else (FLOAT, "<f4")
    array = np.ascontiguousarray(array.astype(dtype, copy=False))
    head = pb.packed_ints(1, array.shape) + pb.int_field(2, data_type) + pb.string_field(8, name)
    return [head, *pb.nested(9, [memoryview(array).cast("B")])]


def attribute(name: str, value) -> bytes:
    """An AttributeProto of a float, an int, or a list of either."""
    head = pb.string_field(1, name)
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, np.integer)) for v in value):
            return head + pb.int_field(20, ATTR_INTS) + b"".join(pb.int_field(8, int(v)) for v in value)
        return head + pb.int_field(20, ATTR_FLOATS) + b"".join(pb.float_field(7, float(v)) for v in value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return head + pb.int_field(20, ATTR_INT) + pb.int_field(3, int(value))
    return head + pb.int_field(20, ATTR_FLOAT) + pb.float_field(2, float(value))


def node(op_type: str, inputs: list[str], outputs: list[str], name: str, **attributes) -> bytes:
    out = b"".join(pb.string_field(1, n) for n in inputs) + b"".join(pb.string_field(2, n) for n in outputs)
    out += pb.string_field(3, name) + pb.string_field(4, op_type)
    return out + b"".join(pb.length_field(5, attribute(k, v)) for k, v in attributes.items())


def write_model(nodes: list[bytes], initializers: list[list], inputs: list[bytes], outputs: list[bytes],
                name: str = "converted") -> bytes:
    """A model of these NodeProto, TensorProto (chunks, from `tensor`) and ValueInfoProto bytes."""
    chunks: list = []
    for proto in nodes:
        chunks += pb.nested(1, [proto])
    chunks.append(pb.string_field(2, name))
    for proto in initializers:
        chunks += pb.nested(5, proto)
    for proto in inputs:
        chunks += pb.nested(11, [proto])
    for proto in outputs:
        chunks += pb.nested(12, [proto])
    opset = pb.length_field(8, pb.string_field(1, "") + pb.int_field(2, OPSET))
    header = pb.int_field(1, IR_VERSION) + pb.string_field(2, "annobench") + opset
    return b"".join([header, *pb.nested(7, chunks)])
