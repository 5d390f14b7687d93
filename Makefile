# pinpath: reproducible notebooks on the cost of host<->device transfers.
# `make` lists the targets. Recipes call Python; the logic lives in lib/pinpath.
# Every make variable reaches a command as one argument: the recipes read them from the
# environment ("$$NAME"), never pasted into the shell line.

.DEFAULT_GOAL := help
SHELL := /bin/bash
# a value given on the command line or in the environment is text: a "$(shell ...)" in it is not
# run by make (it reaches the commands as one argument, like any other value)
USER_VARS := PRESET PLATFORM NOTEBOOKS RESUME SET RUN RUNS CELL_TIMEOUT STOP_BY STRICT INLINE TRACE OUT WHEELHOUSE SKIP \
             EXECUTOR SLURM_PARTITION SLURM_ACCOUNT SLURM_GPUS SLURM_CPUS SLURM_TIME SLURM_MEM ARCH PYVER EXTRAS \
             ENV OFFLINE PYTHON VENV
$(foreach v,$(USER_VARS),$(if $(filter command line environment,$(origin $(v))),$(eval override $(v) := $$(value $(v)))))

## GLOBALS
PYTHON     ?= python3
VENV       ?= .venv
# empty: the default preset for a new run, the run's own preset with RESUME
PRESET     ?=
PLATFORM   ?= auto
NOTEBOOKS  ?=
RESUME     ?=
SET        ?=
RUN        ?= latest
RUNS       ?=
CELL_TIMEOUT ?=
STOP_BY    ?=
STRICT     ?=
INLINE     ?=
TRACE      ?=
OUT        ?=
WHEELHOUSE ?= wheelhouse
SKIP       ?=
# the AMD extra (hip-python, ~300 MB) only where ROCm's HIP library is on this machine (a file that
# exists, not only an entry of ld.so.cache), or when asked; the cluster extra (Snakemake) with
# EXECUTOR=snakemake or slurm
HAS_ROCM   := $(shell for f in $$( { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | sed -n 's/.*libamdhip64\.so.* => //p') \
                /opt/rocm/lib/libamdhip64.so; do [ -e "$$f" ] && echo 1 && break; done)
EXTRAS     ?= test,cuda$(if $(filter snakemake slurm,$(EXECUTOR)),$(comma)cluster,)$(if $(HAS_ROCM),$(comma)amd,)
comma      := ,
PYVER      ?= $(shell $(PYTHON) -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
# ENV=venv (default) builds .venv from nothing; ENV=system uses $(PYTHON) as it is, plus the
# wheelhouse unpacked into .site (a GPU node whose image already has numpy, pandas, cuda-bindings).
ENV        ?= venv
# wheels in wheelhouse/ are preferred when present; OFFLINE=1 forbids the package index altogether
OFFLINE    ?=
# EXECUTOR=local: the notebooks one after the other in one process here; snakemake: through Snakemake
# on this machine; slurm: one Slurm job per notebook (profiles/slurm/config.yaml), each job's
# resources overridable here or from the environment
EXECUTOR   ?= local
SLURM_PARTITION ?=
SLURM_ACCOUNT   ?=
SLURM_GPUS      ?=
SLURM_CPUS      ?=
SLURM_TIME      ?=
SLURM_MEM       ?=
ARCH       ?=
export PRESET PLATFORM NOTEBOOKS RESUME SET RUN RUNS CELL_TIMEOUT STOP_BY STRICT INLINE TRACE OUT EXTRAS WHEELHOUSE SKIP PYVER ARCH EXECUTOR
export SLURM_PARTITION SLURM_ACCOUNT SLURM_GPUS SLURM_CPUS SLURM_TIME SLURM_MEM

PIP_FROM := $(if $(wildcard $(WHEELHOUSE)/*.whl),--find-links $(WHEELHOUSE),) $(if $(OFFLINE),--no-index,)
ifeq ($(ENV),system)
  PY    := PYTHONPATH=$(CURDIR)/.site:$(CURDIR)/lib JUPYTER_PATH=$(CURDIR)/.site/share/jupyter $(PYTHON)
  STAMP := .site/.stamp
else
  PY    := $(VENV)/bin/python
  STAMP := $(VENV)/.stamp
endif

.PHONY: help setup test reproduce validate runs report share compare advise lab wheelhouse offload-bundle offload-probe clean

## COMMANDS
help:  ## list the targets
	@grep -E '^[a-z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-11s %s\n", $$1, $$2}'

setup: $(STAMP)  ## create the environment (.venv, or .site with ENV=system); OFFLINE=1: from wheelhouse/ only

$(VENV)/.stamp: pyproject.toml
	@echo "setup 1/3: a new virtual environment in $(VENV)"
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	@echo "setup 2/3: installing pinpath with extras [$$EXTRAS] (pip's progress below)"
	set -o pipefail; $(VENV)/bin/python -m pip install --progress-bar off --disable-pip-version-check $(PIP_FROM) \
	  -e ".[$$EXTRAS]" 2>&1 | { grep --line-buffered -E '^(Collecting|Installing collected|Successfully|ERROR)' || true; }
	@echo "setup 3/3: done ($$(du -sh $(VENV) | cut -f1))"
	touch $@

.site/.stamp:
	@ls $(WHEELHOUSE)/*.whl >/dev/null 2>&1 || { echo "ENV=system needs wheels in $(WHEELHOUSE)/ (make wheelhouse)"; exit 2; }
	rm -rf .site
	$(PYTHON) -m pip install -q --no-index --no-deps --no-compile --target .site $(WHEELHOUSE)/*.whl
	touch $@

test: setup  ## run the tests (host everywhere; cuda/AMD ones where they can run); fails if none ran
	$(PY) -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo "make test: no test ran" >&2; exit 1; fi; exit $$rc

reproduce: setup  ## run the notebooks (PRESET=smoke|default|full PLATFORM=auto|cuda|hsa|hip|host NOTEBOOKS=a,b SET="NB.NAME=V;NB.OTHER=W" RESUME=<run-id> CELL_TIMEOUT=<s> STOP_BY=<s> EXECUTOR=local|snakemake|slurm SLURM_PARTITION= SLURM_ACCOUNT= SLURM_GPUS= SLURM_CPUS= SLURM_TIME= SLURM_MEM=)
ifeq ($(origin CLUSTER),command line)
	$(error CLUSTER is now EXECUTOR: EXECUTOR=snakemake for CLUSTER=local, EXECUTOR=slurm for CLUSTER=slurm)
endif
ifneq ($(filter snakemake slurm,$(EXECUTOR)),)
	@$(PY) -c 'import snakemake' 2>/dev/null || [ "$(ENV)" != venv ] || { echo "setup: adding the cluster extra (Snakemake)"; \
	  $(VENV)/bin/python -m pip install -q --disable-pip-version-check $(PIP_FROM) -e ".[$$EXTRAS]"; }
endif
	IFS=';' read -r -d '' -a sets < <(printf '%s' "$$SET"); $(PY) -m pinpath run --executor "$$EXECUTOR" --preset "$$PRESET" \
	  --platform "$$PLATFORM" --notebooks "$$NOTEBOOKS" --resume "$$RESUME" --cell-timeout "$$CELL_TIMEOUT" --stop-by "$$STOP_BY" \
	  --partition "$$SLURM_PARTITION" --account "$$SLURM_ACCOUNT" --gpus "$$SLURM_GPUS" --cpus "$$SLURM_CPUS" \
	  --time "$$SLURM_TIME" --mem "$$SLURM_MEM" "$${sets[@]/#/--set=}"

validate: setup  ## check PRESET's parameter files, notebooks and lock limits; run nothing
	IFS=';' read -r -d '' -a sets < <(printf '%s' "$$SET"); $(PY) -m pinpath validate --preset "$$PRESET" --platform "$$PLATFORM" \
	  --notebooks "$$NOTEBOOKS" "$${sets[@]/#/--set=}"

runs: setup  ## list the runs under outputs/ with their status (stale: its runner was killed)
	$(PY) -m pinpath runs

report: runs  ## the same as `make runs`; each run's summary report is outputs/<run-id>/report/index.html

share: setup  ## write share/summary.md, ~900 px figures and <run-id>.zip of RUN (default: latest) into its folder (INLINE=1: figures as data URIs)
	$(PY) -m pinpath share "$$RUN" $${INLINE:+--inline}

compare: setup  ## claims of RUNS="outputs/A outputs/B" side by side into outputs/compare.html and .md, with a regression check (STRICT=1: exit 1 on a changed verdict whose intervals do not overlap)
	@[ -n "$$RUNS" ] || { echo 'make compare needs RUNS="outputs/A outputs/B"'; exit 2; }
	read -r -a runs <<< "$$RUNS"; $(PY) -m pinpath compare "$${runs[@]}" --out outputs/compare.html $${STRICT:+--strict}

advise: $(if $(TRACE),setup,)  ## replay an application's transfer trace under every policy and advise (TRACE=<file> PLATFORM= OUT=)
	@[ -n "$$TRACE" ] || { echo 'make advise needs TRACE=<file> (LIBOMPTARGET_INFO=40 or 32 stderr, rocprofv3 memory-copy CSV or hsa_stats.csv)'; exit 2; }
	$(PY) -m pinpath advise "$$TRACE" --platform "$$PLATFORM" $${OUT:+--out "$$OUT"}

lab: setup  ## JupyterLab on 127.0.0.1 (token), pinpath's kernel the default; executed reference notebooks read-only in build/lab/executed/
	$(VENV)/bin/python -m pip install -q $(PIP_FROM) -e ".[$$EXTRAS,lab]"
	$(VENV)/bin/python -m ipykernel install --sys-prefix --name pinpath --display-name "Python (pinpath)"
	mkdir -p $(VENV)/share/jupyter/lab/settings && cp tools/lab/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	$(VENV)/bin/python tools/lab/executed_copies.py "$(CURDIR)"
	$(VENV)/bin/jupyter lab --config=tools/lab/jupyter_server_config.py --ServerApp.root_dir=$(CURDIR) \
	  $(if $(filter 0,$(shell id -u)),--allow-root,)

# pure-Python dependencies published only as source (Snakemake's connection_pool): made into wheels
# first, here, so that the binary-only download for the node's Python finds them
SDIST_ONLY := connection_pool
wheelhouse:  ## download wheels for an offline node into wheelhouse/ (PYVER=3.12, SKIP="numpy pandas ...")
	mkdir -p "$$WHEELHOUSE"
	$(if $(findstring cluster,$(EXTRAS)),$(PYTHON) -m pip wheel -q --no-deps -w "$$WHEELHOUSE" $(SDIST_ONLY),)
	$(PYTHON) -m pip download -q -d "$$WHEELHOUSE" --find-links "$$WHEELHOUSE" --only-binary=:all: --python-version "$$PYVER" \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_25_x86_64 \
	  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux2014_x86_64 --platform any setuptools $$(tools/requirements.py "$$EXTRAS")
	@for p in $$SKIP; do n=$$(echo $$p | tr '-' '_'); rm -fv "$$WHEELHOUSE"/$$n-[0-9]*.whl "$$WHEELHOUSE"/$$p-[0-9]*.whl; done
	@du -sh "$$WHEELHOUSE"

offload-bundle:  ## build the OpenMP offload region and its runtime bundle into build/offload/ (Debian; ARCH=sm_90|gfx90a)
	tools/offload-bundle $${ARCH:+--arch "$$ARCH"}

offload-probe:  ## on a GPU node: run the real region from build/offload/ and print a table
	tools/offload-probe.sh

clean:  ## remove the environments and caches (outputs/ stays)
	rm -rf $(VENV) .site .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
