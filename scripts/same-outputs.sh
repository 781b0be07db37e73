#!/usr/bin/env bash
# Runs the shipped recipes (shortened by overrides) with two trainrun builds and compares what
# they write: logs and metrics.jsonl (timings masked), trainer_state.json, every checkpoint file
# and the weights, byte for byte. Issue 27's "byte-identical to before" check:
#   scripts/same-outputs.sh OLD_BUILD_DIR NEW_BUILD_DIR [WORK_DIR]
# A build dir holds trainrun and its .so files (a copy works: they are found by LD_LIBRARY_PATH).
set -euo pipefail
old=$(realpath "$1"); new=$(realpath "$2"); work=${3:-$(mktemp -d /tmp/same-outputs.XXXXXX)}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"

# A pets-style folder (file names carry the label), made by PIL with a fixed seed.
pets="$work/pets"
if [ ! -d "$pets" ]; then
  /usr/bin/python3 - "$pets" <<'PY'
import sys, os, random
from PIL import Image
root = sys.argv[1]; os.makedirs(root)
rng = random.Random(7)
for breed, tint in [("Abyssinian", (200, 120, 60)), ("beagle", (90, 140, 210)), ("pug", (60, 200, 90))]:
    for i in range(1, 25):
        img = Image.new("RGB", (80 + rng.randrange(40), 70 + rng.randrange(40)))
        px = img.load()
        for y in range(img.height):
            for x in range(img.width):
                px[x, y] = tuple(min(255, max(0, c + rng.randrange(-60, 60))) for c in tint)
        img.save(os.path.join(root, f"{breed}_{i}.jpg"), quality=90)
PY
fi

run() {  # run BUILD OUT RECIPE ARGS...
  local build=$1 out=$2; shift 2
  ( cd "$repo" && LD_LIBRARY_PATH="$build" "$build/trainrun" "$@" "output.dir=$out" ) >>"$out.stdout" 2>>"$out.stderr" || echo "exit $? ($out)" >>"$out.stdout"
}

runs() {  # runs BUILD DIR
  local b=$1 d=$2
  mkdir -p "$d"
  run "$b" "$d/quickstart" recipes/quickstart.yaml train.log_every_steps=50 output.save_every=200 data.max_train_samples=12800
  run "$b" "$d/mnist" recipes/mnist_basicnet.yaml data.dataset.root=/usr/share/datasets/fashion-mnist \
      data.dataset.download=false train.epochs=3 data.max_train_samples=2560 data.max_eval_samples=2000 \
      'callbacks=[{name: early_stopping, patience: 1}]' output.keep_last=2
  # interrupted and resumed: the first run stops at step 30 (max_steps is not a key: an epoch
  # of 1280 examples is 20 steps), the second resumes from its newest checkpoint.
  run "$b" "$d/resume" recipes/mnist_basicnet.yaml data.dataset.root=/usr/share/datasets/fashion-mnist \
      data.dataset.download=false train.epochs=1 data.max_train_samples=1280 data.max_eval_samples=500 output.save_every=7
  run "$b" "$d/resume" recipes/mnist_basicnet.yaml data.dataset.root=/usr/share/datasets/fashion-mnist \
      data.dataset.download=false train.epochs=2 data.max_train_samples=1280 data.max_eval_samples=500 output.save_every=7
  run "$b" "$d/pets" recipes/pets_resnet50d.yaml model.name=resnet18 model.pretrained=false \
      data.dataset.root="$pets" data.dataset.download=false 'data.train_transforms=[{random_resized_crop: {size: [64, 64], scale: [0.5, 1.0]}}, to_tensor, {normalize: {mean: model, std: model}}]' \
      'data.eval_transforms=[{resize: {size: [64, 64]}}, to_tensor, {normalize: {mean: model, std: model}}]' \
      data.batch_size=8 data.workers=2 train.epochs=2 precision=bf16 train.grad_accum_steps=2 train.max_grad_norm=1.0 \
      world.nproc_per_node=2 world.master_port=0 train.log_every_steps=2
}

mask() {  # timings, progress lines and paths differ between any two runs
  sed -E -e 's/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g' -e 's/^\[[0-9-]+ [0-9:.]+\]/[DATE]/' -e '/(^|\r)step [0-9]+\/[0-9]+ /d' -e '/elapsed [0-9:]+/d' \
         -e "s/([\"'][a-z_0-9]*(runtime|per_second|_time|time_s|elapsed|data_wait|timestamp|wall)[a-z_]*[\"']): ?[-0-9.e+]+/\\1: T/g" \
         -e 's/[0-9]+(\.[0-9]+)?(e-?[0-9]+)? ?(s|ms|it\/s|s\/it|examples\/s|samples\/s)\b/T/g' \
         -e "s#$old|$new#BUILD#g" -e "s#$work/(a|b)/#RUN/#g" "$1"
}

if [ -z "${COMPARE_ONLY:-}" ]; then  # COMPARE_ONLY=1: compare the runs already in WORK_DIR again
  rm -rf "$work/a" "$work/b"
  runs "$old" "$work/a"
  runs "$new" "$work/b"
fi
tensors() { unzip -Z1 "$1" | grep '/data/[0-9]*$' | while read -r e; do unzip -p "$1" "$e" | sha256sum; done | sort; }

status=0
while IFS= read -r f; do
  rel=${f#"$work/a/"}
  g="$work/b/$rel"
  if [ ! -e "$g" ]; then echo "only in old: $rel"; status=1; continue; fi
  case "$rel" in
    # LibTorch's optimizer archive names each parameter's state by its address, which differs
    # from run to run: the same tensors, in some order.
    *optimizer.pt) [ "$(tensors "$f")" = "$(tensors "$g")" ] || { echo "differs: $rel"; status=1; } ;;
    *.safetensors|*.pt|*.bin|*rng_state*|*scheduler*) cmp -s "$f" "$g" || { echo "differs: $rel"; status=1; } ;;
    *) diff -q <(mask "$f") <(mask "$g") >/dev/null || { echo "differs: $rel"; diff <(mask "$f") <(mask "$g") | head -8 || true; status=1; } ;;
  esac
done < <(find "$work/a" -type f ! -name 'events.out.tfevents*' | sort)
while IFS= read -r g; do rel=${g#"$work/b/"}; [ -e "$work/a/$rel" ] || { echo "only in new: $rel"; status=1; }; done < <(find "$work/b" -type f ! -name 'events.out.tfevents*' | sort)
n=$(find "$work/a" -type f ! -name 'events.out.tfevents*' | wc -l)  # wall times inside; metrics.jsonl has their scalars
[ $status = 0 ] && echo "same-outputs: $n files the same (timings masked) in $work" || echo "same-outputs: DIFFERENT ($work)"
exit $status
