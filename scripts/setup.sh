#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine to build and test sbx, and builds
# ./bin/sbx. Installs libseccomp-dev, pkg-config and gcc when missing (needs
# root for that), and creates the unprivileged user the tests also run as.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
need=()
dpkg -s libseccomp-dev >/dev/null 2>&1 || need+=(libseccomp-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "setup: run as root to install: ${need[*]}" >&2; exit 1; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ "$(id -u)" = 0 ] && ! id sbxtest >/dev/null 2>&1; then
  useradd -m -s /bin/bash sbxtest
fi
mkdir -p bin
# Without cgo: a static binary starts faster (twice a run: supervisor and
# init); the seccomp programs are embedded (go generate ./seccomp).
CGO_ENABLED=0 go build -o bin/sbx ./cmd/sbx
echo "built $(pwd)/bin/sbx: $(bin/sbx version)"
