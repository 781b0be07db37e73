#!/usr/bin/env bash
# Downloads Debian 13 (trixie)'s CUDA LibTorch and the headers it needs, and unpacks them into one
# folder without installing anything: for `scripts/check-libtorch.sh --debian13-cuda`.
#
#   scripts/fetch-debian13-cuda.sh            prints the unpacked include folder (DIR/root/usr/include)
#
# DIR is $TRIXIE_CUDA_DIR (default /tmp/libtorch-cuda-2.6). From trixie main contrib non-free it
# fetches, with apt-get download (signatures checked against the system's debian-archive-keyring):
#   libtorch-cuda-dev   LibTorch 2.6 headers and CMake config (CUDA 12.4, USE_C10D_NCCL)
#   nvidia-cuda-dev     the CUDA 12.4 toolkit headers (cuda_runtime_api.h, cublas_v2.h, ...)
#   libcu++-dev libcub-dev libthrust-dev   the CCCL headers nvidia-cuda-dev depends on (cuda_fp16.h
#                       includes libcu++'s <nv/target>)
#   libnccl-dev         nccl.h (NCCL 2.22)
#   libgloo-cuda-dev    gloo's headers as the CUDA LibTorch was built with them (GLOO_USE_CUDA 1)
# (about 1.05 GB down, 2.7 GB unpacked; the .deb files are deleted after unpacking) and unpacks each
# with dpkg -x into DIR/root. No shared libraries (libtorch-cuda-2.6: 480 MB) and no nvidia-cudnn
# (its install script downloads cuDNN from NVIDIA): a compile check needs neither. The apt state
# (sources list, package lists, cache) lives in DIR/apt; the machine's own sources, package lists and
# installed packages are not touched. A second run with DIR/root complete does nothing.
set -euo pipefail

dir=${TRIXIE_CUDA_DIR:-/tmp/libtorch-cuda-2.6}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=(libtorch-cuda-dev nvidia-cuda-dev libcu++-dev libcub-dev libthrust-dev libnccl-dev libgloo-cuda-dev)
stamp=$dir/root/.unpacked

if [[ -f "$stamp" ]]; then
  echo "$dir/root/usr/include"
  exit 0
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -f "$keyring" ]] || { echo "fetch-debian13-cuda: $keyring is missing: apt-get install debian-archive-keyring" >&2; exit 2; }

mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/empty" "$dir/debs"
echo "deb [signed-by=$keyring] $mirror trixie main contrib non-free" >"$dir/apt/trixie.list"
apt_opts=(
  -o Dir::Etc::SourceList="$dir/apt/trixie.list" -o Dir::Etc::SourceParts="$dir/apt/empty"
  -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts="$dir/apt/empty"
  -o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" -o Dir::State::status=/dev/null
  -o APT::Architecture=amd64 -o APT::Architectures=amd64
)
# apt's download sandbox user cannot write into a folder root made elsewhere.
[[ $(id -u) == 0 ]] && apt_opts+=(-o APT::Sandbox::User=root)

echo "fetch-debian13-cuda: trixie's package lists into $dir/apt" >&2
apt-get "${apt_opts[@]}" -qq update >&2
echo "fetch-debian13-cuda: downloading ${packages[*]}" >&2
(cd "$dir/debs" && apt-get "${apt_opts[@]}" -qq download "${packages[@]}" >&2)

rm -rf "$dir/root"
mkdir -p "$dir/root"
for deb in "$dir"/debs/*.deb; do
  dpkg -x "$deb" "$dir/root"
  dpkg-deb -f "$deb" Package Version | sed 's/^[^:]*: //' | paste -sd' ' >>"$dir/root/.versions"
done
rm -f "$dir"/debs/*.deb
for f in torch/csrc/api/include/torch/torch.h cuda_runtime_api.h nccl.h gloo/config.h; do
  [[ -f "$dir/root/usr/include/$f" ]] || { echo "fetch-debian13-cuda: $f missing after unpacking" >&2; exit 1; }
done
mv "$dir/root/.versions" "$stamp"
sed 's/^/fetch-debian13-cuda: unpacked /' "$stamp" >&2
echo "$dir/root/usr/include"
