#!/bin/bash
# tools/onednn_lines.py --stage check on a machine with many cores (the device tool's GPU machine: 64 cores,
# Python 3.12, no network), since the check of every line takes hours of one CPU.
#   here:   tools/onednn_lines_device.sh wheels
#           (kdd's dependencies, at this .venv's versions, for CPython 3.12 into build/onednn_lines/whl, to carry)
#   there:  tools/onednn_lines_device.sh run [onednn_lines.py args, e.g. --unbounded]
#           (with build/onednn_lines carried; rows stream into $OUT/rows.jsonl, the table into $OUT/log)
set -u
HERE=build/onednn_lines
case "${1:-}" in
wheels)
    mkdir -p $HERE/whl
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
        -d $HERE/whl "numpy==$(.venv/bin/python -c 'import numpy; print(numpy.__version__)')" \
        "tree-sitter==$(.venv/bin/python -c 'from importlib.metadata import version; print(version("tree-sitter"))')" \
        "tree-sitter-toml==$(.venv/bin/python -c 'from importlib.metadata import version as v; print(v("tree-sitter-toml"))')" \
        "msgpack==$(.venv/bin/python -c 'from importlib.metadata import version; print(version("msgpack"))')"
    ls $HERE/whl ;;
run)
    shift
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        $HERE/whl/*.whl || exit 1
    # kdd as the package over this checkout's core/ and server/, as an editable install would make it
    mkdir -p /tmp/shim/kdd
    ln -sfn "$PWD/core" /tmp/shim/kdd/core; ln -sfn "$PWD/server" /tmp/shim/kdd/server
    jobs=$(python3 -c "import os; print(len(os.sched_getaffinity(0)))")
    # one thread per worker: the workers already fill the cores
    export PYTHONPATH=/tmp/shim:/tmp/site PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
    python3 -c 'import numpy, kdd.core.engine; print("jobs", '"$jobs"', "numpy", numpy.__version__)' || exit 1
    # end inside the device tool's 600 s per command; what is done is in the rows either way
    timeout "${LIMIT:-560}" python3 tools/onednn_lines.py --stage check --jobs "$jobs" "$@" \
        --rows "$OUT/rows.jsonl" --json "$OUT/check.json" 2>&1 | tee "$OUT/log" ;;
*)
    echo "usage: $0 wheels | run [onednn_lines.py args]" >&2; exit 2 ;;
esac
