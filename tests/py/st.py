"""safetensors.torch's load_file / save_file for the tests: the real ones where Debian packages them
(python3-safetensors, Debian 13), else a minimal reader/writer of the same format (Debian 12 has no
python3-safetensors): an 8-byte little-endian header size, a JSON header {name: {dtype, shape,
data_offsets}}, then the raw little-endian data. REAL says which one this is.
"""
import json
import struct

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}


def load_file(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(body[begin:end]), dtype=DTYPES[info["dtype"]]) if end > begin \
            else torch.empty(0, dtype=DTYPES[info["dtype"]])
        out[name] = t.reshape(info["shape"]).clone()
    return out


def save_file(tensors, path):
    names = {v: k for k, v in DTYPES.items()}
    header, chunks, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""  # 0-d too
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


try:
    from safetensors.torch import load_file, save_file  # noqa: F401,F811  (the real ones win)

    REAL = True
except ImportError:
    REAL = False
