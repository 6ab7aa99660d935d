"""Raw protobuf fields for the generators that write torch's dynamo
metadata (make_folded_models.py, make_setting_models.py): onnx 1.12's IR 8
schema names none of the metadata_props fields torch 2.x writes on graphs,
nodes and value_info, so they are appended to a message's bytes; and the
model those generators save around such a graph."""
from onnx import helper


def varint(n):
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def entry(key, value):
    """A StringStringEntryProto's bytes."""
    return field(1, key.encode()) + field(2, value.encode())


def with_fields(msg, number, pairs):
    """A copy of msg with metadata entries (key, value) appended as field number."""
    extra = b"".join(field(number, entry(k, v)) for k, v in pairs)
    out = type(msg)()
    out.ParseFromString(msg.SerializeToString() + extra)
    return out


def save_torch_model(graph, path, opset):
    """graph as torch 2.15's exporter labels its model (producer pytorch,
    IR 8, ai.onnx opset), written to path."""
    model = helper.make_model(graph, producer_name="pytorch", producer_version="2.15.0",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
