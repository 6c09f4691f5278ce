#!/usr/bin/env bash
# Attempt K1/K2 (I's recipe, data-g's 567 pairs): GRPO alone on the GPU for GRPO_MINUTES (15), then both models'
# greedy evaluations together, verified in the interpreter, on suite234 (SAMPLED_SAMPLES=0 by default). J_SEED: GRPO's seed.
set -euo pipefail
cd /root/proof
cp "$OLDPWD/.gguf2/part2" . && cat part1 part2 > smollm2.gguf && rm part1 part2
rm -rf repo && cp -r "$OLDPWD" repo && rm -rf repo/.gguf1 repo/.gguf2 repo/.wheels repo/.git
cp -r "$OLDPWD/.gpudata/held" /root/proof/held
cp -r "$OLDPWD/.gpudata/suite234" /root/proof/suite
PYTHONPATH=/root/proof/repo:/tmp/site python3 repo/benchmarks/gguf_to_hf.py smollm2.gguf model > convert.log 2>&1 \
    || { cat convert.log; exit 1; }
tail -2 convert.log
mkdir -p /root/proof/run
cd repo
PYTHONPATH=/root/proof/repo:/tmp/site SYNTHETIC=600 SEED=5000 SIZES=small DATA_DEVICE=cpu DEVICE=cuda \
    TEST_FRACTION=0.1 DATA_EXTRA="--families elementwise activation --max-ops 2" \
    SFT_EPOCHS=3 SFT_MAX_LENGTH=2048 GRPO_MINUTES=${GRPO_MINUTES:-15} GRPO_LR=${GRPO_LR:-1e-5} GRPO_TEMPERATURE=1.0 \
    CONVERT=0 EVAL_EXTRA="--compile --no-timing --verify-device cpu --timeout 30" SFT_EVAL_BESIDE_GRPO=0 GRPO_BATCH=16 GRPO_ACCUMULATION=4 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
    GRPO_LENGTH=1536 EVAL_TOKENS=1536 EVAL_SUITE=/root/proof/suite/rl.autotriton.jsonl GRPO_DATA=/root/proof/held EVAL_TEMPERATURE=0 \
    EVAL_SAMPLES=1 BASE_SAMPLES=0 VERIFY_WORKERS=12 EVAL_BATCH=240 \
    SAMPLED_SAMPLES=${SAMPLED_SAMPLES:-0} SAMPLED_TEMPERATURE=1.0 SAMPLED_EXTRA="" \
    GRPO_EXTRA="--seed ${J_SEED:-1} --fast-generation --reward-runs 0.1 --beta 0.04 --lr-scheduler constant --scale-rewards none --verify-device cpu --verify-workers 12 --verify-timeout 10" \
    setsid nohup bash benchmarks/training_proof.sh /root/proof/model /root/proof/data \
    /root/proof/run > /root/proof/pipeline.log 2>&1 < /dev/null &
echo $! > /root/proof/pid
echo "pipeline started: pid $(cat /root/proof/pid)"
