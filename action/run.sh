#!/usr/bin/env bash
# Step 2 of the sbx GitHub Action: run INPUT_COMMAND under sbx.
#
# Inputs (environment, never interpolated into this text):
#   INPUT_COMMAND            the shell command (sbx -c, i.e. /bin/sh -c)
#   INPUT_SETTINGS           settings file (--settings), relative to the
#                            directory this step starts in (the workspace)
#   INPUT_ARGS               extra sbx flags: split like shell words (quotes
#                            and backslashes honoured), nothing expanded
#   INPUT_FAIL_ON_VIOLATION  true (default) | false
#   INPUT_WORKING_DIRECTORY  where the command runs
#
# Every denial is appended as JSON Lines to $RUNNER_TEMP/sbx-violations.jsonl
# (without RUNNER_TEMP, to a new directory made by mktemp -d); this run's
# records become ::warning annotations (the first five and a count by kind)
# and, with GITHUB_STEP_SUMMARY, a Markdown table.
#
# The command's output is not trusted: while sbx runs, workflow commands
# are switched off (::stop-commands::TOKEN, with a random TOKEN, and
# ::TOKEN:: after), so that the command cannot print ::set-output::,
# ::add-mask:: or a forged ::warning. sbx's stderr is merged into its
# stdout, and the markers and this script's annotations go to stdout too:
# the runner reads stdout and stderr separately and does not keep their
# lines in order, so only one stream orders them.
# The exit status is sbx's: the command's own, 123 (a refusal with
# fail-on-violation), 124 (timeout), 125 (sbx could not run it, or an input
# here is invalid), 126, 127.
set -uo pipefail

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

gh_property() {
	local s
	s=$(gh_data "$1")
	s=${s//:/%3A}
	s=${s//,/%2C}
	printf '%s' "$s"
}

die() {
	echo "::error title=sbx::$(gh_data "$*")" >&2
	exit 125
}

# Scratch files go into a private directory of this run (in RUNNER_TEMP
# when set), never a fixed or shared name.
scratch=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/sbx-run.XXXXXX") ||
	die "cannot make a temporary directory in ${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
trap 'rm -rf -- "$scratch"' EXIT

command=${INPUT_COMMAND:-}
[ -n "$command" ] || die "input 'command' is empty: nothing to run"

settings=()
if [ -n "${INPUT_SETTINGS:-}" ]; then
	case $INPUT_SETTINGS in
	/*) settings=(--settings "$INPUT_SETTINGS") ;;
	*) settings=(--settings "$PWD/$INPUT_SETTINGS") ;;
	esac
fi

fail=()
case ${INPUT_FAIL_ON_VIOLATION:-true} in
[Tt]rue | TRUE) fail=(--fail-on-violation) ;;
[Ff]alse | FALSE) ;;
*) die "fail-on-violation '${INPUT_FAIL_ON_VIOLATION}': use true or false" ;;
esac

# Split INPUT_ARGS into words with xargs's quoting rules: quotes and
# backslashes work as in the shell, but nothing is expanded or executed.
extra=()
if [ -n "${INPUT_ARGS:-}" ]; then
	words=$scratch/args
	if ! printf '%s\n' "$INPUT_ARGS" | xargs -r printf '%s\0' >"$words"; then
		die "args: cannot split '${INPUT_ARGS}' into words (an unmatched quote?)"
	fi
	mapfile -d '' -t extra <"$words"
fi

if [ -n "${INPUT_WORKING_DIRECTORY:-}" ]; then
	cd -- "$INPUT_WORKING_DIRECTORY" || die "working-directory '$INPUT_WORKING_DIRECTORY' does not exist"
fi

command -v sbx >/dev/null 2>&1 || die "sbx is not on PATH (the action's install step puts it there)"

# One records file per job: RUNNER_TEMP is the job's own directory. Outside
# Actions there is no such place, so a new directory holds it (kept: it is
# the violations-file output).
if [ -n "${RUNNER_TEMP:-}" ]; then
	jsonl=$RUNNER_TEMP/sbx-violations.jsonl
else
	records=$(mktemp -d "${TMPDIR:-/tmp}/sbx-action.XXXXXX") ||
		die "cannot make a temporary directory in ${TMPDIR:-/tmp}"
	jsonl=$records/sbx-violations.jsonl
fi
before=0
if [ -f "$jsonl" ]; then
	before=$(wc -l <"$jsonl")
fi

# The records file stays JSON (the default format): --violations-format
# applies to FILE as well as to the summary, so github here would make it
# workflow commands instead. The annotations are written below from it.
#
# The token is made here and only ever passed to builtins (no argv, no
# environment), so the sandboxed command cannot learn it and resume
# workflow commands early. The pipe through cat ends only when every
# process holding the command's output has closed it, so nothing the
# command leaves running can write after ::TOKEN::.
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
[[ $token =~ ^[0-9a-f]{32}$ ]] || die "cannot read a random token from /dev/urandom"
echo "::stop-commands::$token"
sbx "${settings[@]}" --violations "$jsonl" "${fail[@]}" "${extra[@]}" -c "$command" 2>&1 | cat
status=${PIPESTATUS[0]}
echo "::$token::"

# This run's records: the lines after the ones that were there before.
new=()
if [ -f "$jsonl" ]; then
	mapfile -t new < <(tail -n "+$((before + 1))" -- "$jsonl")
fi
total=${#new[@]}

# field LINE NAME prints the JSON string (or number) NAME of a record line.
# A key can only match where it is a key: inside a string every quote is
# escaped, so '"kind":"' cannot occur there.
field() {
	local re="\"$2\":\"(([^\"\\\\]|\\\\.)*)\""
	if [[ $1 =~ $re ]]; then
		local v=${BASH_REMATCH[1]}
		v=${v//\\\"/\"}
		printf '%b' "$v"
		return
	fi
	re="\"$2\":([0-9]+)"
	if [[ $1 =~ $re ]]; then
		printf '%s' "${BASH_REMATCH[1]}"
	fi
}

# line mirrors sbx's one-line form of a record.
line() {
	local r=$1 s kind path resolved host port detail rule pid exe sc
	kind=$(field "$r" kind)
	s="${kind:-unknown} $(field "$r" action)"
	sc=$(field "$r" syscall)
	[ -n "$sc" ] && s+=" $sc"
	path=$(field "$r" path)
	resolved=$(field "$r" resolved)
	if [ -n "$path" ]; then
		s+=" $path"
		[ -n "$resolved" ] && [ "$resolved" != "$path" ] && s+=" -> $resolved"
	elif [ -n "$resolved" ]; then
		s+=" $resolved"
	fi
	host=$(field "$r" host)
	port=$(field "$r" port)
	if [ -n "$host" ] && [ -n "$port" ]; then
		s+=" $host:$port"
	elif [ -n "$host" ]; then
		s+=" $host"
	elif [ -n "$port" ]; then
		s+=" port $port"
	fi
	detail=$(field "$r" detail)
	[ -n "$detail" ] && s+=" ($detail)"
	rule=$(field "$r" rule)
	[ -n "$rule" ] && s+=" (rule: $rule)"
	pid=$(field "$r" pid)
	[ -n "$pid" ] && s+=" pid $pid"
	exe=$(field "$r" exe)
	[ -n "$exe" ] && s+=" $exe"
	printf '%s' "$s"
}

declare -A bykind=()
kinds=()
for r in "${new[@]}"; do
	k=$(field "$r" kind)
	k=${k:-unknown}
	if [ -z "${bykind[$k]+set}" ]; then
		bykind[$k]=0
		kinds+=("$k")
	fi
	n=${bykind[$k]}
	bykind[$k]=$((n + 1))
done
counts=""
for k in "${kinds[@]}"; do
	counts+="${counts:+, }${bykind[$k]} $k"
done
if [ "$total" = 1 ]; then noun=violation; else noun=violations; fi

if [ "$total" -gt 0 ]; then
	for r in "${new[@]:0:5}"; do
		k=$(field "$r" kind)
		echo "::warning title=$(gh_property "sbx violation (${k:-unknown})")::$(gh_data "$(line "$r")")"
	done
	echo "::warning title=sbx violations::$(gh_data "$total $noun ($counts); records: $jsonl")"
fi

if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
	{
		if [ "$total" -gt 0 ]; then
			echo "### sbx: $total $noun"
			echo
			echo "| kind | count |"
			echo "|---|---|"
			for k in "${kinds[@]}"; do
				echo "| ${k//|/\\|} | ${bykind[$k]} |"
			done
			echo
			echo "Records: \`$jsonl\` (JSON Lines). Exit status $status."
		else
			echo "### sbx: no violations"
			echo
			echo "Exit status $status."
		fi
		echo
	} >>"$GITHUB_STEP_SUMMARY"
fi

if [ -n "${GITHUB_OUTPUT:-}" ]; then
	{
		echo "exit-code=$status"
		echo "violations=$total"
		echo "violations-file=$jsonl"
	} >>"$GITHUB_OUTPUT"
fi

exit "$status"
