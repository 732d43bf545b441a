//go:build unix && !linux

package promtest

import "syscall"

// sysProcAttr puts Prometheus in a process group of its own, so that stop
// can end the group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
