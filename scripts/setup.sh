#!/usr/bin/env bash
# Installs the Debian packages trainrun builds and runs with (and, with --test, what the tests
# compare against; with --sanitize, that and clang for the sanitizer and fuzzing builds; with
# --docs, mkdocs, Chromium and matplotlib for the documentation site). Quick when everything is
# already there.
set -euo pipefail
# Debian 12 (bookworm) and 13 (trixie) name a few packages differently; a release without a
# VERSION_ID (testing, sid) is taken as 13 or later.
. /etc/os-release
release=${VERSION_ID%%.*}
release=${release:-99}
tcmalloc=libtcmalloc-minimal4
[ "$release" -ge 13 ] && tcmalloc=libtcmalloc-minimal4t64  # the 64-bit time_t rename
packages=(g++ cmake ninja-build ccache pkg-config zlib1g-dev libdeflate-dev libtorch-dev libgloo-dev libyaml-cpp-dev
          nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev libopencv-dev libjpeg62-turbo-dev libopenblas0-openmp
          libcurl4-openssl-dev libarchive-dev libssl-dev libelf-dev libcsv-dev "$tcmalloc"
          libonnx-dev libprotobuf-dev  # ONNX export: onnx's protobuf classes and checker (runner/export/onnx.cpp)
          dataset-fashion-mnist
          dpkg-dev file)  # cpack -G DEB: dpkg-shlibdeps for the Depends line; CPack finds ELF files with `file`
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--sanitize" ]; then
  # The real launchers the distributed tests run trainrun under: torchrun (python3-torch),
  # mpirun (openmpi-bin), srun/sbatch (slurm-wlm + munge), and a terminal (tmux) for Ctrl-C.
  packages+=(libgtest-dev python3 python3-torch python3-torchvision python3-numpy python3-sklearn python3-omegaconf
             openmpi-bin slurm-wlm munge tmux iproute2 procps strace
             patchelf)  # tests/cli/libstdcxx_clash_test.cpp: a binary with a stand-in libtorch_cpu (pytorch#133437)
  # Python's real safetensors reads what trainrun writes and writes what it reads (tests/py/st.py);
  # Debian packages it from 13 on (Debian 12's tests use st.py's own reader of the format).
  [ "$release" -ge 13 ] && packages+=(python3-safetensors)
  # The exported ONNX files, read by the real onnx (checker) on both, and run by onnxruntime,
  # which Debian packages from 13 on (tests/py/onnx_check.py).
  packages+=(python3-onnx)
  [ "$release" -ge 13 ] && packages+=(python3-onnxruntime)
fi
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--sanitize" ] || [ "${1:-}" = "--docs" ]; then
  # The documentation site (docs/, mkdocs.yml): every page is built with `mkdocs build --strict`
  # by the suite (tests/docs/), so the tests need mkdocs and its theme (pure Python, small).
  packages+=(mkdocs mkdocs-material python3-pymdownx)
fi
if [ "${1:-}" = "--docs" ]; then
  # make docs / make docs-check: the site opened in a real browser (headless Chromium, driven over
  # the DevTools protocol with python3-websocket: tests/docs/browser_check.py) and the benchmark
  # plots (bench/plot.py, matplotlib).
  packages+=(chromium python3-websocket python3-matplotlib)
fi
if [ "${1:-}" = "--sanitize" ]; then
  # Sanitizer builds and libFuzzer (make test-asan, test-tsan, fuzz): clang and its runtimes.
  packages+=(clang libclang-rt-dev)  # the release's default clang (14 on Debian 12) and its runtimes
fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do
  # Debian 13's CUDA builds (contrib/non-free: libtorch-cuda-dev, libgloo-cuda-dev,
  # python3-torch-cuda) conflict with and replace the CPU packages: where one is installed it is
  # the LibTorch to build against, and installing the CPU one would remove it (README "Building
  # against LibTorch 2.x, a pip torch, CUDA").
  case $p in
    libtorch-dev|libgloo-dev) installed "${p%-dev}-cuda-dev" && continue ;;
    python3-torch) installed python3-torch-cuda && continue ;;
  esac
  installed "$p" || missing+=("$p")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# LibTorch's BLAS: OpenBLAS's OpenMP build shares torch's OpenMP threads; its pthread build (which
# libopencv-dev pulls in and Debian then selects) runs a second pool beside them. Select the
# OpenMP build where both are installed and the pthread one is selected.
use_openblas_openmp() {
  local arch=x86_64-linux-gnu lib
  for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
    local alt="$lib-$arch" want="/usr/lib/$arch/openblas-openmp/$lib"
    if [ -e "$want" ] && update-alternatives --query "$alt" 2>/dev/null | grep -q "^Value: .*openblas-pthread"; then
      $sudo update-alternatives --quiet --set "$alt" "$want"
    fi
  done
}
if [ ${#missing[@]} -eq 0 ]; then use_openblas_openmp; exit 0; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
use_openblas_openmp
