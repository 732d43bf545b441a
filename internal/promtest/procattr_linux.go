package promtest

import "syscall"

// sysProcAttr puts Prometheus in a process group of its own, so that stop
// can end the group, and has the kernel kill it if the test binary dies
// before its cleanup runs.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
