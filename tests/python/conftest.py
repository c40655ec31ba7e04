"""pytest configuration for the fastpcam Python tests."""

from __future__ import annotations

import sys
from pathlib import Path

# the helper modules (_reference.py, _data.py) sit next to the tests
sys.path.insert(0, str(Path(__file__).resolve().parent))

try:  # a modest, deterministic hypothesis profile: the suite must stay quick on 2 cores
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "fastpcam",
        max_examples=25,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    # a longer, randomised run for local bug hunting: pytest --hypothesis-profile=fastpcam-thorough
    settings.register_profile(
        "fastpcam-thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("fastpcam")
except ImportError:  # pragma: no cover - hypothesis is a test extra
    pass
