#!/usr/bin/env bash
# Print the path of a CPython 3.13 with pip (the Lambda runtime's version: `sam build` compiles
# the functions' bytecode with it, and the deployed tier runs the built functions on it);
# install one when this machine has none.
#
# Where it comes from, first match wins:
#   1. $REARVIEW_PYTHON313, if set (it must be a working 3.13 with pip);
#   2. python3.13 on PATH, if it runs, is 3.13 and has pip;
#   3. the cached copy of Debian 13's python3.13 (below), installed on first use.
#
# Debian 12 (this project's machines) ships no python3.13, and `uv python install` downloads
# from GitHub, which these machines cannot reach. Debian 13 ("trixie") does ship python3.13, but
# it needs trixie's glibc (>= 2.38) and OpenSSL 3.5. So: `apt-get download` the interpreter, its
# standard library and the trixie libraries it links against, using a private apt state (the
# system's sources, package lists and installed packages are untouched), unpack them into the
# cache with `dpkg -x`, and point the interpreter at its own loader and libraries (`patchelf`,
# from Debian 12, installed with apt-get when missing). A venv on top of it gets pip from PyPI.
#
# Idempotent: once the cache is complete it only prints the path.
# Cache: ${XDG_CACHE_HOME:-$HOME/.cache}/rearview/python3.13-debian13 (FETCH_FORCE=1 rebuilds).
# Stdout: the interpreter's path (one line). Progress goes to stderr.
set -euo pipefail

usable() {
  [[ -n "$1" ]] && "$1" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null \
    && "$1" -m pip --version >/dev/null 2>&1
}

if [[ -n "${REARVIEW_PYTHON313:-}" ]]; then
  if usable "$REARVIEW_PYTHON313"; then echo "$REARVIEW_PYTHON313"; exit 0; fi
  echo "python313.sh: REARVIEW_PYTHON313=$REARVIEW_PYTHON313 is not a CPython 3.13 with pip" >&2
  exit 1
fi
if [[ "${FETCH_FORCE:-0}" != 1 ]] && usable "$(command -v python3.13 || true)"; then
  command -v python3.13
  exit 0
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/rearview/python3.13-debian13"
python="$cache/venv/bin/python3.13"
if [[ "${FETCH_FORCE:-0}" != 1 && -f "$cache/.complete" ]] && usable "$python"; then
  echo "$python"
  exit 0
fi

for tool in apt-get dpkg; do
  command -v "$tool" >/dev/null || { echo "python313.sh: no python3.13 here and no $tool to fetch Debian's: install CPython 3.13 and set REARVIEW_PYTHON313" >&2; exit 1; }
done
sudo_cmd=()
[[ "$(id -u)" == 0 ]] || sudo_cmd=(sudo)
if ! command -v patchelf >/dev/null; then
  echo "python313.sh: installing Debian's patchelf" >&2
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y patchelf >&2 \
    || { "${sudo_cmd[@]}" apt-get update >&2 && "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y patchelf >&2; }
fi

mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
stage="$(mktemp -d "$(dirname "$cache")/.stage-python3.13.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
start=$SECONDS
echo "python313.sh: fetching Debian 13's python3.13 into $cache (about 15 MB)" >&2

# A private apt state that knows only trixie's main component.
apt_dir="$stage/apt"
mkdir -p "$apt_dir"/etc/apt/{apt.conf.d,preferences.d,sources.list.d} "$apt_dir"/var/lib/apt/lists/partial \
  "$apt_dir"/var/cache/apt/archives/partial
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  >"$apt_dir/etc/apt/sources.list"
apt_opts=(-o "Dir=$apt_dir" -o Dir::State::status=/var/lib/dpkg/status
  -o Dir::Etc::trustedparts=/etc/apt/trusted.gpg.d -o APT::Sandbox::User=root -q)
apt-get "${apt_opts[@]}" update >&2
# The interpreter, its standard library and every shared library they load that Debian 12's
# versions are too old for (or that links against one that is): glibc, OpenSSL, and the rest.
packages=(python3.13 python3.13-minimal libpython3.13-minimal libpython3.13-stdlib libc6 libssl3t64
  zlib1g libexpat1 libffi8 libsqlite3-0 libbz2-1.0 liblzma5 libzstd1 libncursesw6 libtinfo6
  libreadline8t64 libuuid1 libdb5.3t64 media-types tzdata netbase)
mkdir -p "$stage/debs" "$stage/out/root"
(cd "$stage/debs" && apt-get "${apt_opts[@]}" download "${packages[@]}" >&2)
for deb in "$stage"/debs/*.deb; do dpkg -x "$deb" "$stage/out/root"; done

libdir="$(dirname "$(find "$stage/out/root/usr/lib" -maxdepth 2 -name 'libc.so.6' | head -n 1)")"
loader="$(find "$libdir" -maxdepth 1 -name 'ld-linux*.so*' | head -n 1)"
[[ -x "$loader" ]] || { echo "python313.sh: no dynamic loader in the unpacked libc6" >&2; exit 1; }

# Paths are absolute, so patch them where the cache will live, then move the tree there.
rm -rf "$cache"
final_lib="$cache/root${libdir#"$stage/out/root"}"
patchelf --set-interpreter "$final_lib/$(basename "$loader")" --force-rpath --set-rpath "$final_lib" \
  "$stage/out/root/usr/bin/python3.13"
mv "$stage/out" "$cache"

"$cache/root/usr/bin/python3.13" -m venv --without-pip "$cache/venv"
# pip for the venv: the wheel from PyPI, run from the wheel itself to install itself.
"${PYTHON:-python3}" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  -d "$stage/pip" pip >&2
wheel="$(ls "$stage"/pip/pip-*.whl)"
"$python" "$wheel/pip" install --quiet --disable-pip-version-check --no-index "$wheel" >&2
usable "$python" || { echo "python313.sh: the unpacked python3.13 does not run" >&2; exit 1; }
touch "$cache/.complete"
echo "python313.sh: $("$python" -VV | head -n 1) ready in $((SECONDS - start)) s" >&2
echo "$python"
