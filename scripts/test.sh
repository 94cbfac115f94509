#!/usr/bin/env bash
# The test command: vet, the cross-builds (linux and darwin, amd64 and
# arm64), and the whole suite — as
# the current user and, when run as root, again as the unprivileged user
# sbxtest (most sbx users are not root; a root-only green is not green).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
test -z "$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
go vet ./...
# Every release target builds and vets without cgo: linux and darwin,
# amd64 and arm64.
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build ./...
  GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go vet ./...
done
# The release, dry: the four static binaries, the SBOM and SHA256SUMS, built
# twice and compared byte for byte (scripts/release.sh; nothing is kept).
bash scripts/release.sh 0.0.0-ci --dry-run
# scripts/setup.sh installs a Node 24 for the Node fetch test when it can.
if [ -z "${SBX_TEST_NODE:-}" ] && [ -x /opt/sbx-test/node24/bin/node ]; then
  export SBX_TEST_NODE=/opt/sbx-test/node24/bin/node
fi
# The race detector over the raw start, whose early process runs in the
# supervisor's memory (a stray write there shows up as a race-runtime
# crash), over the proxy and over the capture stack.
race="CGO_ENABLED=1 go test -race -count=1 -timeout 10m ./internal/rawexec ./netproxy ./capture"
echo "== tests as $(id -un)"
go test -count=1 -timeout 25m ./...
eval "$race"
if [ "$(id -u)" = 0 ]; then
  id sbxtest >/dev/null 2>&1 || useradd -m -s /bin/bash sbxtest
  copy=$(mktemp -d /tmp/sbx-unpriv-XXXXXX)
  trap 'rm -rf "$copy"' EXIT
  cp -a . "$copy/src"
  chown -R sbxtest: "$copy"
  chmod 755 "$copy"
  echo "== tests as sbxtest (unprivileged)"
  setpriv --reuid=sbxtest --regid=sbxtest --init-groups --reset-env \
    env PATH="$PATH" HOME=/home/sbxtest GOFLAGS="${GOFLAGS:-}" SBX_TEST_NODE="${SBX_TEST_NODE:-}" \
    bash -c "cd '$copy/src' && go test -count=1 -timeout 25m ./... && $race"
fi
