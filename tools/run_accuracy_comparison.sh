#!/usr/bin/env bash
# Accuracy + wall-time comparison of cpuft against Hugging Face Trainer (docs/accuracy.md).
#
# Runs, one after another (the machine has 2 cores; parallel runs would distort both the
# timings and each other):
#   mrpc    MRPC x seeds 42 43 44: cpuft, then the HF baseline, same hyper-parameters
#   check   tools/check_hf_load.py on the seed-42 cpuft output (HF loads it; logits match cpuft predict)
#   others  RTE, STS-B, CoLA (3 epochs) and SST-2 (1 epoch: 67k examples), seed 42: each as a
#           cpuft run followed by its HF baseline, small tasks first, so that whatever finishes
#           in the time there is gives complete cpuft/HF pairs
#   cpuft / hf   the same runs, all cpuft first, then all HF
#   seeds   TASKS="rte:3 cola:3" (task:epochs) x SEEDS, each cpuft run followed by its HF baseline:
#           more seeds of the other tasks, to see HF's spread
# PRECISION=bf16 runs both engines with --bf16 (cpuft: bf16 encoder products; HF: torch CPU
# autocast), recorded as engines "cpuft-bf16" and "hf-bf16" (accuracy_table.py --bf16).
# Every run appends one JSON line to runs/acc/results.jsonl (engine, task, seed, metrics,
# wall and CPU time from /usr/bin/time, exit code, load average: the machine is shared, so the
# wall time alone says little). A failed run is recorded and the
# script goes on. Choose phases with PHASES="mrpc check others" (the default, in that order).
#
# Needs: build/lead/apps/cpuft; /work/venv-golden (torch, transformers, accelerate, sklearn,
# scipy) outside the repo; the all-MiniLM-L6-v2 folder. Python is offline and never used by CI.
set -u
cd "$(dirname "$0")/.."

MODEL=${MODEL:-/root/.cache/cpuft/models/all-MiniLM-L6-v2}
PY=${PY:-/work/venv-golden/bin/python}
MRPC_DATA=${MRPC_DATA:-/work/main/data/glue}    # the MRPC files shipped in the repo
GLUE_DATA=${GLUE_DATA:-/work/shared/data/glue}  # the other tasks (identical MRPC files too)
OUT=runs/acc
RESULTS=$OUT/results.jsonl
PHASES=${PHASES:-"mrpc check others"}
PRECISION=${PRECISION:-fp32}                    # fp32 or bf16
case $PRECISION in
  fp32) SUFFIX="" BF16_FLAG=() ;;
  bf16) SUFFIX="-bf16" BF16_FLAG=(--bf16) ;;
  *) echo "PRECISION must be fp32 or bf16" >&2; exit 2 ;;
esac
SEEDS=${SEEDS:-"42 43 44"}                      # MRPC seeds (e.g. SEEDS=44 to resume)
# Hyper-parameters: identical for both engines (never tune one differently).
HP_BATCH=32 HP_LR=5e-5 HP_WARMUP=0.1 HP_WD=0.01 HP_LEN=128

export OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
BIN=${BIN:-$OUT/bin}                            # where the cpuft binary is snapshotted
mkdir -p "$BIN" "$OUT/logs"

# Snapshot the binary: the lead may rebuild build/lead while these runs (an hour) go on, and
# every cpuft number here must come from one build.
if [[ ! -x $BIN/cpuft || ${RESNAPSHOT:-0} == 1 ]]; then
  cp build/lead/apps/cpuft "$BIN/cpuft"
  { echo "git: $(git rev-parse HEAD) (dirty files: $(git status --short | wc -l))"
    echo "sha256: $(sha256sum "$BIN/cpuft" | cut -d' ' -f1)"
    echo "copied: $(date -Is)"; } > "$BIN/cpuft.version"
fi
CPUFT=$BIN/cpuft

# record ENGINE TASK SEED EPOCHS RC TIMEFILE LOG METRICS_JSON LOAD_BEFORE
# Appends one JSON line: metrics from METRICS_JSON (cpuft's eval_results.json or the HF
# baseline's JSON line), wall time and peak RSS from /usr/bin/time -v, the log's tail on failure.
record() {
  "$PY" - "$@" >> "$RESULTS" <<'EOF'
import json, os, sys
engine, task, seed, epochs, rc, timefile, log, mfile, load0 = sys.argv[1:]
rec = {"engine": engine, "task": task, "seed": int(seed), "epochs": float(epochs), "rc": int(rc)}
try:  # /usr/bin/time -v: "Elapsed (wall clock) time (h:mm:ss or m:ss): 1:23.45"
    for line in open(timefile):
        line = line.strip()
        if line.startswith("Elapsed (wall clock)"):
            parts = [float(x) for x in line.rsplit(" ", 1)[1].split(":")]
            rec["wall_s"] = round(sum(p * 60 ** i for i, p in enumerate(reversed(parts))), 2)
        elif line.startswith("Maximum resident set size"):
            rec["max_rss_mb"] = round(int(line.split(":")[1]) / 1024)
        elif line.startswith("User time (seconds)"):
            rec["user_s"] = float(line.split(":")[1])
        elif line.startswith("System time (seconds)"):
            rec["sys_s"] = float(line.split(":")[1])
        elif line.startswith("Percent of CPU"):
            rec["cpu_percent"] = line.split(":")[1].strip()
except OSError:
    pass
if os.path.exists(mfile):
    text = open(mfile).read().strip()
    if engine.startswith("cpuft"):
        m = json.loads(text)
        rec["metrics"] = {k[5:]: v for k, v in m.items() if k.startswith("eval_") and k[5:] not in
                          ("loss", "runtime", "samples_per_second", "steps_per_second", "samples")}
        rec["eval_loss"] = m.get("eval_loss")
        tr = os.path.join(os.path.dirname(mfile), "train_results.json")
        if os.path.exists(tr):
            t = json.load(open(tr))
            rec["train_runtime_s"] = t.get("train_runtime")
            rec["train_loss"] = t.get("train_loss")
    else:
        h = json.loads(text.splitlines()[-1])
        rec["metrics"] = h["metrics"]
        rec["eval_loss"] = h.get("eval_loss")
        rec["train_runtime_s"] = h.get("train_wall_s")
        rec["train_loss"] = h.get("train_loss")
        rec["versions"] = h.get("versions")
if int(rc) != 0 or "metrics" not in rec:
    rec["error"] = "".join(open(log, errors="replace").readlines()[-15:]) if os.path.exists(log) else "no log"
rec["load_before"] = load0
rec["load_after"] = open("/proc/loadavg").read().split()[:3]
print(json.dumps(rec))
EOF
  tail -n1 "$RESULTS"
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# run_cpuft TASK SEED EPOCHS DATA_DIR
run_cpuft() {
  local task=$1 seed=$2 epochs=$3 data=$4
  local name=cpuft$SUFFIX-$task-$seed
  local dir=$OUT/$name log=$OUT/logs/$name.log
  local load0; load0=$(loadavg)
  echo "== cpuft$SUFFIX $task seed $seed ($epochs epochs) $(date +%T) load $load0"
  rm -f "$dir/eval_results.json"  # never record a previous run's metrics
  /usr/bin/time -v -o "$OUT/logs/$name.time" \
    "$CPUFT" train --model_name_or_path "$MODEL" --task_name "$task" --data_dir "$data" \
    --do_train --do_eval --max_seq_length $HP_LEN --per_device_train_batch_size $HP_BATCH \
    --learning_rate $HP_LR --num_train_epochs "$epochs" --warmup_ratio $HP_WARMUP \
    --weight_decay $HP_WD --save_strategy no --seed "$seed" \
    --output_dir "$dir" --overwrite_output_dir "${BF16_FLAG[@]}" > "$log" 2>&1
  record "cpuft$SUFFIX" "$task" "$seed" "$epochs" $? "$OUT/logs/$name.time" "$log" \
    "$dir/eval_results.json" "$load0"
}

# run_hf TASK SEED EPOCHS DATA_DIR
run_hf() {
  local task=$1 seed=$2 epochs=$3 data=$4
  local name=hf$SUFFIX-$task-$seed
  local js=$OUT/logs/$name.json log=$OUT/logs/$name.log
  local load0; load0=$(loadavg)
  echo "== hf$SUFFIX $task seed $seed ($epochs epochs) $(date +%T) load $load0"
  rm -f "$js"
  /usr/bin/time -v -o "$OUT/logs/$name.time" \
    "$PY" tools/hf_glue_baseline.py --model_dir "$MODEL" --task "$task" --data_dir "$data" \
    --seed "$seed" --epochs "$epochs" --lr $HP_LR --batch $HP_BATCH --warmup_ratio $HP_WARMUP \
    --weight_decay $HP_WD --max_seq_length $HP_LEN --threads 2 --out "$js" "${BF16_FLAG[@]}" \
    > "$log" 2>&1
  record "hf$SUFFIX" "$task" "$seed" "$epochs" $? "$OUT/logs/$name.time" "$log" "$js" "$load0"
}

for phase in $PHASES; do
  case $phase in
    mrpc)
      for seed in $SEEDS; do
        run_cpuft mrpc $seed 3 "$MRPC_DATA"
        run_hf mrpc $seed 3 "$MRPC_DATA"
      done ;;
    check)
      # HF must load cpuft's output folder and reproduce `cpuft predict`'s logits on MRPC dev.
      echo "== check_hf_load $(date +%T)"
      pairs=$OUT/mrpc_dev_pairs.tsv pred=$OUT/pred-mrpc-42
      "$PY" tools/check_hf_load.py --make_pairs "$MRPC_DATA/MRPC/dev.tsv" --pairs "$pairs" \
        --model_dir /nonexistent --logits /nonexistent > /dev/null
      "$CPUFT" predict --model_name_or_path "$OUT/cpuft-mrpc-42" --test_file "$pairs" \
        --output_dir "$pred" > "$OUT/logs/predict-mrpc-42.log" 2>&1 \
        || echo "cpuft predict failed: see $OUT/logs/predict-mrpc-42.log"
      "$PY" tools/check_hf_load.py --pairs "$pairs" --model_dir "$OUT/cpuft-mrpc-42" \
        --logits "$pred/predict_logits_data.tsv" --orig_tokenizer "$MODEL" \
        --json_out "$RESULTS" 2>&1 | tee "$OUT/logs/check_hf_load.log" ;;
    others)
      for t in rte:3 stsb:3 cola:3 sst2:1; do
        run_cpuft "${t%:*}" 42 "${t#*:}" "$GLUE_DATA"
        run_hf "${t%:*}" 42 "${t#*:}" "$GLUE_DATA"
      done ;;
    seeds)
      for seed in $SEEDS; do
        for t in ${TASKS:-rte:3}; do
          run_cpuft "${t%:*}" "$seed" "${t#*:}" "$GLUE_DATA"
          run_hf "${t%:*}" "$seed" "${t#*:}" "$GLUE_DATA"
        done
      done ;;
    cpuft)
      run_cpuft rte 42 3 "$GLUE_DATA"
      run_cpuft stsb 42 3 "$GLUE_DATA"
      run_cpuft cola 42 3 "$GLUE_DATA"
      run_cpuft sst2 42 1 "$GLUE_DATA" ;;
    hf)
      run_hf rte 42 3 "$GLUE_DATA"
      run_hf stsb 42 3 "$GLUE_DATA"
      run_hf cola 42 3 "$GLUE_DATA"
      run_hf sst2 42 1 "$GLUE_DATA" ;;
    *) echo "unknown phase $phase" >&2 ;;
  esac
done
echo "done $(date +%T); results in $RESULTS"
