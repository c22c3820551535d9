# The two commands a fresh machine needs: `make demo` and `make test`. Each sets itself up.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# torch 2.14.1 + torchvision 0.29.1 lie on this workplace's disk as one matching pair (PyPI's torchvision
# does not import beside the CPU-only 2.13.0 wheel), so the venv pins that pair.
TORCH_PINS := torch==2.14.1 torchvision==0.29.1

.PHONY: venv demo test test-browser clean browser-deps mutation plant-bugs

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH_PINS)
	$(BIN)/pip install -q -e '.[dev,zoo]' $(TORCH_PINS)
	touch $(STAMP)

browser-deps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null)

demo: venv
	$(BIN)/roofline analyze --model llama-tiny -o demo-out

test: venv browser-deps
	$(BIN)/python -m pytest -q -ra

# Not part of `make test`: CPU-heavy. A seeded uniform sample of MUTATION_SAMPLE mutants per target, one worker,
# niced; writes benchmarks/results/mutation.json and .md (score with a 95% Wilson interval per target).
MUTATION_SAMPLE ?= 300
MUTATION_TARGETS ?= count analyze capture/kineto.py
mutation: venv
	nice -n 19 $(BIN)/python benchmarks/mutation.py --sample $(MUTATION_SAMPLE) --only $(MUTATION_TARGETS)

plant-bugs: venv
	nice -n 19 $(BIN)/python benchmarks/plant_bugs.py

clean:
	rm -rf $(VENV) demo-out .pytest_cache
