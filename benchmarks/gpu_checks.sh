#!/usr/bin/env bash
# The GPU checks of docs/performance.md as ONE call, run from the repository root:
#   0. the wheels: every *.whl under WHEELS (default shared/wheels) is installed offline first, so
#      a bare device machine gets the project's dependencies from what the call carried;
#   1. the hot path beside the CPU (benchmarks/device_table.py): the trainer's seconds per row at
#      batch BATCH (default 32; SFT step and GRPO update), the device→host syncs per SFT step, per
#      update and per decode step, and the rollout's rows per decode forward, measured on the CPU
#      and, when CUDA is there, on the GPU; the table goes into DOC (default docs/performance.md,
#      section "On a GPU: the hot path beside the CPU") and the JSON lines into OUT;
#   2. with FULL=1 and a GPU: K parallel vs sequential dispatch (dispatch.py, s and m models) and
#      the trainer of `paravt repro --preset quick --variants sft` on CUDA, cut at REPRO_S seconds.
# Without a GPU only the CPU column is measured (the path tests/test_gpu_checks.py runs).
# Each part has its own time limit so the script ends on time whatever a part does.
set -uo pipefail
OUT=$(realpath -m "${OUT:-runs/gpu}")
DOC=${DOC:-docs/performance.md}
WHEELS=${WHEELS:-shared/wheels}
BATCH=${BATCH:-32}
REPEATS=${REPEATS:-3}
VIDEOS=${VIDEOS:-16}
DATA=${DATA:-$OUT/row_build}
PART_S=${PART_S:-240}
PY=${PYTHON:-python}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G "$WHEELS/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --find-links "$WHEELS" "$WHEELS"/*.whl 2>&1 | tail -n 3
fi
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" \
  | tee "$OUT/versions.txt"
cuda=$("$PY" -c "import torch; print(int(torch.cuda.is_available()))")
table=()
for dev in cpu cuda; do
  if [ "$dev" = cuda ] && [ "$cuda" != 1 ]; then echo "no CUDA device: the CPU column only"; continue; fi
  dtype=float32; [ "$dev" = cuda ] && dtype=${GPU_DTYPE:-float32}
  timeout "$PART_S" "$PY" benchmarks/device_table.py --device "$dev" --dtype "$dtype" --out "$DATA" \
    --videos "$VIDEOS" --batch "$BATCH" --repeats "$REPEATS" > "$OUT/$dev.json" 2> "$OUT/$dev.log"
  rc=$?
  if [ $rc -eq 0 ] && [ -s "$OUT/$dev.json" ]; then table+=("$OUT/$dev.json"); cat "$OUT/$dev.json"
  else echo "$dev: rc=$rc"; tail -n 20 "$OUT/$dev.log"; fi
done
[ ${#table[@]} -gt 0 ] && "$PY" benchmarks/device_table.py --table "${table[@]}" --doc "$DOC"
if [ "${FULL:-0}" = 1 ] && [ "$cuda" = 1 ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
  for size in s m; do
    timeout 150 "$PY" benchmarks/dispatch.py --device cuda --dtype bfloat16 --size "$size" --reps 5 \
      --replicas 1 2>&1 | tee "$OUT/dispatch_$size.log" | tail -n 40
  done
  t0=$(date +%s)
  timeout "${REPRO_S:-300}" "$PY" -m paravt repro --preset quick --variants sft --out "$OUT/repro/quick" \
    --set model.device=cuda --set model.replicas=1 > "$OUT/repro.log" 2>&1
  echo "repro rc=$? after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/repro.log"
  ( cd "$OUT/repro" 2>/dev/null && find . \( -name '*.json' -o -name '*.jsonl' \) -size -4M -print0 \
    | tar czf "$OUT/repro_files.tgz" --null -T - ) || true
fi
[ ${#table[@]} -gt 0 ]
