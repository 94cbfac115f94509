package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// VmHWM is the peak resident set size, in KiB, of process pid's address
// space so far (Linux /proc/PID/status), 0 when it cannot be read. Unlike
// wait4's maxrss it does not carry the memory of whoever forked the
// process across exec.
func VmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
