#!/usr/bin/env bash
# The GPU checks of docs/performance.md ("On a GPU"), as one script: run it from the repository
# root on a machine with one NVIDIA GPU and the project's dependencies importable (`python`), with
# OUT naming a folder for the logs. Each part has its own time limit so the script ends on time
# whatever a part does; what a part wrote is kept when it is cut short.
#   1. K parallel vs sequential dispatch of the tool part of a turn, hf backend, bf16 (dispatch.py)
#      for the s and m tiny models;
#   2. the trainer on CUDA: `paravt repro --preset quick --variants sft` with model.device=cuda
#      (the simulated pretrained base, its held-out probe, SFT, selection, eval), cut at
#      REPRO_S seconds; its train_log.jsonl gives the step time on the GPU.
set -uo pipefail
OUT=$(realpath -m "${OUT:-runs/gpu}")  # absolute: the archive step below cds into it
REPRO_S=${REPRO_S:-300}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
python -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" \
  | tee -a "$OUT/gpu.txt"
for size in s m; do
  timeout 150 python benchmarks/dispatch.py --device cuda --dtype bfloat16 --size "$size" --reps 5 \
    --replicas 1 2>&1 | tee "$OUT/dispatch_$size.log" | tail -n 40
done
t0=$(date +%s)
timeout "$REPRO_S" python -m paravt repro --preset quick --variants sft --out "$OUT/repro/quick" \
  --set model.device=cuda --set model.replicas=1 > "$OUT/repro.log" 2>&1
echo "repro rc=$? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/repro.log"
tail -n 30 "$OUT/repro.log"
# every json/jsonl the run wrote (logs, probes, stage markers, summary), without the weights
( cd "$OUT/repro" 2>/dev/null && find . \( -name '*.json' -o -name '*.jsonl' -o -name .repro-stage-done \) -size -4M -print0 \
  | tar czf "$OUT/repro_files.tgz" --null -T - ) || true
