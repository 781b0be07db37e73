#!/usr/bin/env bash
# scripts/sample-photos.sh [DIR] [PER_CLASS]: a folder of images in image_folder's layout,
# DIR/CLASS/KEY.png (default data/photos, about 20 a class), to try docs/recipes/own-images.yaml
# before you have photos of your own. The images are Fashion-MNIST's (Debian's
# dataset-fashion-mnist, which `make demo` installs), written by `trainrun shards` and unpacked
# by class: ten classes, 28x28 grey PNGs ("T-shirt/top" becomes the folder T-shirt-top).
# Run from the repository root after `make demo` (TRAINRUN=path/to/trainrun otherwise).
set -euo pipefail
dir=${1:-data/photos}
per_class=${2:-20}
trainrun=${TRAINRUN:-build/trainrun}
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
  echo "sample-photos.sh: $dir is not empty; give another folder" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Fashion-MNIST's training images are in no class order: the first 10 x PER_CLASS hold about
# PER_CLASS of each class.
"$trainrun" shards recipes/quickstart.yaml data.max_train_samples=$((10 * per_class)) data.max_eval_samples=1 \
  --output "$tmp/shards" >/dev/null
mkdir -p "$tmp/files" "$dir"
tar -xf "$tmp"/shards/train-000000.tar -C "$tmp/files"
for cls in "$tmp"/files/*.cls; do
  key=$(basename "$cls" .cls)
  name=$(sed -n "$(($(cat "$cls") + 1))p" "$tmp/shards/classes.txt" | tr '/ ' '-_')
  mkdir -p "$dir/$name"
  mv "$tmp/files/$key.png" "$dir/$name/$key.png"
done
echo "$dir: $(find "$dir" -name '*.png' | wc -l) images in $(find "$dir" -mindepth 1 -type d | wc -l) class folders"
