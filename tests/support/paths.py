"""Where the tests find the repository, its fixtures and the shared reference data."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
SHARED = REPO.parent / "shared" / "data"
