//go:build unix && !linux

package proctest

import "syscall"

// sysProcAttr gives a child a process group of its own, so that Stop
// can end the group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
