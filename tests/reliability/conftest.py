"""Hypothesis profiles for the reliability tests.

The default keeps this folder under about three minutes on two cores. ``HYPOTHESIS_PROFILE=long``
runs every property many times longer (see TESTING.md), for a nightly or a pre-release run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "long", max_examples=2_000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
if os.environ.get("HYPOTHESIS_PROFILE") == "long":
    settings.load_profile("long")
