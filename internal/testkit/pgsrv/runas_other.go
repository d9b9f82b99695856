//go:build !unix

package pgsrv

import "syscall"

// asServerUser does nothing where there is no root to avoid.
func asServerUser(string) (*syscall.SysProcAttr, error) { return nil, nil }
