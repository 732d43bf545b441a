package pgtest

import "syscall"

// sysProcAttr runs a child as cred (nil: as the test), in a process group
// of its own so that stopping it stops its backends too, and has the
// kernel kill it if the test binary dies before its cleanup runs.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
}
