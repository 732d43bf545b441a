//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr runs a child as cred (nil: as the test), in a process group
// of its own so that stopping it stops its backends too.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
