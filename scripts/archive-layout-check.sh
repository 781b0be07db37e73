#!/usr/bin/env bash
# Builds trainrun against a LibTorch laid out as the official archives and pip wheels lay it out,
# made here from Debian's LibTorch, and runs it end to end (README "Building against LibTorch 2.x,
# a pip torch, CUDA"). Debian's layout (headers in /usr/include, libraries and CMake files under
# /usr/lib/x86_64-linux-gnu) hid two failures every GPU user met: CMake rejected the project when
# LibTorch ships its own fmt headers (as archives and wheels do), and trainrun's std::filesystem
# calls bound to libstdc++ copies torch exports (pytorch#133437). So the tree made here is:
#   libtorch/include/{torch,ATen,c10,caffe2}   copies of Debian's headers
#   libtorch/include/fmt                        fmt's headers, as archives ship them
#   libtorch/include/google/protobuf            protobuf's header names, as archives ship them (of
#                                              another version); here each one is an #error, so the
#                                              ONNX sources compile only if the system's come first
#   libtorch/lib/lib*.so*                       links to Debian's libraries
#   libtorch/share/cmake/{Torch,Caffe2,ATen}    Debian's CMake files, their paths made relative to
#                                              the tree (no /usr/include, no x86_64-linux-gnu)
# then it configures build-archive/ against it (CMAKE_PREFIX_PATH=libtorch, the other -dev packages
# from the system), builds the binary, and checks: the fmt and protobuf branches of CMakeLists.txt were taken,
# libstdc++.so.6 is the binary's first DT_NEEDED, libtorch_cpu comes from the tree, and a short
# quickstart run rotates checkpoints (keep_last 1), resumes, evaluates and exports.
#   usage: scripts/archive-layout-check.sh            (BUILD_DIR=build-archive, JOBS=nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build-archive}
JOBS=${JOBS:-$(nproc)}
T=$PWD/$B/libtorch
DEB=/usr/lib/x86_64-linux-gnu
fail() { echo "archive-layout-check: $*" >&2; exit 1; }
[ -f $DEB/cmake/Torch/TorchConfig.cmake ] || fail "needs Debian's libtorch-dev (scripts/setup.sh)"

# ---- the tree ----------------------------------------------------------------------------------
rm -rf "$T"
mkdir -p "$T/include" "$T/lib" "$T/share/cmake"
for d in torch ATen c10 caffe2 fmt; do cp -r /usr/include/$d "$T/include/"; done
(cd /usr/include && find google/protobuf -name '*.h' -o -name '*.inc') | while read -r h; do
  mkdir -p "$T/include/$(dirname "$h")"
  echo "#error \"$h: the archive's protobuf header was used, not the system's (CMakeLists.txt, system_protobuf)\"" >"$T/include/$h"
done
for f in $DEB/lib{torch,torch_cpu,torch_global_deps,c10,shm}.so*; do ln -s "$f" "$T/lib/"; done
for d in Torch Caffe2 ATen; do cp -r $DEB/cmake/$d "$T/share/cmake/"; done
# Debian's files sit one folder deeper (lib/x86_64-linux-gnu/cmake/X) than an archive's
# (share/cmake/X), and name the libraries by their multiarch folder.
sed -i 's#/\.\./\.\./\.\./\.\./"#/../../../"#' "$T/share/cmake/Torch/TorchConfig.cmake" "$T/share/cmake/Caffe2/Caffe2Config.cmake"
sed -i 's#${_IMPORT_PREFIX}/\.\./include#${_IMPORT_PREFIX}/include#' "$T/share/cmake/Caffe2/Caffe2Targets.cmake"
sed -i 's#${_IMPORT_PREFIX}/x86_64-linux-gnu/#${_IMPORT_PREFIX}/lib/#' "$T/share/cmake/Caffe2/Caffe2Targets-relwithdebinfo.cmake"
sed -i 's#"/usr/include/ATen"#"${CMAKE_CURRENT_LIST_DIR}/../../../include/ATen"#' "$T/share/cmake/ATen/ATenConfig.cmake"
# Archives and wheels link protobuf into libtorch_cpu (CAFFE2_LINK_LOCAL_PROTOBUF: their
# Caffe2Config.cmake reads "# Protobuf / if(ON)", checked on the 2.14.0 archive and 2.6.0 wheel
# trees), so finding Torch does not look for protobuf; Debian's looks for the system's.
sed -i '/^# Protobuf$/{n;s/^if(OFF)$/if(ON)/}' "$T/share/cmake/Caffe2/Caffe2Config.cmake"
grep -A1 '^# Protobuf$' "$T/share/cmake/Caffe2/Caffe2Config.cmake" | grep -c '^if(ON)$' >/dev/null ||
  fail "the tree's Caffe2Config.cmake still looks for protobuf"
if grep -rln 'x86_64-linux-gnu\|/usr/include\|\.\./\.\./\.\./\.\./' "$T/share/cmake"; then
  fail "a Debian path is left in the tree's CMake files (above)"
fi

# ---- configure and build -----------------------------------------------------------------------
t=$SECONDS
rm -f "$B/CMakeCache.txt"  # configured afresh, as on a clean clone (a cached find hid a failure once)
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$T" -DTRAINRUN_BUILD_TESTS=OFF \
  >"$B/configure.log" 2>&1 || { cat "$B/configure.log"; fail "configure failed"; }
grep -q "^TORCH_INSTALL_PREFIX:.*=$T" "$B/CMakeCache.txt" 2>/dev/null ||
  grep -q "Torch_DIR:PATH=$T/share/cmake/Torch" "$B/CMakeCache.txt" || fail "CMake did not take Torch from $T"
[ -L "$B/system_fmt/fmt" ] || fail "CMakeLists.txt's branch for a LibTorch with its own fmt was not taken"
[ -L "$B/system_protobuf/google" ] || fail "CMakeLists.txt's branch for a LibTorch with its own protobuf was not taken"
cmake --build "$B" -j"$JOBS" --target trainrun >"$B/build.log" 2>&1 || { tail -40 "$B/build.log"; fail "build failed"; }
echo "archive-layout-check: configured and built in $((SECONDS - t)) s"

# ---- what the GPU users' stack needs ---------------------------------------------------------
# Whole outputs read before matching: under pipefail, `ldd ... | grep -q` fails whenever grep
# exits at its match before ldd has written everything (ldd dies of SIGPIPE); CI saw that.
needed=$(readelf -d "$B/trainrun")
first=$(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$needed" | sed -n 1p)
[ "$first" = libstdc++.so.6 ] || fail "$B/trainrun's first DT_NEEDED is $first, not libstdc++.so.6"
libs=$(ldd "$B/trainrun")
if ! grep -q "libtorch_cpu.so.* => $T/lib/" <<<"$libs"; then
  grep -E 'torch|c10|trainrun' <<<"$libs" >&2 || true
  readelf -d "$B/trainrun" "$B"/libtrainrun.so | grep -E 'NEEDED|RUNPATH|RPATH|File:' >&2 || true
  fail "libtorch_cpu does not load from $T/lib"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args="recipes/quickstart.yaml data.max_train_samples=640 data.max_eval_samples=200 world.nproc_per_node=1
      world.threads_per_proc=2 output.dir=$work/run output.save_every=2 output.keep_last=1 train.log_every_steps=5"
# shellcheck disable=SC2086
"$B/trainrun" $args >"$work/first.log" 2>&1 || { cat "$work/first.log"; fail "the quickstart run failed"; }
n=$(find "$work/run" -maxdepth 1 -name 'checkpoint-[0-9]*' | wc -l)
[ -f "$work/run/checkpoint-10/model.safetensors" ] && [ "$n" -le 2 ] || fail "checkpoints not rotated: $(ls "$work/run")"
# shellcheck disable=SC2086
"$B/trainrun" $args train.epochs=2 >"$work/resume.log" 2>&1 || { cat "$work/resume.log"; fail "the resumed run failed"; }
grep -q "Resuming from" "$work/resume.log" || fail "the second run did not resume"
"$B/trainrun" eval recipes/quickstart.yaml --checkpoint "$work/run/checkpoint-20" data.max_eval_samples=200 \
  world.nproc_per_node=1 >"$work/eval.log" 2>&1 || { cat "$work/eval.log"; fail "eval failed"; }
"$B/trainrun" export recipes/quickstart.yaml --checkpoint "$work/run/checkpoint-20" --format torchscript \
  --output "$work/model.pt" >"$work/export.log" 2>&1 || { cat "$work/export.log"; fail "export failed"; }
echo "archive-layout-check: ok (libstdc++.so.6 first, libtorch from $T/lib, checkpoints rotated, resumed, evaluated, exported)"
