#!/usr/bin/env bash
# Builds a release: static sbx binaries for linux and darwin, amd64 and
# arm64, their SHA256SUMS and a CycloneDX 1.5 SBOM, and checks them.
#
#   scripts/release.sh VERSION             writes dist/ (from HEAD; the tree must be clean)
#   scripts/release.sh VERSION --dry-run   the same from the working tree, in a temporary
#                                          directory it removes; prints the checksums
#
# dist/sbx-VERSION-OS-ARCH    CGO_ENABLED=0 -trimpath, stamped with
#                             -X main.version=VERSION -X main.commit=$(git rev-parse HEAD)
# dist/sbx-VERSION.cdx.json   the SBOM (scripts/sbom, from each binary's go version -m
#                             build information): the main module, each module linked
#                             in with its go.sum hash, the Go standard library, the binaries
# dist/SHA256SUMS             sha256sum format, over the binaries and the SBOM
#
# Checks, any failure fails the release and leaves dist/ untouched:
#   - the Linux binaries are static: no program interpreter, no shared
#     libraries, CGO_ENABLED=0 in their build information (sbom -check-static);
#   - the binary for this machine, if any, says VERSION and the commit;
#   - REPRODUCIBILITY: everything is built a second time, from a copy of the
#     source at another path into another directory, and compared byte for
#     byte (cmp), SBOM included. A release rebuilds with an empty GOCACHE,
#     so the compiler runs again too; --dry-run (scripts/test.sh runs it)
#     reuses the cache unless SBX_RELEASE_FRESH_CACHE=1, so the second build
#     relinks only;
#   - sha256sum -c SHA256SUMS.
# A release also fails when a Linux target has no embedded seccomp
# programs (seccomp/filters_other.go; that sbx refuses to run); --dry-run
# warns.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

usage() { echo "usage: scripts/release.sh VERSION [--dry-run]" >&2; exit 2; }
version="" dry=0
for a in "$@"; do
  case $a in
    --dry-run) dry=1 ;;
    -*) usage ;;
    *) [ -z "$version" ] || usage; version=$a ;;
  esac
done
[ -n "$version" ] || usage
# It goes into file names, -ldflags -X and a package URL.
[[ $version =~ ^v?[0-9][0-9A-Za-z.+-]*$ ]] || { echo "release: VERSION $version: want digits first, then [0-9A-Za-z.+-] (1.2.3, 0.0.0-rc1)" >&2; exit 2; }

targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
say() { echo "release: $*" >&2; }
die() { echo "release: FAILED: $*" >&2; exit 1; }

# The commit, and the source to build: a release builds exactly HEAD (git
# archive) from a clean tree; a dry run builds the working tree as it is
# (tracked and untracked files, not ignored ones), its commit marked -dirty
# when it differs from HEAD.
commit=$(git rev-parse HEAD 2>/dev/null) || commit=""
dirty=""
if [ -n "$commit" ] && [ -n "$(git status --porcelain -- . ':(exclude)dist' 2>/dev/null)" ]; then
  dirty=1
fi
if [ "$dry" = 0 ]; then
  [ -n "$commit" ] || die "not a git checkout: a release needs the commit it is built from"
  [ -z "$dirty" ] || { git status --short -- . ':(exclude)dist' >&2; die "the tree has changes: commit them (or use --dry-run)"; }
else
  commit=${commit:-unknown}${dirty:+-dirty}
fi
# The SBOM's timestamp: $SOURCE_DATE_EPOCH, else the commit's time — not
# now, so that a rebuild gives the same SBOM.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD 2>/dev/null || true)}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sbx-release-XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/a/src" "$tmp/b/copy/of/src"
if [ "$dry" = 0 ]; then
  git archive --format=tar HEAD | tar -x -C "$tmp/a/src"
elif git rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -x -C "$tmp/a/src"
else
  tar --exclude=./dist --exclude=./.git --exclude=./bin -cf - . | tar -x -C "$tmp/a/src"
fi
cp -a "$tmp/a/src/." "$tmp/b/copy/of/src/"

# One environment for both builds: whatever the caller's go env says, the
# same flags, GOAMD64/GOARM64 at their defaults, no cgo.
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOAMD64=v1 GOARM64=v8.0
ldflags="-s -w -buildid= -X main.version=$version -X main.commit=$commit"

# build SRC OUT: the binaries and the SBOM of the source in SRC, into OUT.
build() {
  local src=$1 out=$2 t os arch
  mkdir -p "$out"
  for t in "${targets[@]}"; do
    os=${t%/*} arch=${t#*/}
    (cd "$src" && GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false -ldflags "$ldflags" \
      -o "$out/sbx-$version-$os-$arch" ./cmd/sbx) || die "building $t"
  done
  "$tmp/sbom" -version "$version" -timestamp "$epoch" -o "$out/sbx-$version.cdx.json" "$out"/sbx-"$version"-*-* ||
    die "writing the SBOM"
}

SECONDS=0
(cd "$tmp/a/src" && go build -o "$tmp/sbom" ./scripts/sbom) || die "building scripts/sbom"
for t in "${targets[@]}"; do
  [ "${t%/*}" = linux ] || continue
  if (cd "$tmp/a/src" && GOOS=linux GOARCH=${t#*/} go list -f '{{join .GoFiles " "}}' ./seccomp) | grep -qw filters_other.go; then
    [ "$dry" = 1 ] || die "$t has no embedded seccomp programs (go generate ./seccomp on it): that sbx would refuse to run"
    say "WARNING: $t has no embedded seccomp programs: that sbx refuses to run"
  fi
done
say "building $version (commit $commit) for ${targets[*]}"
build "$tmp/a/src" "$tmp/a/out"
out=$tmp/a/out
t1=$SECONDS

"$tmp/sbom" -check-static "$out"/sbx-"$version"-linux-* >/dev/null || die "a Linux binary is not static"
host="$out/sbx-$version-$(go env GOHOSTOS)-$(go env GOHOSTARCH)"
if [ -x "$host" ]; then
  line=$("$host" version) || die "$host version failed"
  case $line in
    "sbx $version (commit $commit, seccomp "*) ;;
    *) die "$host version says: $line" ;;
  esac
fi

# The second build: another source path, another output directory, and
# for a release an empty build cache.
if [ "$dry" = 0 ] || [ "${SBX_RELEASE_FRESH_CACHE:-}" = 1 ]; then
  export GOCACHE="$tmp/gocache"
  say "rebuilding with an empty GOCACHE to check reproducibility"
else
  say "rebuilding to check reproducibility"
fi
build "$tmp/b/copy/of/src" "$tmp/b/out"
differ=0
for f in "$out"/*; do
  cmp "$f" "$tmp/b/out/${f##*/}" || { say "NOT REPRODUCIBLE: ${f##*/}"; differ=1; }
done
[ "$differ" = 0 ] || die "the second build differs from the first (see above)"

(cd "$out" && sha256sum sbx-"$version"-*-* "sbx-$version.cdx.json" >SHA256SUMS && sha256sum --check --strict --quiet SHA256SUMS) ||
  die "sha256sum -c SHA256SUMS"

cat "$out/SHA256SUMS"
if [ "$dry" = 1 ]; then
  say "dry run OK: static, reproducible, checksums verified (build ${t1}s, total ${SECONDS}s); nothing kept"
  exit 0
fi
rm -rf dist
mkdir dist
mv "$out"/* dist/
say "wrote $(pwd)/dist: static, reproducible, checksums verified (build ${t1}s, total ${SECONDS}s)"
ls -l dist >&2
