//go:build !linux

package main

import "syscall"

// chaosProcAttr: elsewhere than Linux a replica outliving a killed test
// binary is killed by nobody; the tests' cleanups kill it otherwise.
func chaosProcAttr() *syscall.SysProcAttr { return nil }
