# The two quick-start commands: `make demo` and `make test`.
# Both install into the current Python environment (use a venv if you like);
# PYTHON=... picks the interpreter.
PYTHON ?= python3
export FIFTYONE_DO_NOT_TRACK ?= true
export FIFTYONE_DATABASE_VALIDATION ?= false
export NO_MKDOCS_2_WARNING ?= 1

.PHONY: install install-test demo test test-fast plugin release perf docs docs-screenshots layers

install:
	$(PYTHON) -m pip install -q -e .
	$(PYTHON) scripts/ensure_mongod.py

install-test:
	$(PYTHON) -m pip install -q -e ".[test]"
	$(PYTHON) scripts/ensure_mongod.py
	$(PYTHON) scripts/ensure_chromium.py
	$(PYTHON) scripts/fiftyone_floor_env.py

demo: install
	$(PYTHON) -m imagenetx demo --overwrite $(ARGS)

test: install-test
	$(PYTHON) -m pytest $(PYTEST_ARGS)

# The fast tier, for iterating: no browser, install, whole demo, CPU model
# runs or private services (the `heavy` marker, tests/conftest.py)
test-fast: install-test
	$(PYTHON) -m pytest -m "not heavy" $(PYTEST_ARGS)

plugin: install
	$(PYTHON) -m imagenetx plugin install

# The sdist and the wheel (which carries the plugin) into dist/, checked by twine.
release:
	$(PYTHON) -m pip install -q build twine
	rm -rf dist
	$(PYTHON) -m build --outdir dist .
	$(PYTHON) -m twine check --strict dist/*

perf: install-test
	$(PYTHON) perf/parse_annotations.py
	$(PYTHON) perf/tag_dataset.py
	$(PYTHON) perf/build_demo.py
	$(PYTHON) perf/ratios.py
	$(PYTHON) perf/predict.py
	$(PYTHON) perf/predict.py --cue-conflict ../shared/data/cue-conflict/images --models timm:efficientnet_lite0 --decoders auto --no-baseline
	$(PYTHON) perf/evaluation.py
	$(PYTHON) perf/shape_bias.py
	$(PYTHON) perf/import_predictions.py
	$(PYTHON) perf/panel_refresh.py
	$(PYTHON) perf/context.py
	$(PYTHON) perf/discovery.py
	$(PYTHON) perf/critical_band.py
	$(PYTHON) perf/load.py --n 50000 --clean
	$(PYTHON) perf/paired.py
	$(PYTHON) perf/edit.py
	$(PYTHON) perf/spectral.py
	$(PYTHON) perf/corruptions.py
	$(PYTHON) perf/startup.py

# The layers of imagenetx/ read from its imports: lines per package, circles,
# upward imports, imports inside functions (docs/architecture.md)
layers:
	$(PYTHON) scripts/layers.py

# The docs site (MkDocs, docs/ + mkdocs.yml) into site/; the same strict build
# runs in tests/test_docs.py.
docs:
	$(PYTHON) -m mkdocs build --strict

# The browser test's screenshots the docs show (from test-artifacts/, or
# $$IMAGENETX_TEST_ARTIFACTS) into docs/images/; the README shows
# docs/images/panel.png. Run the browser test first: $(PYTHON) -m pytest -m browser
DOCS_SCREENSHOTS = panel.png panel-texture-mistakes.png run-model-delegated-running.png \
	run-model-picker-suggestions.png attack-form.png panel-attack-success-photos.png
docs-screenshots:
	@src="$${IMAGENETX_TEST_ARTIFACTS:-test-artifacts}"; \
	for f in $(DOCS_SCREENSHOTS); do \
	  test -f "$$src/$$f" || { echo "no $$src/$$f: run $(PYTHON) -m pytest -m browser first" >&2; exit 2; }; \
	done; \
	mkdir -p docs/images && for f in $(DOCS_SCREENSHOTS); do cp "$$src/$$f" docs/images/; done; \
	ls -l docs/images
