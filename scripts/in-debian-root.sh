#!/usr/bin/env bash
# Runs the README's test command on a clean clone of this checkout's HEAD inside a fresh, minimal
# Debian root of another release, as a new user's machine of that release starts: CI's second
# stack (Debian 13: LibTorch 2.6, Python 3.13, torch 2.6).
#
#   scripts/in-debian-root.sh SUITE [COMMAND]     as root; e.g. scripts/in-debian-root.sh trixie
#   scripts/in-debian-root.sh --tools             installs only what it needs (debootstrap, git)
#
# SUITE is a Debian codename (trixie = 13, bookworm = 12). COMMAND runs in the clone (default:
# `bash .ci/run` without CI=true, which is `make test`: set-up with apt, build, the whole suite).
# The root is made with debootstrap (installed first if missing, as git is) in a temporary folder under
# /var/tmp and removed at the end, with everything mounted in it. Exits with COMMAND's status.
#
# CI prepares the root while its first stage runs (making a root and apt are mostly one core's
# work; the build and suite beside them use both): with ROOT_FIRST set, that command runs in the
# clone first (e.g. 'scripts/setup.sh --test'); with ROOT_GO set too, COMMAND then waits until the
# file ROOT_GO names exists on this machine. A failing ROOT_FIRST is the exit status.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
suite=$1
cmd=${2:-bash .ci/run}
[ "$(id -u)" -eq 0 ] || { echo "in-debian-root: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
need=()  # a minimal root (CI's, fresh-check's) may have neither
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v git >/dev/null || need+=(git ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# `--tools`: only those, before a run in the background (whose apt would meet another's lock).
[ "$suite" = --tools ] && exit 0
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
root=$(mktemp -d /var/tmp/trainrun-"$suite".XXXXXX)
chmod 755 "$root"  # a real root is 755; mktemp's 700 breaks packages that su to a system user
cleanup() {  # everything mounted under the root (proc, dev, what tests mount), deepest first
  { findmnt -rn -o TARGET | grep -E "^$root(/|$)" || true; } | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  rm -rf "$root" "$root.debootstrap.log"
}
trap cleanup EXIT
trap "exit 143" TERM INT  # a timeout or Ctrl-C still unmounts and removes the root
start=$(date +%s)
debootstrap --variant=minbase "$suite" "$root" >"$root.debootstrap.log" 2>&1 ||
  { tail -5 "$root.debootstrap.log" >&2; rm -f "$root.debootstrap.log"; exit 1; }
rm -f "$root.debootstrap.log"
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q "$repo" "$root/project"
# The root mounted on itself: `ip netns exec` (the two-node tests' network namespaces) makes `/`
# a slave mount, which fails where `/` is not a mount point ("mount --make-rslave /" failed:
# Invalid argument) and those tests would skip.
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /project && $1"
}
echo "in-debian-root: Debian $suite root ready in $(( $(date +%s) - start )) s; running '$cmd' on $(git -C "$repo" rev-parse --short HEAD)"
set +e
if [ -n "${ROOT_FIRST:-}" ]; then
  in_root "$ROOT_FIRST" || { rc=$?; echo "in-debian-root: '$ROOT_FIRST' exit $rc in Debian $suite"; exit $rc; }
  echo "in-debian-root: '$ROOT_FIRST' done $(( $(date +%s) - start )) s after the start"
  if [ -n "${ROOT_GO:-}" ]; then
    while [ ! -e "$ROOT_GO" ]; do sleep 1; done
    start=$(date +%s)  # COMMAND's own time, from here
  fi
fi
in_root "$cmd"
rc=$?
set -e
echo "in-debian-root: '$cmd' exit $rc after $(( $(date +%s) - start )) s in Debian $suite"
exit $rc
