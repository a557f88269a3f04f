"""`inngest.fast_api.serve`, imported once with the SDK's import-time deprecation warning silenced.

inngest 0.5 declares one pydantic model with a class-based `Config`, and pydantic 2 warns about it when the
module is imported; under `filterwarnings = error` that import would fail. The warning is silenced for
this one import only. This module must never hide a warning raised at run time.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r".*class-based `config` is deprecated.*")
    from inngest.fast_api import serve

__all__ = ["serve"]
