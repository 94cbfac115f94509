#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine to build and test sbx, and builds
# ./bin/sbx. Installs libseccomp-dev, pkg-config and gcc when missing (needs
# root for that), and creates the unprivileged user the tests also run as.
# It writes nothing git tracks into the checkout (bin/ is ignored), so that
# after the README's quick start `git status --porcelain` is empty and
# scripts/release.sh, which refuses a tree with changes, can run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
need=()
dpkg -s libseccomp-dev >/dev/null 2>&1 || need+=(libseccomp-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
# ip(8) configures the TUN device of capture's namespace test (capture/).
command -v ip >/dev/null 2>&1 || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "setup: run as root to install: ${need[*]}" >&2; exit 1; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ "$(id -u)" = 0 ] && ! id sbxtest >/dev/null 2>&1; then
  useradd -m -s /bin/bash sbxtest
fi
# The capture (network.capture) opens /dev/net/tun as the calling user.
# Distributions' udev makes it 0666; some containers leave it 0600 (or
# have no node at all), and the capture needs it for unprivileged users
# (sbxtest). The node is character 10,200, made only where /dev/net exists
# or can be made.
if [ "$(id -u)" = 0 ]; then
  if [ ! -e /dev/net/tun ] && { [ -d /dev/net ] || mkdir -p /dev/net 2>/dev/null; }; then
    mknod -m 0666 /dev/net/tun c 10 200 || echo "setup: cannot make /dev/net/tun; the capture tests will be skipped" >&2
  fi
  if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
    chmod 0666 /dev/net/tun || echo "setup: cannot chmod /dev/net/tun; the capture tests will be skipped for sbxtest" >&2
  fi
  # The capture tests' curl case: curl resolves *.localhost itself (to
  # loopback, without DNS), so that case dials a name the host's
  # resolver maps to 127.0.0.1.
  if ! grep -qE '^[[:space:]]*127\.0\.0\.1[[:space:]]([^#]*[[:space:]])?sbx-capture\.test([[:space:]]|#|$)' /etc/hosts 2>/dev/null; then
    if [ -s /etc/hosts ] && [ -n "$(tail -c 1 /etc/hosts)" ]; then echo >>/etc/hosts; fi
    echo '127.0.0.1 sbx-capture.test' >>/etc/hosts
  fi
fi
# A Node.js whose fetch honours proxy variables (24+), for the test that
# Node's fetch works unchanged through a terminated TLS proxy. The
# machine's own Node may be older; the npm registry carries Node's
# binaries as node-linux-<arch>. Optional: without it that one client is
# skipped (the test says so).
node24=/opt/sbx-test/node24
if [ "$(id -u)" = 0 ] && [ ! -x "$node24/bin/node" ] && command -v npm >/dev/null 2>&1; then
  case "$(uname -m)" in x86_64) narch=x64 ;; aarch64) narch=arm64 ;; *) narch= ;; esac
  if [ -n "$narch" ]; then
    tmp=$(mktemp -d)
    if (cd "$tmp" && timeout 300 npm pack --silent "node-linux-$narch@24" >/dev/null 2>&1 && tar xzf node-linux-*.tgz); then
      mkdir -p /opt/sbx-test && rm -rf "$node24" && mv "$tmp/package" "$node24" && chmod -R a+rX /opt/sbx-test
      echo "installed Node $("$node24/bin/node" --version) at $node24 (for the Node fetch test)"
    else
      echo "setup: Node 24 from the npm registry is unavailable; the Node fetch test will be skipped" >&2
    fi
    rm -rf "$tmp"
  fi
fi
# The runtimes of the real-runtime matrix (cmd/sbx/runtimes_test.go), from
# Debian's packages in /usr/bin (a rustup or pyenv under /root is not the
# unprivileged test user's): Python, a JDK (javac), cargo. Optional: a
# runtime that cannot be installed is skipped by its test, which says so.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  rt=()
  [ -x /usr/bin/python3 ] || rt+=(python3)
  [ -x /usr/bin/javac ] || rt+=(default-jdk-headless)
  [ -x /usr/bin/cargo ] || rt+=(cargo)
  if [ ${#rt[@]} -gt 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq "${rt[@]}" >/dev/null; } ||
      echo "setup: could not install ${rt[*]}; their runtime-matrix tests will be skipped" >&2
  fi
fi
mkdir -p bin
# Without cgo: a static binary starts faster (twice a run: supervisor and
# init); the seccomp programs are embedded (go generate ./seccomp).
CGO_ENABLED=0 go build -o bin/sbx ./cmd/sbx
echo "built $(pwd)/bin/sbx: $(bin/sbx version)"
