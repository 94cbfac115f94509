#!/bin/sh
# capture.sh COMMENT > HOST.txtar: a doctor fixture of this host, as the user
# running it. The probe section comes from the environment, as `sbx doctor
# --json` on the same host says: USERNS (userNamespaces.reason, empty when
# available), ERRNO (its errno's name, e.g. EPERM), PROC (freshProc.reason's
# errno name, empty when mountable), LANDLOCK (the ABI), SECCOMP (yes or
# no) and EXE (the sbx binary's real path); TUN (capture.reason) and
# TUNERRNO (its errno's name) only where /dev/net/tun does not open.
printf '%s\n' "$1"
printf -- '-- probe --\n'
printf 'userns: %s\nerrno: %s\nproc: %s\nlandlock: %s\nseccomp: %s\nexe: %s\n' "$USERNS" "$ERRNO" "$PROC" "$LANDLOCK" "$SECCOMP" "$EXE"
if [ -n "$TUN" ]; then printf 'tun: %s\ntunerrno: %s\n' "$TUN" "$TUNERRNO"; fi
for p in /proc/sys/kernel/apparmor_restrict_unprivileged_userns /proc/sys/kernel/unprivileged_userns_clone /proc/sys/user/max_user_namespaces /proc/self/status /proc/version /proc/1/cgroup /proc/self/mountinfo /proc/self/attr/current /.dockerenv /run/.containerenv /sys/kernel/security/lsm; do
	if c=$(cat "$p" 2>/dev/null); then printf -- '-- %s --\n%s\n' "$p" "$c"; fi
done
