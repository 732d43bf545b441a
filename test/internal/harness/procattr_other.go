//go:build unix && !linux

package harness

import "syscall"

// sysProcAttr gives a child a process group of its own, so that stop ends
// it and its children.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
