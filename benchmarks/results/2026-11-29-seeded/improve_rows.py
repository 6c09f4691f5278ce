"""Add to an SFT file, for each pair, a row with the improve prompt of `--seed-from inductor` (the task, the pair's
verified kernel, a request for a faster one) whose completion is the pair's kernel again: the demonstration model of
gpu.sh then answers that prompt with a module, not with noise. It learns no speed from it.

    python benchmarks/results/2026-11-29-seeded/improve_rows.py /tmp/i3/data/sft.autotriton.jsonl
"""

import json
import sys

from model_server import prompts

path = sys.argv[1]
rows = [json.loads(line) for line in open(path)]
added = []
for row in rows:
    kernel = prompts.reply_code(row["profile"], row["completion"][0]["content"])
    prompt = prompts.improve_messages(row["profile"], row["task"], kernel, {})
    added.append({**row, "id": row["id"] + "-improve", "prompt": prompt})
with open(path, "a") as out:
    for row in added:
        out.write(json.dumps(row) + "\n")
print(f"{len(added)} improve rows added to {path}")
