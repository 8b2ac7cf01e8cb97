#!/usr/bin/env bash
# Makes .whl/ for tools/device_scale.sh (run here; .whl/ is ignored through .git/info/exclude): the cp312
# wheels the GPU host lacks, unpacked and trimmed to fit the device tool's 64 MiB carry limit (Ray's wheel
# alone is 79 MB, of which 34 MB are Java jars), as one xz tarball; and this machine's iga64.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$work/w" \
  ray==2.60.0 msgpack tree-sitter tree-sitter-toml jsonschema jsonschema-specifications referencing rpds-py attrs
mkdir -p "$work/site" .whl
# unzip keeping each member's mode (zipfile's extractall drops it: Ray's gcs_server and raylet must stay executable)
python3 - "$work/site" "$work"/w/*.whl <<'PY'
import os, sys, zipfile
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            path = z.extract(info, sys.argv[1])
            if info.external_attr >> 16:
                os.chmod(path, (info.external_attr >> 16) & 0o777)
PY
rm -rf "$work"/site/ray/{jars,dashboard/client/build,rllib,data,serve,train,tune,llm}
tar -C "$work/site" -cf - . | xz -T2 -6 > .whl/site312.tar.xz
install -m 755 "$(command -v iga64)" .whl/iga64
rm -rf "$work"
ls -la .whl
