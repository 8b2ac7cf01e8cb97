# The two commands of the project (see README.md):
#   make demo   set up and run the main job on a shipped example
#   make test   set up and run the whole test suite
#   make test-fast   the development tier: tests not marked slow, property tests bounded (README.md)
.PHONY: setup demo test test-fast bench

setup:
	tools/setup.sh

# The main job: compile a shipped example to Xe-HPG assembly with register pressure on every line
# (checked by iga64), then run the compiled kernel in the interpreter against a float64 reference.
demo: setup
	.venv/bin/kdd compile examples/resnet50_3x3.kernel.toml --emit asm
	.venv/bin/kdd check examples/resnet50_3x3.kernel.toml

# pytest exits 5 when it collects no tests; that is a failure of the suite, not a pass.
test: setup
	.venv/bin/python -m pytest -q -p no:cacheprovider tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi; exit $$rc

# The development tier: every test not marked `slow`, each property test drawing at most 10 examples
# (tests/conftest.py), spread over one pytest-xdist worker per core; `make test` stays the whole suite, the
# gate, in one process (the order and timing CI has always had).
test-fast: setup
	KDD_HYPOTHESIS=fast .venv/bin/python -m pytest -q -p no:cacheprovider -n auto -m "not slow" tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi; exit $$rc

bench: setup
	.venv/bin/python bench/ir_scale.py
	.venv/bin/python bench/check_examples.py
	.venv/bin/python bench/pipeline.py
	.venv/bin/python bench/loop_stats.py
	.venv/bin/python bench/daemon.py
	.venv/bin/python bench/startup.py
