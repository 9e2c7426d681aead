# Sourced by scripts/bullseye and scripts/trixie (from the repository's top, with set -euo
# pipefail): a Debian release's root made with debootstrap from Debian's mirror, and commands
# run in it on this tree with the official Rust toolchain bound in.
#
#   debian_root RELEASE PACKAGES
#       makes target/RELEASE/root with debootstrap's minimal variant and PACKAGES (comma-
#       separated) from RELEASE's own archive; kept between runs, made anew when PACKAGES
#       change.
#   debian_root_run RELEASE [--bind HOST_DIR=DIR_IN_ROOT]... -- COMMAND...
#       runs COMMAND as root in that root: this tree at /src, the Rust toolchain at /rustup
#       and /cargo, /proc and /dev, and each HOST_DIR over DIR_IN_ROOT (after /src, so a
#       directory of the tree can be replaced by one of the root's own). The crates cargo
#       needs are fetched first, outside: the root is given no network.
#   debian_root_remove RELEASE
#       removes target/RELEASE (the root and the builds made in it), unless something is
#       mounted below it (a run's binds live in its own mount namespace, gone when it ends).
#
# Why a file of functions: each release's script differs only in its packages and in what it
# runs inside; making and entering the root is the same for all of them.

debian_root_sudo=""
[ "$(id -u)" -eq 0 ] || debian_root_sudo="sudo"

debian_root() {
  local release=$1 packages=$2
  local out=$PWD/target/$release
  # Under target/, which cargo never walks (the root holds /dev/fd, a loop for a walk).
  local chroot_dir=$out/root
  local sudo=$debian_root_sudo
  scripts/install-deps debootstrap
  # The marker holds the package list the root was made with: a script that asks for other
  # packages gets a root that has them.
  if [ "$(cat "$chroot_dir/.leveldb-bloom-ready" 2>/dev/null)" = "$packages" ]; then
    return 0
  fi
  $sudo rm -rf "$chroot_dir"
  mkdir -p "$out"
  local mirror
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
    grep -v security | head -1)
  # A mirror caught syncing fails a download for a moment: three tries, the log of each.
  local attempt
  for attempt in 1 2 3; do
    if $sudo debootstrap --variant=minbase "--include=$packages" "$release" "$chroot_dir" \
         "${mirror:-http://deb.debian.org/debian}" > "$out/debootstrap.log" 2>&1; then
      break
    fi
    tail -5 "$out/debootstrap.log" >&2
    [ "$attempt" -lt 3 ] || { echo "debian_root: debootstrap of $release failed" >&2; return 1; }
    $sudo rm -rf "$chroot_dir"
    sleep 15
  done
  printf '%s\n' "$packages" | $sudo tee "$chroot_dir/.leveldb-bloom-ready" > /dev/null
}

debian_root_run() {
  local release=$1
  shift
  local chroot_dir=$PWD/target/$release/root
  local sudo=$debian_root_sudo
  local binds=()
  while [ "$1" != -- ]; do
    [ "$1" = --bind ] || { echo "debian_root_run: expected --bind or --, got $1" >&2; return 2; }
    binds+=("$2")
    shift 2
  done
  shift
  local bind
  for bind in ${binds[@]+"${binds[@]}"}; do mkdir -p "${bind%%=*}"; done
  # A job limit the caller set holds inside too (env -i below clears the rest).
  local keep=()
  [ -z "${CARGO_BUILD_JOBS:-}" ] || keep+=("CARGO_BUILD_JOBS=$CARGO_BUILD_JOBS")
  local rustup_home cargo_home
  rustup_home=$(rustup show home)
  cargo_home=${CARGO_HOME:-$HOME/.cargo}
  # The crates the build needs, fetched on this side.
  cargo fetch -q
  local dir
  for dir in src rustup cargo proc dev; do $sudo mkdir -p "$chroot_dir/$dir"; done
  # A mount namespace of its own: the binds go when it ends, however it ends. Cargo offline
  # inside: it fails at once on a crate not fetched, not after a network timeout.
  $sudo unshare --mount --propagation private env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin \
    bash -c '
      set -e
      root=$1 tree=$2 rustup=$3 cargo=$4 nbinds=$5
      shift 5
      mount --bind "$tree" "$root/src"
      mount --bind "$rustup" "$root/rustup"
      mount --bind "$cargo" "$root/cargo"
      mount -t proc proc "$root/proc"
      mount --bind /dev "$root/dev"
      while [ "$nbinds" -gt 0 ]; do
        mkdir -p "$root${1#*=}"
        mount --bind "${1%%=*}" "$root${1#*=}"
        shift
        nbinds=$((nbinds - 1))
      done
      exec chroot "$root" env -i HOME=/root PATH=/cargo/bin:/usr/bin:/bin RUSTUP_HOME=/rustup \
        CARGO_HOME=/cargo CARGO_NET_OFFLINE=true "$@"
    ' "$release" "$chroot_dir" "$PWD" "$rustup_home" "$cargo_home" "${#binds[@]}" \
    ${binds[@]+"${binds[@]}"} ${keep[@]+"${keep[@]}"} "$@"
}

debian_root_remove() {
  local out encoded
  # The folder as the kernel names it (target/ itself may be a link elsewhere).
  out=$(realpath -m -- "target/$1") || return 1
  # /proc/self/mountinfo's fifth field is each mount point, with backslash, space, tab and
  # newline written as octal escapes: the folder is written the same way to compare.
  encoded=${out//\\/\\134}
  encoded=${encoded// /\\040}
  encoded=${encoded//$'\t'/\\011}
  encoded=${encoded//$'\n'/\\012}
  # awk: 0, a mount below the folder; 1, none; anything else, the table unread.
  local status=2
  if [ -r /proc/self/mountinfo ]; then
    status=0
    DIR="$encoded/" awk 'index($5 "/", ENVIRON["DIR"]) == 1 { found = 1 } END { exit !found }' \
      /proc/self/mountinfo || status=$?
  fi
  case $status in
    1) ;;
    0) echo "debian_root_remove: something is mounted below $out: not removed" >&2; return 1 ;;
    *) echo "debian_root_remove: the mount table is unread: $out not removed" >&2; return 1 ;;
  esac
  $debian_root_sudo rm -rf --one-file-system -- "$out"
}
