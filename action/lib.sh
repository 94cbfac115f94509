# Shared by install.sh and run.sh (sourced, not run).

# gh_data escapes a workflow command's message (% CR LF), so that no value
# can end the command early or start another.
gh_data() {
	local s=$1
	s=${s//'%'/%25}
	s=${s//$'\r'/%0D}
	s=${s//$'\n'/%0A}
	printf '%s' "$s"
}
