package darwin

import "strings"

// The fixed part of every profile: what an ordinary command-line tool needs
// beyond files and network. Each Mach service carries the reason it is
// there; the list is rendered into the profile with those reasons as
// comments and documented in doc.go.

type service struct{ name, why string }

// machBaseline are the Mach services every profile may look up.
var machBaseline = []service{
	{"com.apple.audio.systemsoundserver", "NSBeep / AudioServices alerts"},
	{"com.apple.bsd.dirhelper", "confstr(_CS_DARWIN_USER_TEMP_DIR), $TMPDIR creation"},
	{"com.apple.coreservices.launchservicesd", "LaunchServices (UTI and app lookups)"},
	{"com.apple.distributed_notifications@Uv3", "NSDistributedNotificationCenter"},
	{"com.apple.FontObjectsServer", "CoreText font registration"},
	{"com.apple.fonts", "CoreText font lookup"},
	{"com.apple.logd", "os_log"},
	{"com.apple.lsd.mapdb", "LaunchServices database"},
	{"com.apple.PowerManagement.control", "IOPM assertions (caffeinate-style)"},
	{"com.apple.SecurityServer", "Security.framework (certificate checks)"},
	{"com.apple.securityd.xpc", "Security.framework (certificate checks)"},
	{"com.apple.system.logger", "syslog(3) / ASL"},
	{"com.apple.system.notification_center", "notify(3): time zone, network changes"},
	{"com.apple.system.opendirectoryd.libinfo", "getpwnam, getgrgid (id, ls -l, git, ssh)"},
	{"com.apple.system.opendirectoryd.membership", "group membership checks"},
}

// Opt-in Mach services.
const (
	// trustd fetches OCSP/CRL URLs named by the certificate it is asked to
	// check, which makes it an egress path that bypasses the proxy; Go's
	// crypto/x509 needs it on macOS (srt #118).
	trustdService = "com.apple.trustd.agent"
)

var appleEventServices = []service{
	{"com.apple.coreservices.appleevents", "appleeventsd"},
	{"com.apple.coreservices.quarantine-resolver", "open(1) of downloaded files"},
	{"com.apple.CoreServices.coreservicesd", "Launch Services open requests"},
}

// sysctlNames may be read by name.
var sysctlNames = []string{
	"hw.activecpu", "hw.busfrequency_compat", "hw.byteorder", "hw.cacheconfig",
	"hw.cachelinesize", "hw.cachelinesize_compat", "hw.cpufamily", "hw.cpufrequency",
	"hw.cpufrequency_compat", "hw.cputype", "hw.l1dcachesize", "hw.l1dcachesize_compat",
	"hw.l1icachesize", "hw.l1icachesize_compat", "hw.l2cachesize", "hw.l2cachesize_compat",
	"hw.l3cachesize", "hw.l3cachesize_compat", "hw.logicalcpu", "hw.logicalcpu_max",
	"hw.machine", "hw.memsize", "hw.model", "hw.ncpu", "hw.nperflevels", "hw.packages",
	"hw.pagesize", "hw.pagesize_compat", "hw.physicalcpu", "hw.physicalcpu_max",
	"hw.tbfrequency", "hw.tbfrequency_compat", "hw.vectorunit",
	"kern.argmax", "kern.bootargs", "kern.boottime", "kern.hostname", "kern.maxfiles",
	"kern.maxfilesperproc", "kern.maxproc", "kern.ngroups", "kern.osproductversion",
	"kern.osrelease", "kern.ostype", "kern.osvariant_status", "kern.osversion",
	"kern.secure_kernel", "kern.tcsm_available", "kern.tcsm_enable", "kern.usrstack64",
	"kern.version", "kern.willshutdown",
	"machdep.ptrauth_enabled", "security.mac.lockdown_mode_state",
	"sysctl.proc_cputype", "vm.loadavg",
}

// sysctlPrefixes may be read by prefix. kern.proc.pid. gives the kinfo_proc
// of a process (what ps shows); kern.procargs2 (other processes' argv and
// environment) is deliberately absent.
var sysctlPrefixes = []string{
	"hw.optional.", "hw.perflevel", "kern.proc.all", "kern.proc.pgrp.",
	"kern.proc.pid.", "machdep.cpu.", "net.routetable.",
}

func (w *writer) baseline() {
	w.section("Processes: exec and fork anything readable; see and signal only this sandbox")
	w.line("(allow process-exec)")
	w.line("(allow process-fork)")
	w.line("(allow process-info* (target same-sandbox))")
	w.line("(allow signal (target same-sandbox))")
	w.line("(allow mach-priv-task-port (target same-sandbox))")

	w.section("Mach services common tools need (nothing else; no wildcard)")
	w.line("(allow mach-lookup")
	for i, s := range machBaseline {
		end := ""
		if i == len(machBaseline)-1 {
			end = ")"
		}
		w.line("  (global-name " + w.q(s.name) + ")" + end + " ; " + s.why)
	}

	w.section("System information, IPC and devices")
	w.line("(allow user-preference-read)")
	w.line("(allow ipc-posix-shm)")
	w.line("(allow ipc-posix-sem)")
	w.line("(allow distributed-notification-post)")
	w.line("(allow iokit-get-properties)")
	w.line("(allow iokit-open")
	w.line(`  (iokit-registry-entry-class "IOSurfaceRootUserClient")`)
	w.line(`  (iokit-registry-entry-class "RootDomainUserClient")`)
	w.line(`  (iokit-user-client-class "IOSurfaceSendRight"))`)
	w.line("(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))")
	filters := make([]string, 0, len(sysctlNames)+len(sysctlPrefixes))
	for _, n := range sysctlNames {
		filters = append(filters, "(sysctl-name "+w.q(n)+")")
	}
	for _, p := range sysctlPrefixes {
		filters = append(filters, "(sysctl-name-prefix "+w.q(p)+")")
	}
	w.rule("allow", "sysctl-read", filters)
	w.line(`(allow sysctl-write (sysctl-name "kern.tcsm_enable")) ; V8 (per-thread mitigation)`)
}

// machRules writes the opt-in Mach services and the caller's own list.
func (w *writer) machRules(in Input, lookups []string) {
	if in.WeakerNetworkIsolation {
		w.section("enableWeakerNetworkIsolation: trustd, for Go TLS verification (can reach the network itself)")
		w.line("(allow mach-lookup (global-name " + w.q(trustdService) + "))")
	}
	if in.AllowAppleEvents {
		w.section("allowAppleEvents: send Apple Events, open(1) other applications")
		w.line("(allow appleevent-send)")
		w.line("(allow lsopen)")
		filters := make([]string, 0, len(appleEventServices))
		for _, s := range appleEventServices {
			filters = append(filters, "(global-name "+w.q(s.name)+")")
		}
		w.rule("allow", "mach-lookup", filters)
	}
	if len(lookups) > 0 {
		w.section("allowMachLookup (a trailing * matches by prefix)")
		filters := make([]string, 0, len(lookups))
		for _, name := range lookups {
			if prefix, ok := strings.CutSuffix(name, "*"); ok {
				filters = append(filters, "(global-name-prefix "+w.q(prefix)+")")
			} else {
				filters = append(filters, "(global-name "+w.q(name)+")")
			}
		}
		w.rule("allow", "mach-lookup", filters)
	}
}
