#!/usr/bin/env bash
# Step 1 of the sbx GitHub Action: put sbx into $RUNNER_TEMP/sbx/bin (a
# fresh temporary directory when RUNNER_TEMP is unset), add that directory
# to $GITHUB_PATH, and check that this machine can run the sandbox.
#
# Inputs (environment, never interpolated into this text):
#   INPUT_INSTALL      release (default) | go | path
#   INPUT_VERSION      latest (default) or a release tag / module version
#   INPUT_RELEASE_URL  base URL of release assets (VERSION/ASSET is appended;
#                      latest uses the sibling latest/download/ASSET)
#   INPUT_SBX_PATH     an existing binary, for install=path
#   INPUT_ARGS, INPUT_SETTINGS  only read to see whether --weaker-nested
#                      (or enableWeakerNestedSandbox) was asked for
#   INPUT_FIX_HOST     true (default) | false: where the sandbox cannot start
#                      because AppArmor restricts user namespaces (Ubuntu
#                      23.10+, GitHub's ubuntu-24.04 runners) and sudo needs
#                      no password, run `sbx doctor --fix --yes` (an AppArmor
#                      profile that grants this sbx binary user namespaces,
#                      nothing else) and try again
#
# Exit status 0 when sbx is installed and its sandbox can start; 1 otherwise,
# with the reason as an ::error workflow command.
set -euo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

die() {
	echo "::error title=sbx install::$(gh_data "$*")" >&2
	exit 1
}

# one_line NAME VALUE refuses an input holding a control character (C0,
# DEL or C1): a newline or CR in a value that is logged would start a line
# of its own, e.g. a workflow command such as ::add-mask::, and ESC and
# the like garble the log. The value itself is not echoed.
one_line() {
	local LC_ALL=C i c
	for ((i = 0; i < ${#2}; i++)); do
		c=${2:i:1}
		case $c in
		[[:cntrl:]]) ;;
		$'\xc2') case ${2:i+1:1} in [$'\x80'-$'\x9f']) ;; *) continue ;; esac ;;
		*) continue ;;
		esac
		die "input $1 contains a control character (byte $((i + 1)) is $(printf '0x%02x' "'$c")); it must be one line of printable text"
	done
}
one_line install "${INPUT_INSTALL:-}"
one_line version "${INPUT_VERSION:-}"
one_line release-url "${INPUT_RELEASE_URL:-}"
one_line sbx-path "${INPUT_SBX_PATH:-}"
case ${INPUT_FIX_HOST:-true} in
[Tt]rue | TRUE) fix_host=yes ;;
[Ff]alse | FALSE) fix_host=no ;;
*) die "fix-host '${INPUT_FIX_HOST}': use true or false" ;;
esac

method=${INPUT_INSTALL:-release}
version=${INPUT_VERSION:-latest}
base=${INPUT_RELEASE_URL:-https://github.com/sbx-sh/sbx/releases/download}
base=${base%/}

# A version is one path segment of a URL and a module query: no slashes,
# spaces or shell-significant characters.
if ! [[ $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
	die "version '$version': use latest, a release tag such as v0.2.0, or a module version"
fi

if [ -n "${RUNNER_TEMP:-}" ]; then
	root=$RUNNER_TEMP/sbx
else
	root=$(mktemp -d "${TMPDIR:-/tmp}/sbx-action.XXXXXX")
fi
bindir=$root/bin
mkdir -p "$bindir"
work=$(mktemp -d "$root/download.XXXXXX")
trap 'rm -rf "$work"' EXIT

fetch() { # URL FILE
	curl -fsSL --retry 3 --retry-delay 2 --connect-timeout 30 \
		--proto '=https,http,file' --proto-redir '=https' -o "$2" "$1"
}

install_release() {
	local arch
	case "$(uname -m)" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) die "no sbx release for machine '$(uname -m)' (there are linux-amd64 and linux-arm64); use install: go or install: path" ;;
	esac
	# https anywhere; plain http and file only for this machine (a mirror
	# or a test), since the checksums come from the same place. No userinfo
	# (user:password@) in any URL: in http://127.0.0.1:x@elsewhere/ the host
	# is elsewhere, so a prefix match on the host would let plain http out.
	# The authority is everything after scheme:// up to the first / ? or #.
	local rest=${base#*://}
	if [ "$rest" != "$base" ] && [[ ${rest%%[/?#]*} == *@* ]]; then
		die "release-url: a user name or password (an @ before the host) is not accepted; put the host alone in the URL"
	fi
	local local_http='^http://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]+)?(/|$)'
	case $base in
	https://*) ;;
	file:///*) ;;
	http://*) [[ $base =~ $local_http ]] ||
		die "release-url '$base': use https:// (http:// only for 127.0.0.1, localhost or [::1], with at most a port)" ;;
	*) die "release-url '$base': use https:// (http:// only for 127.0.0.1, localhost or [::1], with at most a port)" ;;
	esac
	local dir
	if [ "$version" = latest ]; then
		case $base in
		*/download) dir=${base%/download}/latest/download ;;
		*) die "release-url '$base' does not end in /download, so there is no latest/download beside it; set version to a release tag" ;;
		esac
	else
		dir=$base/$version
	fi
	echo "sbx: fetching $dir/SHA256SUMS"
	fetch "$dir/SHA256SUMS" "$work/SHA256SUMS" || die "cannot download $dir/SHA256SUMS"
	# Lines are "HASH  NAME" (or "HASH *NAME" for binary mode).
	local names asset=""
	names=$(awk '{n=$2; sub(/^\*/, "", n); print n}' "$work/SHA256SUMS")
	if [ "$version" = latest ]; then
		local matches
		matches=$(grep -E "^sbx-[A-Za-z0-9._+-]+-linux-$arch\$" <<<"$names" || true)
		if [ -z "$matches" ] || [ "$(wc -l <<<"$matches")" -ne 1 ]; then
			die "SHA256SUMS at $dir lists no single sbx-VERSION-linux-$arch asset"
		fi
		asset=$matches
	else
		local want
		for want in "sbx-$version-linux-$arch" "sbx-${version#v}-linux-$arch"; do
			if grep -qxF -- "$want" <<<"$names"; then
				asset=$want
				break
			fi
		done
		[ -n "$asset" ] || die "SHA256SUMS at $dir lists no sbx-$version-linux-$arch"
	fi
	local sum
	sum=$(awk -v a="$asset" '{n=$2; sub(/^\*/, "", n); if (n == a) {print $1; exit}}' "$work/SHA256SUMS")
	[[ $sum =~ ^[0-9a-fA-F]{64}$ ]] || die "SHA256SUMS at $dir: '$sum' is not a SHA-256 for $asset"
	echo "sbx: fetching $dir/$asset"
	fetch "$dir/$asset" "$work/$asset" || die "cannot download $dir/$asset"
	local got
	got=$(sha256sum "$work/$asset" | awk '{print $1}')
	if [ "${got,,}" != "${sum,,}" ]; then
		die "checksum mismatch for $asset: SHA256SUMS says $sum, the download is $got; refusing to install it"
	fi
	echo "sbx: $asset sha256 $got verified"
	chmod 0755 "$work/$asset"
	mv -f "$work/$asset" "$bindir/sbx"
}

install_go() {
	command -v go >/dev/null 2>&1 || die "install: go needs Go on PATH (actions/setup-go before this action)"
	echo "sbx: go install github.com/sbx-sh/sbx/cmd/sbx@$version"
	GOBIN=$bindir CGO_ENABLED=0 go install "github.com/sbx-sh/sbx/cmd/sbx@$version" ||
		die "go install github.com/sbx-sh/sbx/cmd/sbx@$version failed"
}

install_path() {
	local src=${INPUT_SBX_PATH:-}
	[ -n "$src" ] || die "install: path needs sbx-path (an sbx binary)"
	[ -f "$src" ] && [ -x "$src" ] || die "sbx-path '$src' is not an executable file"
	src=$(realpath -- "$src")
	if [ "$src" != "$(realpath -m -- "$bindir/sbx")" ]; then
		cp -f -- "$src" "$bindir/sbx"
		chmod 0755 "$bindir/sbx"
	fi
}

case $method in
release) install_release ;;
go) install_go ;;
path) install_path ;;
*) die "install '$method': use release, go or path" ;;
esac

if [ -n "${GITHUB_PATH:-}" ]; then
	printf '%s\n' "$bindir" >>"$GITHUB_PATH"
fi
sbx=$bindir/sbx
"$sbx" version || die "$sbx does not run (wrong architecture or a damaged download?)"

# Fail closed: a sandbox that cannot start would only fail later, step by
# step, with exit 125. A sandboxed `true` is the test (doctor's verdict is
# shown, not trusted alone); when it fails, doctor says why and how to fix.
doctor=$("$sbx" doctor 2>&1) || die "sbx doctor failed: $doctor"
printf '%s\n' "$doctor"
readme="https://github.com/sbx-sh/sbx#when-sbx-cannot-start"
if smoke=$("$sbx" --quiet-violations -c true 2>&1); then
	# The sandbox starts, but the capture (clients that ignore the proxy
	# variables) needs /dev/net/tun, which some runners leave 0600:
	# doctor's fix makes it 0666 (the mode distributions give it).
	if grep -qE '^diagnosis: +capture-tun:' <<<"$doctor"; then
		if [ "$fix_host" = yes ] && command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1 &&
			"$sbx" doctor --fix --yes; then
			echo "sbx: /dev/net/tun made usable (sbx doctor --fix --yes): the capture is on"
		else
			echo "::warning title=sbx::$(gh_data "the capture is off on this runner (/dev/net/tun is not usable): only clients that honour the proxy variables reach allowed domains. See $readme")" >&2
		fi
	fi
	echo "sbx: installed $sbx; the full sandbox starts here"
	exit 0
fi
printf 'sbx -c true: %s\n' "$smoke" >&2
# AppArmor's restriction (GitHub's Ubuntu 24.04 runners) has a narrow fix:
# a profile that grants this one binary user namespaces. Where sudo needs no
# password, apply it and try again, so that a workflow needs no step of its
# own. Never the sysctl that lifts the restriction for every program.
if [ "$fix_host" = yes ] && grep -qE '^diagnosis: +apparmor-userns:' <<<"$doctor" &&
	command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
	echo "sbx: AppArmor restricts user namespaces here; sbx doctor --fix --yes installs a profile that grants them to $sbx only"
	if "$sbx" doctor --fix --yes; then
		if smoke=$("$sbx" --quiet-violations -c true 2>&1); then
			echo "sbx: installed $sbx; the full sandbox starts here (with the AppArmor profile sbx doctor --fix installed)"
			exit 0
		fi
		printf 'sbx -c true, after sbx doctor --fix: %s\n' "$smoke" >&2
	else
		echo "sbx: sbx doctor --fix --yes failed (its error is above)" >&2
	fi
fi
weaker=no
if [[ " ${INPUT_ARGS:-} " =~ [[:space:]]--weaker-nested[[:space:]=] ]]; then
	weaker=yes
elif [ -n "${INPUT_SETTINGS:-}" ] && [ -f "$INPUT_SETTINGS" ] &&
	grep -qE '"enableWeakerNestedSandbox"[[:space:]]*:[[:space:]]*true' -- "$INPUT_SETTINGS"; then
	weaker=yes
fi
if [ "$weaker" = yes ]; then
	if smoke=$("$sbx" --quiet-violations --weaker-nested -c true 2>&1); then
		echo "::warning title=sbx::$(gh_data "the full sandbox cannot start here; running with --weaker-nested as asked (Landlock + seccomp only: no private /tmp or mount view). See $readme")" >&2
		echo "sbx: installed $sbx; only --weaker-nested starts here"
		exit 0
	fi
	printf 'sbx --weaker-nested -c true: %s\n' "$smoke" >&2
	die "sbx cannot sandbox anything on this runner, not even with --weaker-nested (Landlock or seccomp missing?): $smoke. See the doctor output above and $readme"
fi
die "sbx cannot start its sandbox on this runner ($smoke). The doctor output above says why and how to fix it (sbx doctor --fix prints the commands, which need root: where sudo asks for a password the action cannot run them); or pass args: --weaker-nested to accept Landlock + seccomp only. See $readme"
