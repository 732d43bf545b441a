//go:build linux

package main

import "syscall"

// chaosProcAttr has the kernel kill a replica when the test binary dies
// before it could (a test's timeout ends it without its cleanups).
func chaosProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
