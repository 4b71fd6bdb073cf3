# fusor: `make demo` runs the main job end to end; `make test` runs the whole suite.
# Both do their own set-up on a fresh Debian 12 machine (scripts/setup is idempotent).

BUILD     ?= build
ASAN      ?= build-asan
TSAN      ?= build-tsan
PY        := .venv/bin/python
NODE_DATA  = $(shell ./scripts/onnx-node-data)
JOBS      ?= $(shell nproc)

PYVENV    := build-python-venv

.PHONY: all setup build models test test-unit test-e2e test-python test-asan test-tsan fuzz check-layers demo bench clean

all: build

setup:
	@./scripts/setup

$(BUILD)/build.ninja: | setup
	cmake -S . -B $(BUILD) -G Ninja -DFUSOR_ONNX_NODE_DATA=$(NODE_DATA) >/dev/null

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

models: setup
	@./scripts/get-models

test-unit: build models
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-e2e: build models
	FUSOR=$(BUILD)/fusor $(PY) -m pytest -q tests/e2e

# The Python package (docs/python.md) as a user gets it: a fresh venv, pip install . (its compiles
# are ccache hits of build/'s, CMakeLists.txt), then tests/python against ONNX Runtime. Debian's
# numpy, torch and torchvision come from the system site-packages, as in .venv.
test-python: build models
	rm -rf $(PYVENV)
	/usr/bin/python3 -m venv --system-site-packages $(PYVENV)
	$(PYVENV)/bin/pip install -q --disable-pip-version-check -r python/requirements-build.txt -r tests/python/requirements.txt
	$(PYVENV)/bin/pip install -q --disable-pip-version-check --no-build-isolation .
	$(PYVENV)/bin/python -m pytest -q -p no:cacheprovider tests/python

# The unit and conformance suites once more under AddressSanitizer and UBSan, in the clang tree
# that the fuzz targets share (scripts/configure-sanitized): one compile serves both.
test-asan: setup models
	./scripts/configure-sanitized $(ASAN)
	cmake --build $(ASAN) -j $(JOBS)
	cd $(ASAN) && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j $(JOBS)

# The serving batcher's tests under ThreadSanitizer (a stand-in model: only src/serve's batcher
# and its few dependencies are instrumented).
test-tsan: setup
	cmake -S . -B $(TSAN) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFUSOR_TSAN=ON >/dev/null
	cmake --build $(TSAN) -j $(JOBS) --target fusor_serve_tsan_tests
	cd $(TSAN) && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure

fuzz: setup
	@FUSOR_SANITIZE_BUILD=$(ASAN) ./scripts/fuzz

# Includes go downward only, in the layer order held by scripts/check-layers (its self-test first).
check-layers:
	@./scripts/check-layers --self-test
	@./scripts/check-layers

test: check-layers test-unit test-e2e test-python test-asan test-tsan fuzz

demo: build models
	@./scripts/demo

bench: build models
	@./bench/compare-ort

clean:
	rm -rf $(BUILD) $(ASAN) $(TSAN) build-fuzz build-python $(PYVENV)
