#!/usr/bin/env bash
# Fetch the embedded test OpenSearch (core, modules, k-NN plugin) from Maven
# Central and compile its launcher, into a cache directory.
#
# Idempotent: once the cache matches this folder's pom.xml and launcher
# source it only prints the cache directory and exits.
#
# Cache: $REARVIEW_OPENSEARCH_CACHE if set, else
#        ${XDG_CACHE_HOME:-$HOME/.cache}/rearview/opensearch-<version>
# Layout: lib/ (core + modules jars), knn/ (unpacked plugin zip),
#         classes/ (compiled launcher), classpath (one line), .stamp
# Stdout: the cache directory (one line). Progress goes to stderr.
# Needs: java, javac (17+), mvn. Set FETCH_FORCE=1 to rebuild.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pom="$here/pom.xml"
src="$here/src/main/java/dev/rearview/testnode/RearviewTestNode.java"

version="$(sed -n 's:.*<opensearch.version>\(.*\)</opensearch.version>.*:\1:p' "$pom" | head -n 1)"
if [[ -z "$version" ]]; then
  echo "fetch.sh: cannot read <opensearch.version> from $pom" >&2
  exit 1
fi

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/rearview"
cache="${REARVIEW_OPENSEARCH_CACHE:-$cache_root/opensearch-$version}"
parent="$(dirname "$cache")"
stamp_want="$(cat "$pom" "$src" | sha256sum | cut -d ' ' -f 1)"

is_current() {
  [[ -f "$cache/.stamp" && "$(cat "$cache/.stamp")" == "$stamp_want" ]]
}

if [[ "${FETCH_FORCE:-0}" != 1 ]] && is_current; then
  echo "$cache"
  exit 0
fi

for tool in java javac mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fetch.sh: '$tool' is not on PATH (need a JDK 17+ and Maven)" >&2
    exit 1
  fi
done

mkdir -p "$parent"
# Serialise concurrent fetches (parallel test workers) when flock exists.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$parent/.opensearch-$version.lock"
  flock 9
  if [[ "${FETCH_FORCE:-0}" != 1 ]] && is_current; then
    echo "$cache"
    exit 0
  fi
fi

stage="$(mktemp -d "$parent/.stage-opensearch-$version.XXXXXX")"
cleanup() { rm -rf "$stage"; }
trap cleanup EXIT

# Maven 3.8 prints colour resets even with -q -B; strip them.
run_mvn() {
  mvn -B -q -f "$pom" "$@" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2
}

start=$SECONDS
echo "fetch.sh: fetching OpenSearch $version into $cache (about 10 s with a fast link)" >&2
run_mvn dependency:copy-dependencies \
  -DincludeScope=runtime -DexcludeTypes=zip -DoutputDirectory="$stage/lib" >&2
run_mvn dependency:unpack-dependencies \
  -DincludeTypes=zip -DoutputDirectory="$stage/knn" \
  -DmarkersDirectory="$stage/markers" >&2

if ! compgen -G "$stage/knn/opensearch-knn-*.jar" >/dev/null; then
  echo "fetch.sh: the k-NN plugin zip did not unpack into $stage/knn" >&2
  exit 1
fi

echo "fetch.sh: compiling the launcher" >&2
javac -nowarn --release 17 -encoding UTF-8 -d "$stage/classes" \
  -cp "$stage/lib/*:$stage/knn/*" "$src" >&2

printf '%s\n' "$cache/classes:$cache/lib/*:$cache/knn/*" >"$stage/classpath"
printf '%s\n' "$version" >"$stage/version"
printf '%s\n' "$stamp_want" >"$stage/.stamp"

rm -rf "$cache"
rm -rf "$stage/markers"
mv "$stage" "$cache"
trap - EXIT
echo "fetch.sh: done in $((SECONDS - start))s" >&2
echo "$cache"
