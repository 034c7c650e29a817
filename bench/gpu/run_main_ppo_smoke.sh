#!/usr/bin/env bash
# A few GRPO steps of the exported main_ppo on a user's GPU machine with verl's extras installed
# (pip install "bootcamp-verl[sglang]", or [vllm]): generate bootcamp-example data, export it, run it.
#   MODEL_PATH=/models/Qwen2.5-0.5B-Instruct bash bench/gpu/run_main_ppo_smoke.sh [extra Hydra overrides]
# The SGLang rollout when sglang imports, else vLLM. DRY_RUN=1 prints the composed job config instead of training
# (main_ppo --cfg job), which needs no GPU.
set -euo pipefail
PYTHON="${PYTHON:-python3}"
WORK="${WORK:-$(mktemp -d)}"
MODEL_PATH="${MODEL_PATH:?set MODEL_PATH to a local model folder (its tokenizer also sizes the prompts)}"
if "$PYTHON" -c "import sglang" 2> /dev/null; then ROLLOUT=sglang; else ROLLOUT=vllm; fi
bootcamp generate --bootcamp example --split-samples train:64,test:16 --output-dir "$WORK/data"
bootcamp verl export --dataset-path "$WORK/data/example_train.jsonl" --val-dataset-path "$WORK/data/example_test.jsonl" \
  --output-dir "$WORK/verl" --model-path "$MODEL_PATH" --rollout-name "$ROLLOUT" --max-response-length 1024
ARGS=(trainer.n_gpus_per_node="${N_GPUS:-1}" trainer.nnodes=1 trainer.total_training_steps="${STEPS:-3}"
      trainer.val_before_train=False trainer.test_freq=-1 trainer.save_freq=-1 "trainer.logger=[console]"
      actor_rollout_ref.rollout.n=4 actor_rollout_ref.rollout.gpu_memory_utilization=0.5)
if [ -n "${DRY_RUN:-}" ]; then ARGS+=(--cfg job); fi
MODEL_PATH="$MODEL_PATH" ROLLOUT_NAME="$ROLLOUT" PYTHON="$PYTHON" bash "$WORK/verl/run_main_ppo.sh" "${ARGS[@]}" "$@"
