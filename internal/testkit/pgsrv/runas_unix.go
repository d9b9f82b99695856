//go:build unix

package pgsrv

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// asServerUser prepares dir for the PostgreSQL processes and returns the
// process attributes to start them with. initdb, pg_ctl and postgres refuse
// to run as root, so as root they run as the postgres OS user (or nobody),
// who is given dir. For any other user it does nothing and returns nil.
func asServerUser(dir string) (*syscall.SysProcAttr, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("pgsrv: user %s: %w", name, err)
		}
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			return nil, fmt.Errorf("pgsrv: give %s to user %s: %w", dir, name, err)
		}
		return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
	}
	return nil, errors.New("pgsrv: running as root, and there is neither a postgres nor a nobody user to run PostgreSQL as (initdb and postgres refuse to run as root)")
}
