//go:build unix && !linux

package proctest

import "syscall"

// SysProcAttr runs a child as cred (nil: as the test), in a process group
// of its own, so that Stop can end the group.
func SysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
