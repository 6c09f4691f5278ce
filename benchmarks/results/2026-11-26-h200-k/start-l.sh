#!/usr/bin/env bash
# Experiment L: one SFT model (K's recipe), evaluated greedy twice on suite234: sampled in bfloat16 and in float32.
# TRITONIZE_GPU_DTYPE was read by a local, uncommitted edit of transformers_backend.py; on main, pass
# `training.eval --dtype float32` instead. (This note was added after the run; the rest is what ran.)
set -euo pipefail
cd /root/proof
cp "$OLDPWD/.gguf2/part2" . && cat part1 part2 > smollm2.gguf && rm part1 part2
rm -rf repo && cp -r "$OLDPWD" repo && rm -rf repo/.gguf1 repo/.gguf2 repo/.wheels repo/.git
cp -r "$OLDPWD/.gpudata/suite234" /root/proof/suite
PYTHONPATH=/root/proof/repo:/tmp/site python3 repo/benchmarks/gguf_to_hf.py smollm2.gguf model > convert.log 2>&1 \
    || { cat convert.log; exit 1; }
tail -1 convert.log
mkdir -p /root/proof/run
cat > /root/proof/run.sh <<'EOS'
cd /root/proof/repo
export PYTHONPATH=/root/proof/repo:/tmp/site PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
echo "[$(date +%T)] sft: started"
python3 -m training.sft --data /root/proof/data --model /root/proof/model --output-dir /root/proof/run/sft --epochs 3 \
    --learning-rate 1e-4 --per-device-batch-size 4 --gradient-accumulation 2 --max-length 2048 --logging-steps 5 \
    --save-steps 1000 > /root/proof/run/sft.log 2>&1
echo "[$(date +%T)] sft: exit $?"
for d in bfloat16 float32; do
    TRITONIZE_GPU_DTYPE=$d python3 -m training.eval --suite /root/proof/suite/rl.autotriton.jsonl --split test \
        --temperature 0 --backend transformers --model /root/proof/run/sft/final --samples 1 --max-tokens 1536 \
        --batch 240 --device cuda --workers 12 --trials 3 --output-dir /root/proof/run/eval-$d --compile --no-timing \
        --verify-device cpu --timeout 30 > /root/proof/run/eval-$d.log 2>&1 &
done
wait
echo "[$(date +%T)] evals: done"
EOS
setsid nohup bash /root/proof/run.sh > /root/proof/pipeline.log 2>&1 < /dev/null &
echo $! > /root/proof/pid
echo "started: pid $(cat /root/proof/pid)"
