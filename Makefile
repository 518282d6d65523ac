# make setup | make test | make demo
VENV := .venv
STAMP := $(VENV)/.setup-done

.PHONY: setup test demo

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt scripts/setup.sh
	bash scripts/setup.sh
	touch $@

test: setup
	bash scripts/test.sh

demo: setup
	@bash scripts/compile_modules.sh $(VENV)/bin/python
	$(VENV)/bin/chorus run "Which file defines the Registry class?" --root actors
