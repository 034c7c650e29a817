#!/usr/bin/env bash
# The CPU GRPO test's stages on a GPU machine that has Python 3.12 and torch but no network, Ray, verl, vLLM or
# SGLang. Carry the wheels in bench/gpu/wheels/ (verl, bootcamp-core, bootcamp-verl and verl's light dependencies
# that grpo_stages.py imports: transformers, tokenizers, safetensors, huggingface-hub, numpy, omegaconf ...), e.g.
#   pip download --no-deps --dest bench/gpu/wheels verl==0.9.1 ... ; pip wheel --no-deps -w bench/gpu/wheels core plugins/verl
# Then: bash bench/gpu/run_stages.sh [--device cuda] [--steps 3]   (one PASS/FAIL line per stage, with timings)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
if compgen -G "$HERE/wheels/*.whl" > /dev/null; then
  # no index: only what was carried; --no-deps keeps pip from reaching for verl's heavy requirements (ray ...)
  "$PYTHON" -m pip install --quiet --no-index --no-deps "$HERE"/wheels/*.whl
fi
exec "$PYTHON" "$HERE/grpo_stages.py" "$@"
