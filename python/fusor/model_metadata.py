"""get_modelmeta()'s fields, read from the ModelProto's top-level fields with a few lines of
protobuf wire-format decoding (fusor's engine keeps no metadata, and the package needs no onnx).
Initializer payloads are skipped over, never copied."""
import mmap
import os

# Absent fields read as ONNX Runtime gives them (an unset model_version is INT64_MAX).
# ModelProto: producer_name 2, domain 4, model_version 5, doc_string 6, graph 7, metadata_props 14.
# GraphProto: name 2, doc_string 10. StringStringEntryProto: key 1, value 2.


def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _fields(buf, start=0, end=None):
    """(field number, value) per field: ints for varints, memoryview slices for length-delimited."""
    pos, end = start, len(buf) if end is None else end
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = (pos, pos + size), pos + size
        elif wire == 1:
            value, pos = None, pos + 8
        elif wire == 5:
            value, pos = None, pos + 4
        else:
            return
        yield number, value


def _text(buf, span):
    return bytes(buf[span[0]:span[1]]).decode("utf-8", "replace")


def read_metadata(buf) -> dict:
    meta = {"producer_name": "", "graph_name": "", "domain": "", "description": "",
            "graph_description": "", "version": (1 << 63) - 1, "custom_metadata_map": {}}
    try:
        for number, value in _fields(buf):
            if number == 2:
                meta["producer_name"] = _text(buf, value)
            elif number == 4:
                meta["domain"] = _text(buf, value)
            elif number == 5:
                meta["version"] = value
            elif number == 6:
                meta["description"] = _text(buf, value)
            elif number == 7:
                for g_number, g_value in _fields(buf, *value):
                    if g_number == 2:
                        meta["graph_name"] = _text(buf, g_value)
                    elif g_number == 10:
                        meta["graph_description"] = _text(buf, g_value)
            elif number == 14:
                entry = dict(_fields(buf, *value))
                if 1 in entry:
                    meta["custom_metadata_map"][_text(buf, entry[1])] = _text(buf, entry[2]) if 2 in entry else ""
    except (IndexError, TypeError):
        pass  # the engine already loaded the model; a field it ignores cannot make this fail
    return meta


def read_metadata_file(path) -> dict:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return read_metadata(b"")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return read_metadata(m)
