package proctest

import "syscall"

// SysProcAttr runs a child as cred (nil: as the test), in a process group
// of its own, so that Stop can end the group, and has the kernel kill it
// if the test binary dies before its cleanup runs.
func SysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
}
