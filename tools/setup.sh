#!/usr/bin/env bash
# Sets up everything kdd needs on a fresh Debian machine, idempotently:
#   - Debian's libigc-tools (iga64, the Intel assembler the Xe targets are checked with)
#   - iga64 of Debian sid's libigc2-tools (IGC 2.x, the first that knows Xe2), unpacked into a cache shared by
#     every clone and run as .venv/bin/iga64-xe2 through its own loader (the xe2 target's assembler)
#   - a virtual environment in .venv/ with kdd installed editable, its server, test, sweep (Ray, Optuna) and
#     tool extras (ptxas/nvdisasm come from the PyPI wheels nvidia-cuda-nvcc/-nvdisasm)
#   - what the editor clients' tests need (tools/setup_editors.sh; KDD_NO_EDITORS=1 skips it)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v iga64 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libigc-tools >/dev/null
  else
    echo "setup: iga64 missing and not root; install Debian's libigc-tools" >&2
  fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
if ! .venv/bin/python -c "import kdd.core, pytest, xdist, hypothesis, pygls, ray, optuna" >/dev/null 2>&1 \
   || [ pyproject.toml -nt .venv/.kdd-installed ] || [ setup.py -nt .venv/.kdd-installed ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e '.[server,test,tools,sweep]'
  touch .venv/.kdd-installed
fi
.venv/bin/python -c "import kdd.core, kdd.server" 

# The xe2 target's assembler: bookworm's iga64 (IGC 1.0.12504) stops at Xe-HPC; sid's libigc2-tools has -p=2.
IGA_XE2_ROOT=${KDD_IGA_XE2_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/kdd/iga-xe2}
if [ ! -x "$IGA_XE2_ROOT/usr/bin/iga64" ]; then
  . tools/debian_unpack.sh
  unpack_debs sid "$IGA_XE2_ROOT" libigc2-tools libc6 libgcc-s1 libstdc++6 \
    || echo "setup: could not unpack sid's libigc2-tools; xe2 assembly will not be checked" >&2
fi
if [ -x "$IGA_XE2_ROOT/usr/bin/iga64" ]; then
  L="$IGA_XE2_ROOT/usr/lib/x86_64-linux-gnu"
  printf '#!/bin/sh\nexec "%s/ld-linux-x86-64.so.2" --library-path "%s" "%s/usr/bin/iga64" "$@"\n' \
    "$L" "$L" "$IGA_XE2_ROOT" > .venv/bin/iga64-xe2
  chmod +x .venv/bin/iga64-xe2
fi
# kdd's bytecode, written once here: with PYTHONDONTWRITEBYTECODE set (as on our machines) Python would
# otherwise recompile every module on every command's start (120-160 ms of CPU; docs/passes.md).
.venv/bin/python -m compileall -q core server >/dev/null
# So are the functions kdd generates while importing (dataclass and IR node methods, ~60 ms of CPU per
# start; core/generated_code.py): every module imported once with bytecode writing on writes their table.
PYTHONDONTWRITEBYTECODE= .venv/bin/python -c "
import importlib, pkgutil, kdd.core, kdd.server
for package in (kdd.core, kdd.server):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):
        importlib.import_module(module.name)"

# The editor clients' test tools (node packages, chromium + Playwright, Neovim 0.10): tools/setup_editors.sh.
tools/setup_editors.sh
