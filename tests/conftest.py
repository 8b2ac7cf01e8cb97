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
# `make test-fast` (KDD_HYPOTHESIS=fast): the development tier. Every test not marked `slow` runs, and each
# property test draws at most FAST_EXAMPLES examples (a bounded slice of what `make test` draws; a test's own
# @settings(max_examples=...) is capped too, so its other settings stay). Hypothesis reads a test's settings
# when the test is called, from the attribute @settings sets: replacing it here caps the draw.
FAST_EXAMPLES = 10
settings.register_profile("fast", derandomize=True, max_examples=FAST_EXAMPLES)
settings.load_profile(os.environ.get("KDD_HYPOTHESIS", "gate"))


def pytest_collection_modifyitems(config, items):
    if os.environ.get("KDD_HYPOTHESIS") != "fast":
        return
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if current is not None and current.max_examples > FAST_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(current, max_examples=FAST_EXAMPLES)
