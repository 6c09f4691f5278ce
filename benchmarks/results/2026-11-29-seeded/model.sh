# How .i3model (the model of gpu.sh) was made, on the 2-core development machine (CPU), 2026-11-29.
# model-tasks.txt lists the five task files (tests/fixtures/tasks), copied into one folder for `training.data`.
set -e
mkdir -p /tmp/i3/tasks && cp $(cat benchmarks/results/2026-11-29-seeded/model-tasks.txt) /tmp/i3/tasks/
python -m training.data --output-dir /tmp/i3/data --tasks /tmp/i3/tasks --test-fraction 0 --val-fraction 0
python -m training.scratch --output-dir /tmp/i3/scratch --size small --data /tmp/i3/data
python benchmarks/results/2026-11-29-seeded/improve_rows.py /tmp/i3/data/sft.autotriton.jsonl
python -m training.sft --config benchmarks/results/2026-11-29-seeded/sft.yaml     # writes /tmp/i3/sft/final
cp -r /tmp/i3/sft/final .i3model && rm .i3model/training_args.bin
# 400 steps left the improve rows' replies with syntax errors when sampled (loss 0.021): 300 more at a lower rate
python -m training.sft --config benchmarks/results/2026-11-29-seeded/sft2.yaml    # writes /tmp/i3/sft2/final
rm -rf .i3model && cp -r /tmp/i3/sft2/final .i3model && rm .i3model/training_args.bin
# saved in bfloat16 (28 MB, to fit the device's 64 MiB carry; the backend samples in bfloat16 on a GPU anyway)
python -c "import torch, transformers as t; t.AutoModelForCausalLM.from_pretrained('.i3model', dtype=torch.bfloat16).save_pretrained('.i3model')"
