#!/usr/bin/env bash
# The test command: vet, the macOS cross-build, and the whole suite — as
# the current user and, when run as root, again as the unprivileged user
# sbxtest (most sbx users are not root; a root-only green is not green).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
test -z "$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
go vet ./...
GOOS=darwin CGO_ENABLED=0 go build ./...
GOOS=darwin CGO_ENABLED=0 go vet ./...
echo "== tests as $(id -un)"
go test -count=1 -timeout 25m ./...
if [ "$(id -u)" = 0 ]; then
  id sbxtest >/dev/null 2>&1 || useradd -m -s /bin/bash sbxtest
  copy=$(mktemp -d /tmp/sbx-unpriv-XXXXXX)
  trap 'rm -rf "$copy"' EXIT
  cp -a . "$copy/src"
  chown -R sbxtest: "$copy"
  chmod 755 "$copy"
  echo "== tests as sbxtest (unprivileged)"
  setpriv --reuid=sbxtest --regid=sbxtest --init-groups --reset-env \
    env PATH="$PATH" HOME=/home/sbxtest GOFLAGS="${GOFLAGS:-}" \
    bash -c "cd '$copy/src' && go test -count=1 -timeout 25m ./..."
fi
