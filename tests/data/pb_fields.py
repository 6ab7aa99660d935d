"""Raw protobuf fields for the generators that write torch's dynamo
metadata (make_folded_models.py, make_setting_models.py): onnx 1.12's IR 8
schema names none of the metadata_props fields torch 2.x writes on graphs,
nodes and value_info, so they are appended to a message's bytes."""


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
