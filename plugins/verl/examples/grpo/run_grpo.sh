#!/usr/bin/env bash
# GRPO with verl on installed bootcamps (bootcamp-example by default), one node. See README.md beside this file.
#
#   MODEL_PATH=Qwen/Qwen2.5-3B-Instruct bash run_grpo.sh                   # 8 GPUs, sglang
#   BOOTCAMPS=example,texas_holdem N_GPUS=4 ROLLOUT_NAME=vllm bash run_grpo.sh trainer.total_epochs=1
#
# It generates the datasets, exports them for verl (`bootcamp verl export`) and runs the exported
# run_main_ppo.sh with the GRPO settings below; Hydra overrides given to this script come last and win.
set -euo pipefail
BOOTCAMPS="${BOOTCAMPS:-example}"
SPLITS="${SPLITS:-train:2000,test:200}"
WORK="${WORK:-$PWD/bootcamp_grpo}"
N_GPUS="${N_GPUS:-8}"

bootcamp generate --bootcamp "$BOOTCAMPS" --split-samples "$SPLITS" --concat-files --output-dir "$WORK/data" -q
bootcamp verl export --dataset-path "$WORK/data/all_train.jsonl" --val-dataset-path "$WORK/data/all_test.jsonl" \
  --output-dir "$WORK/verl"

GRPO=(
  # 64 prompts x 8 rollouts a step; GRPO's advantage compares the 8 rollouts of one prompt
  "data.train_batch_size=64"
  "actor_rollout_ref.rollout.n=8"
  "data.max_response_length=4096"
  "actor_rollout_ref.actor.optim.lr=1e-6"
  "actor_rollout_ref.actor.ppo_mini_batch_size=16"
  "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"
  "actor_rollout_ref.actor.use_kl_loss=True"
  "actor_rollout_ref.actor.kl_loss_coef=0.001"
  "actor_rollout_ref.actor.kl_loss_type=low_var_kl"
  "actor_rollout_ref.actor.entropy_coeff=0"
  "actor_rollout_ref.model.enable_gradient_checkpointing=True"
  "actor_rollout_ref.rollout.tensor_model_parallel_size=1"
  "actor_rollout_ref.rollout.gpu_memory_utilization=0.5"
  "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4"
  "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"
  # GRPO with trajectories that failed for infrastructure reasons out of the group statistics (the export's choice)
  "algorithm.adv_estimator=bootcamp_grpo"
  "algorithm.use_kl_in_reward=False"
  "trainer.critic_warmup=0"
  "trainer.logger=['console']"
  "trainer.project_name=bootcamp"
  "trainer.experiment_name=grpo_${BOOTCAMPS//,/_}"
  "trainer.n_gpus_per_node=$N_GPUS"
  "trainer.nnodes=1"
  "trainer.save_freq=-1"
  "trainer.test_freq=10"
  "trainer.total_epochs=3"
)
exec bash "$WORK/verl/run_main_ppo.sh" "${GRPO[@]}" "$@"
