#!/usr/bin/env bash
# The training proof run of docs/TRAINING.md on one GPU machine: verified pairs from synthetic tasks, SFT then GRPO
# of a pretrained model, pass@1 and fast_1 on the held-out tasks before SFT, after SFT and after GRPO, and the
# GRPO model served by `tritonize serve` (`python -m model_server serve` from a checkout) converting a task.
#
#   benchmarks/training_proof.sh MODEL_DIR DATA_DIR RUN_DIR
#
# DATA_DIR may hold an earlier training.data run of the same settings: only its missing tasks are converted
# (DATA_DEVICE, default DEVICE, says where: a directory built on a CPU keeps its record with DATA_DEVICE=cpu).
# MODEL_DIR may appear while the data is being built (the script waits for MODEL_DIR/config.json). Each stage writes
# RUN_DIR/STAGE.log; a re-run skips the trainings that wrote final/ and resumes the rest. RUN_DIR/summary.md holds the
# table of the three evaluations, the paired comparison of GRPO with SFT (`compare_evals.py`), where the kernels fail
# (`failure_modes.py`: element counts, pass@1 per op) and the reward curve. The environment sets the sizes (defaults:
# the recorded run) and extra flags: DATA_EXTRA for training.data (e.g. "--families elementwise activation --max-ops
# 2"), GRPO_EXTRA for training.grpo and EVAL_EXTRA for training.eval and the server (defaults: the static-cache
# generation, `--fast-generation` and `--compile`; set them empty for transformers' eager `generate`). The evaluations
# sample EVAL_SAMPLES replies per task at EVAL_TEMPERATURE (0: greedy, one reply is enough) from the `test` split of
# EVAL_SUITE (default: DATA's RL prompts; a larger held-out set is another training.data run's, see docs/TRAINING.md).
# SFT_EVAL_EXTRA adds flags to the SFT model's evaluation only (e.g. `--no-timing`: pass@1 without fast_p, a few
# minutes instead of the timed evaluation's 10-16 beside GRPO).
# GRPO_DATA (default DATA) is the directory whose `train` RL prompts GRPO samples: prompts SFT never saw, such as the
# `train` split of the run that holds EVAL_SUITE's `test` tasks.
# BASE_SAMPLES (default EVAL_SAMPLES) is the base model's samples per task, so that an earlier run's base evaluation
# can be reused; 0 skips it. SAMPLED_SAMPLES (default 0: none) adds a second evaluation of the SFT and GRPO models,
# eval-sft-sampled and eval-grpo-sampled: that many replies per task at SAMPLED_TEMPERATURE (default 1, GRPO's), with
# SAMPLED_EXTRA's flags (default: verified in Triton's interpreter, `--verify-device cpu --timeout 30`, while the GPU
# generates), compared like the first pair. Each model's evaluations run one after the other (three generating at
# once filled an 80 GB GPU at EVAL_BATCH 240). The SFT model's run beside GRPO unless SFT_EVAL_BESIDE_GRPO=0, which
# leaves GRPO the GPU alone (twice the steps a minute) and evaluates both models together afterwards. CONVERT=0 skips
# the last stage (serving the GRPO model and converting a task through it).
set -uo pipefail

MODEL=$1 DATA=$2 RUN=$3
SYNTHETIC=${SYNTHETIC:-525} SEED=${SEED:-3000} SIZES=${SIZES:-small} DEVICE=${DEVICE:-cuda}
DATA_DEVICE=${DATA_DEVICE:-$DEVICE}
TEST_FRACTION=${TEST_FRACTION:-0.1}
DATA_WORKERS=${DATA_WORKERS:-12} VERIFY_WORKERS=${VERIFY_WORKERS:-6}
SFT_EPOCHS=${SFT_EPOCHS:-4} SFT_LR=${SFT_LR:-1e-4} SFT_BATCH=${SFT_BATCH:-4} SFT_ACCUMULATION=${SFT_ACCUMULATION:-2}
SFT_MAX_LENGTH=${SFT_MAX_LENGTH:-4096}
GRPO_MINUTES=${GRPO_MINUTES:-8} GRPO_LR=${GRPO_LR:-5e-6} GRPO_BATCH=${GRPO_BATCH:-16}
GRPO_ACCUMULATION=${GRPO_ACCUMULATION:-2}
GRPO_LENGTH=${GRPO_LENGTH:-3072} GRPO_TEMPERATURE=${GRPO_TEMPERATURE:-0.8}
EVAL_SAMPLES=${EVAL_SAMPLES:-4} BASE_SAMPLES=${BASE_SAMPLES:-$EVAL_SAMPLES}
EVAL_TOKENS=${EVAL_TOKENS:-3072} EVAL_BATCH=${EVAL_BATCH:-128} EVAL_TEMPERATURE=${EVAL_TEMPERATURE:-0.8}
EVAL_SUITE=${EVAL_SUITE:-$DATA/rl.autotriton.jsonl} GRPO_DATA=${GRPO_DATA:-$DATA}
SAMPLED_SAMPLES=${SAMPLED_SAMPLES:-0} SAMPLED_TEMPERATURE=${SAMPLED_TEMPERATURE:-1.0}
SAMPLED_EXTRA=${SAMPLED_EXTRA---verify-device cpu --timeout 30} SFT_EVAL_BESIDE_GRPO=${SFT_EVAL_BESIDE_GRPO:-1}
PORT=${PORT:-8799} CONVERT=${CONVERT:-1}
DATA_EXTRA=${DATA_EXTRA-} GRPO_EXTRA=${GRPO_EXTRA---fast-generation} EVAL_EXTRA=${EVAL_EXTRA---compile} SFT_EVAL_EXTRA=${SFT_EVAL_EXTRA-}
mkdir -p "$RUN"
python3 -c "import trl, datasets, fastapi, uvicorn" 2>/dev/null || {
    echo "training_proof.sh: trl, datasets, fastapi and uvicorn must import: pip install -e '.[train,serve]'" >&2
    exit 2
}

stage() {  # stage NAME COMMAND...: run it, its output in RUN/NAME.log, and say how it ended
    local name=$1
    shift
    echo "[$(date +%T)] $name: started" >&2
    "$@" >"$RUN/$name.log" 2>&1
    local status=$?
    echo "[$(date +%T)] $name: exit $status" >&2
    return $status
}

evaluate() {  # evaluate NAME MODEL SAMPLES [FLAGS...]: pass@k and fast_p of MODEL on the held-out tasks
    local name=$1 model=$2 samples=$3
    shift 3
    stage "eval-$name" python3 -m training.eval --suite "$EVAL_SUITE" --split test --temperature "$EVAL_TEMPERATURE" \
        --backend transformers --model "$model" --samples "$samples" --max-tokens "$EVAL_TOKENS" \
        --batch "$EVAL_BATCH" --device "$DEVICE" --workers "$VERIFY_WORKERS" --trials 3 --output-dir "$RUN/eval-$name" \
        $EVAL_EXTRA "$@"
}

sampled() {  # sampled NAME MODEL: the second evaluation of MODEL (SAMPLED_*), if asked for
    [ "$SAMPLED_SAMPLES" = 0 ] || evaluate "$1-sampled" "$2" "$SAMPLED_SAMPLES" --temperature "$SAMPLED_TEMPERATURE" \
        $SAMPLED_EXTRA
}

stage data python3 -m training.data --output-dir "$DATA" --synthetic "$SYNTHETIC" --seed "$SEED" \
    --sizes "$SIZES" --device "$DATA_DEVICE" --workers "$DATA_WORKERS" --test-fraction "$TEST_FRACTION" \
    --val-fraction 0.02 $DATA_EXTRA &
data=$!
until grep -q "SFT:" "$RUN/data.log" 2>/dev/null || ! kill -0 $data 2>/dev/null; do sleep 2; done
until [ -f "$MODEL/config.json" ]; do sleep 2; done
base=
[ "$BASE_SAMPLES" = 0 ] || { evaluate base "$MODEL" "$BASE_SAMPLES" & base=$!; }
wait $data || exit 1

[ -f "$RUN/sft/final/config.json" ] || stage sft python3 -m training.sft --data "$DATA" --model "$MODEL" \
    --output-dir "$RUN/sft" --epochs "$SFT_EPOCHS" --learning-rate "$SFT_LR" --per-device-batch-size "$SFT_BATCH" \
    --gradient-accumulation "$SFT_ACCUMULATION" --max-length "$SFT_MAX_LENGTH" --logging-steps 5 --save-steps 1000 \
    || exit 1
evaluate_sft() { evaluate sft "$RUN/sft/final" "$EVAL_SAMPLES" $SFT_EVAL_EXTRA; sampled sft "$RUN/sft/final"; }
sft=
[ "$SFT_EVAL_BESIDE_GRPO" = 0 ] || { evaluate_sft & sft=$!; }
[ -f "$RUN/grpo/final/config.json" ] || stage grpo python3 -m training.grpo --data "$GRPO_DATA" --model "$RUN/sft/final" \
    --output-dir "$RUN/grpo" --max-minutes "$GRPO_MINUTES" --learning-rate "$GRPO_LR" --num-generations 8 \
    --per-device-batch-size "$GRPO_BATCH" --gradient-accumulation "$GRPO_ACCUMULATION" \
    --max-completion-length "$GRPO_LENGTH" --temperature "$GRPO_TEMPERATURE" \
    --verify-device "$DEVICE" --verify-workers "$VERIFY_WORKERS" --trials 3 --verify-timeout 60 \
    --save-steps 1000 $GRPO_EXTRA || exit 1
[ "$SFT_EVAL_BESIDE_GRPO" = 0 ] && { evaluate_sft & sft=$!; }
{ evaluate grpo "$RUN/grpo/final" "$EVAL_SAMPLES" || exit 1; sampled grpo "$RUN/grpo/final" || true; } &
grpo=$!
wait $base $sft
wait $grpo || exit 1

python3 - "$RUN" >"$RUN/summary.md" <<'EOF'
import json, sys
from pathlib import Path

run = Path(sys.argv[1])
print("| model | tasks | pass@1 | fast_1 vs eager | fast_1 vs compile | correct samples | seconds |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name in ("base", "sft", "grpo", "sft-sampled", "grpo-sampled"):
    results = run / f"eval-{name}" / "results.json"
    if not results.is_file():  # BASE_SAMPLES=0 or SAMPLED_SAMPLES=0: not evaluated
        continue
    totals = json.loads(results.read_text())["totals"]
    eager, compiled = ((totals["fast_p"][side] or {}).get("1") for side in ("eager", "compile"))
    eager, compiled = ("-" if value is None else f"{value:.3f}" for value in (eager, compiled))
    print(f"| {name} | {totals['tasks']} | {totals['pass@k']['1']:.3f} | {eager} | {compiled} | "
          f"{totals['correct_samples']}/{totals['samples']} | {totals['seconds']} |")
EOF
{
    echo
    python3 benchmarks/compare_evals.py "$RUN/eval-sft" "$RUN/eval-grpo"
    [ "$SAMPLED_SAMPLES" = 0 ] || { echo; python3 benchmarks/compare_evals.py "$RUN/eval-sft-sampled" "$RUN/eval-grpo-sampled"; }
    echo
    python3 benchmarks/failure_modes.py "$RUN/eval-sft" "$RUN/eval-grpo"
    echo
    python3 benchmarks/reward_curve.py "$RUN/grpo"
} >>"$RUN/summary.md"
cat "$RUN/summary.md" >&2
[ "$CONVERT" = 0 ] && { echo "[$(date +%T)] done (CONVERT=0: no serving)" >&2; exit 0; }

# Serve the GRPO model and convert the held-out task it did best on, through the server's OpenAI-style API.
task=$(python3 -c "
import json, sys
tasks = json.load(open('$RUN/eval-grpo/results.json'))['tasks']
print(max(tasks, key=lambda t: t['correct'])['path'])")
python3 -m model_server serve --backend transformers --model "$RUN/grpo/final" --device "$DEVICE" --port "$PORT" \
    $EVAL_EXTRA >"$RUN/serve.log" 2>&1 &
server=$!
until python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health')" 2>/dev/null \
    || ! kill -0 $server 2>/dev/null; do sleep 1; done
stage convert python3 -m model_server convert "$task" --backend openai --base-url "http://127.0.0.1:$PORT/v1" \
    --model "$RUN/grpo/final" --device "$DEVICE" --samples 4 --rounds 2 --out "$RUN/converted.py" --force
kill $server
echo "[$(date +%T)] done" >&2
