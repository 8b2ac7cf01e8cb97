"""Suite-wide settings: servers started by tests (kdd lsp, kdd serve, kdd view, the editors' own) keep
their on-disk cache in a temporary folder, never in the user's ~/.cache/kdd."""
import os
import tempfile

os.environ.setdefault("KDD_CACHE_DIR", tempfile.mkdtemp(prefix="kdd-test-cache-"))

# The suite is a gate: the same commit must pass or fail the same way on every run, so property tests
# draw their examples from a fixed seed. KDD_HYPOTHESIS=explore draws fresh examples to hunt for bugs.
from hypothesis import settings  # noqa: E402

settings.register_profile("gate", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("KDD_HYPOTHESIS", "gate"))
