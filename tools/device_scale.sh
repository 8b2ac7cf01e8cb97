#!/usr/bin/env bash
# kdd sweep and kdd tune at scale on a lent GPU host (docs/sweep.md, "At scale"), run there by the
# device tool from the repository root with `.whl` carried:
#   .whl/site312.tar.xz  Ray (its Java jars, dashboard web build and unused libraries left out: the
#                        wheel is over the carry limit), msgpack, tree-sitter(-toml), jsonschema and
#                        their needs, unpacked from cp312 wheels (tools/device_scale_pack.sh makes it)
#   .whl/iga64           the assembler the Xe check runs (a static-enough binary from libigc-tools)
# kdd itself is imported from the checkout through a package shim, as bench/gpu_resnet50.py does.
# Writes rows and logs under $OUT.
set -euo pipefail
OUT=${OUT:-/tmp/kdd-scale}
mkdir -p "$OUT" /tmp/site312
tar -C /tmp/site312 -xJf .whl/site312.tar.xz
install -m 755 .whl/iga64 /usr/local/bin/iga64
shim=$(mktemp -d)
mkdir "$shim/kdd"
touch "$shim/kdd/__init__.py"
ln -s "$PWD/core" "$shim/kdd/core"
ln -s "$PWD/server" "$shim/kdd/server"
mkdir "$shim/bin"
printf '#!/bin/sh\nexec python3 -c "import sys; from kdd.server.cli import main; sys.exit(main())" "$@"\n' > "$shim/bin/kdd"
chmod +x "$shim/bin/kdd"
export PYTHONPATH="$shim:/tmp/site312${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 PATH="$shim/bin:$PATH"
nproc; nvidia-smi --query-gpu=name --format=csv,noheader

# Tuning on the GPUs: ResNet-50 layers of examples/sm90_tuned (TUNE_LAYERS; by default two, one with split K;
# TUNE_LAYERS= runs none), each trial checked on the device first; the best goes to $OUT as LAYER.tuned.kernel.toml.
mkdir -p /tmp/tune
for layer in ${TUNE_LAYERS-res2a_branch2a res4a_branch2a}; do
  cp "examples/sm90_tuned/$layer.kernel.toml" /tmp/tune/
  /usr/bin/time -f "tune $layer: %e s wall" kdd tune "/tmp/tune/$layer.kernel.toml" --space auto --sampler grid \
    --objective bench --budget "${TUNE_BUDGET:-6}" --runs 30 --history "$OUT/tune_$layer.jsonl" 2>&1 \
    | tee "$OUT/tune_$layer.log" || true
  cp "/tmp/tune/$layer.tuned.kernel.toml" "$OUT/" 2>/dev/null || true
done

# A stage (SWEEP_STAGE, by default check: the assembly run in the simulator) of every oneDNN lookup-table
# line x type, on all the host's cores.
stage=${SWEEP_STAGE:-check}
/usr/bin/time -f "sweep: %e s wall, %U s user, %S s sys" kdd sweep onednn:tests/data/onednn/conv_lookup_table.txt \
  --stage "$stage" --workers "$(nproc)" --out "$OUT/lines_$stage.jsonl" 2>&1 | tail -40 | tee "$OUT/sweep.log" || true
