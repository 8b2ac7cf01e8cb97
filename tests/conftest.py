"""Suite-wide settings: servers started by tests (kdd lsp, kdd serve, kdd view, the editors' own) keep
their on-disk cache in a temporary folder, never in the user's ~/.cache/kdd."""
import os
import tempfile

os.environ.setdefault("KDD_CACHE_DIR", tempfile.mkdtemp(prefix="kdd-test-cache-"))
