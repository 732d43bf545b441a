package proctest

import "syscall"

// sysProcAttr gives a child a process group of its own, so that Stop
// can end the group, and has the kernel kill it if the test binary dies
// before its cleanup runs.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
