from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
settings.load_profile("default")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
SHARED = REPO.parent / "shared" / "data"


@pytest.fixture
def shared() -> Path:
    """The reference data beside the repository; tests using it skip when it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED
