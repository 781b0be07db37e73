#!/usr/bin/env bash
# deb-check: the .deb as a new user of a Debian release gets it. In a fresh minimal Debian root, a
# clean clone of the committed HEAD: scripts/setup.sh, a build without the tests, `cpack -G DEB`.
# Then, in a second fresh root of the same release, nothing but `apt-get install ./trainrun_*.deb`
# (which pulls the Depends and the Recommends, the quickstart's data) and the quickstart with the
# installed binary and recipe; then the plugin example built there against the package's CMake
# config (/usr/lib/cmake/trainrun, with the -dev packages the .deb Suggests) and trained with.
#   usage: scripts/deb-check.sh [--suite bookworm|trixie] [--keep]    (from the checkout, as root)
#   --keep: leave both roots in /tmp; QUICKSTART_ARGS='data.max_train_samples=6400' shortens the run
# Says the .deb's size, its Depends line, and each stage's exit code and time; exits non-zero when
# a stage failed. Each root starts from a cached minimal base, /var/tmp/trainrun-fresh-base-SUITE.tar
# (debootstrap --variant=minbase, made on the first run); the roots are
# /tmp/trainrun-deb-{build,install}-SUITE, the .deb and the logs are kept in /tmp/trainrun-deb-SUITE/.
set -euo pipefail
keep=""; suite=bookworm
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --suite) suite=$2; shift ;;
    --suite=*) suite=${1#--suite=} ;;
    *) echo "deb-check: unknown argument $1 (use --suite bookworm|trixie, --keep)"; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "deb-check: needs root (chroot, mount)" >&2; exit 2; }
repo=$(git rev-parse --show-toplevel)
cache=/var/tmp/trainrun-fresh-base-$suite.tar
build_root=/tmp/trainrun-deb-build-$suite
install_root=/tmp/trainrun-deb-install-$suite
out=/tmp/trainrun-deb-$suite
if [ ! -s "$cache" ]; then  # a minbase root with the host's resolv.conf
  command -v debootstrap >/dev/null || { echo "deb-check: apt-get install debootstrap first"; exit 2; }
  echo "deb-check: making a minimal Debian $suite base (once)..."
  tmp=$(mktemp -d /var/tmp/fresh-base.XXXXXX)
  chmod 755 "$tmp"
  debootstrap --variant=minbase "$suite" "$tmp" >/dev/null
  cp /etc/resolv.conf "$tmp/etc/resolv.conf"
  tar -C "$tmp" -cf "$cache" . && rm -rf "$tmp"
fi

unmount_all() {  # everything mounted under root $1, deepest first
  { findmnt -rn -o TARGET | grep -E "^$1(/|$)" || true; } | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}
cleanup() {
  for r in "$build_root" "$install_root"; do
    unmount_all "$r"
    [ -n "$keep" ] || rm -rf "$r"
  done
}
trap cleanup EXIT
trap "exit 143" TERM INT
fresh_root() {  # a pristine copy of the base at $1, with /proc and /dev, and localhost resolving
  unmount_all "$1"; rm -rf "$1"; mkdir -p "$1"; chmod 755 "$1"; tar -C "$1" -xf "$cache"
  mount -t proc proc "$1/proc"; mount --bind /dev "$1/dev"; mount --bind /dev/pts "$1/dev/pts"
  grep -qs localhost "$1/etc/hosts" || echo "127.0.0.1 localhost" >>"$1/etc/hosts"  # as Debian's installer writes
}
in_root() {  # ROOT COMMAND: COMMAND in ROOT as a fresh login would run it
  chroot "$1" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive /bin/bash -c "$2"
}
summary=()
stage() {  # NAME LOG ROOT COMMAND: runs it, logs it, records exit code and time
  local name=$1 log=$2 root=$3 cmd=$4 t=$SECONDS rc=0
  echo "deb-check: $name..."
  in_root "$root" "$cmd" >"$log" 2>&1 || rc=$?
  summary+=("$name: exit $rc after $((SECONDS - t)) s (log: $log)")
  [ $rc -eq 0 ] || { tail -20 "$log"; failed=1; }
  return $rc
}
failed=0
rm -rf "$out"; mkdir -p "$out"
head=$(git -C "$repo" rev-parse --short HEAD)

# 1. Build root: setup, build (no tests: no libgtest-dev), cpack.
fresh_root "$build_root"
git clone -q "$repo" "$build_root/project"
stage "build root: setup.sh, build, cpack -G DEB ($head)" "$out/build.log" "$build_root" \
  "cd /project && scripts/setup.sh && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINRUN_BUILD_TESTS=OFF &&
   cmake --build build -j$(nproc) && cd build && cpack -G DEB" || { printf '%s\n' "${summary[@]}"; exit 1; }
deb=$(ls "$build_root"/project/build/trainrun_*.deb)
cp "$deb" "$out/"
deb=$out/$(basename "$deb")
dpkg-deb -I "$deb" >"$out/control.txt"
dpkg-deb -c "$deb" >"$out/contents.txt"
unmount_all "$build_root"; [ -n "$keep" ] || rm -rf "$build_root"

# 2. Install root: the .deb alone, then the quickstart from the installed recipe.
fresh_root "$install_root"
cp "$deb" "$install_root/tmp/"
stage "install root: apt-get install ./$(basename "$deb")" "$out/install.log" "$install_root" \
  "apt-get update -qq && cd /tmp && apt-get install -y -q ./$(basename "$deb")" || { printf '%s\n' "${summary[@]}"; exit 1; }
stage "trainrun /usr/share/trainrun/recipes/quickstart.yaml ${QUICKSTART_ARGS:-}" "$out/quickstart.log" "$install_root" \
  "cd /tmp && trainrun --version && trainrun /usr/share/trainrun/recipes/quickstart.yaml output.dir=/tmp/quickstart ${QUICKSTART_ARGS:-} &&
   grep eval_accuracy /tmp/quickstart/metrics.jsonl | tail -1" || true

# 3. A plugin built against the installed package (examples/custom_model), trained by it.
mkdir -p "$install_root/tmp/custom_model"
cp "$repo"/examples/custom_model/{CMakeLists.txt,tiny_cnn.cpp,recipe.yaml} "$install_root/tmp/custom_model/"
suggests=$(dpkg-deb -f "$deb" Suggests | tr -d ',')
stage "plugin: apt-get install $suggests make; find_package(trainrun); train" "$out/plugin.log" "$install_root" \
  "apt-get install -y -q --no-install-recommends $suggests make && cd /tmp/custom_model &&
   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build &&
   trainrun recipe.yaml 'plugins=[/tmp/custom_model/build/libcustom_model.so]' data.max_train_samples=1280 output.dir=/tmp/cm &&
   grep eval_accuracy /tmp/cm/metrics.jsonl | tail -1" || true

echo
echo "deb-check on Debian $suite, HEAD $head:"
echo "  $(basename "$deb"): $(stat -c %s "$deb") bytes ($(du -h "$deb" | cut -f1))"
sed -n 's/^ \(Depends\|Recommends\|Suggests\|Installed-Size\):/  \1:/p' "$out/control.txt"
printf '  %s\n' "${summary[@]}"
echo "  quickstart's last evaluation: $(grep eval_accuracy "$out/quickstart.log" | tail -1 || echo none)"
echo "  plugin run's last evaluation: $(grep eval_accuracy "$out/plugin.log" | tail -1 || echo none)"
exit $failed
