#!/usr/bin/env bash
# What the editor-client tests need, idempotently and cached (called by tools/setup.sh):
#   - node and npm from Debian, the VS Code extension's npm packages (editor-clients/vscode/node_modules)
#   - Debian's chromium and Playwright from PyPI (the browser view's tests drive the system chromium)
#   - Neovim 0.10 from Debian trixie, unpacked into a cache folder without installing it
#     (../shared/reference/neovim-0.10.md); `tests/editors/nvim.py` finds it there
# Skip it all with KDD_NO_EDITORS=1. Re-runs take a second: every step checks its own stamp first.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${KDD_NO_EDITORS:-0}" = 1 ] && exit 0

apt_install() {  # Debian packages, only when a command is missing; apt-get update once per run
  if [ "$(id -u)" != 0 ]; then
    echo "setup: $* missing and not root; install Debian's $*" >&2
    return 0
  fi
  if [ -z "${_APT_UPDATED:-}" ]; then
    apt-get update -q >/dev/null
    _APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
}

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || apt_install nodejs npm
command -v chromium >/dev/null 2>&1 || apt_install chromium

# npm packages of the extension (the lock's versions), reinstalled only when package.json or the lock changes.
VS=editor-clients/vscode
if [ ! -f $VS/node_modules/.kdd-installed ] || [ $VS/package.json -nt $VS/node_modules/.kdd-installed ] \
   || [ $VS/package-lock.json -nt $VS/node_modules/.kdd-installed ]; then
  (cd $VS && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  touch $VS/node_modules/.kdd-installed
fi

.venv/bin/python -c "import playwright" >/dev/null 2>&1 || .venv/bin/python -m pip install -q playwright

# Neovim 0.10 from Debian trixie, unpacked (not installed) into a cache shared by every clone.
NVIM_ROOT=${KDD_NVIM_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kdd/nvim-0.10}
if [ ! -x "$NVIM_ROOT/usr/bin/nvim" ]; then
  . tools/debian_unpack.sh
  unpack_debs trixie "$NVIM_ROOT" neovim neovim-runtime libluajit-5.1-2 libluajit-5.1-common libmsgpack-c2 \
    libtree-sitter0.22 libunibilium4 libuv1t64 libvterm0 lua-lpeg lua-luv libc6 libgcc-s1
fi
