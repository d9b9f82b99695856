package bench

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuClock reads the CPU time used by this process (getrusage), the
// worker processes it started and the PostgreSQL server the bench talks
// to, when that server runs on this machine (/proc).
type cpuClock struct {
	postmaster int // 0 when the server's processes cannot be seen
	children   []int
}

// cpuUse is the CPU a timed part used, in seconds per 1,000 jobs.
type cpuUse struct {
	bench, pg float64
	pgKnown   bool
}

// newCPUClock finds the server's postmaster: the parent of this
// connection's backend, when the connection goes to a loopback address or
// a Unix socket and that process is a PostgreSQL one.
func newCPUClock(ctx context.Context, db *pgxpool.Pool) *cpuClock {
	c := &cpuClock{}
	host := db.Config().ConnConfig.Host
	if ip := net.ParseIP(host); !strings.HasPrefix(host, "/") && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return c
	}
	var backend int
	if err := db.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return c
	}
	comm, ppid, _, ok := procStat(backend)
	if !ok || !strings.HasPrefix(comm, "postgres") {
		return c
	}
	if comm, _, _, ok := procStat(ppid); ok && strings.HasPrefix(comm, "postgres") {
		c.postmaster = ppid
	}
	return c
}

// cpuTimes is a reading of cpuClock: the bench's time, and each server
// process's by pid.
type cpuTimes struct {
	bench time.Duration
	pg    map[int]time.Duration
}

func (c *cpuClock) read() cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t.bench = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, pid := range c.children {
		if _, _, used, ok := procStat(pid); ok {
			t.bench += used
		}
	}
	if c.postmaster == 0 {
		return t
	}
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return t
	}
	t.pg = map[int]time.Duration{}
	for _, d := range dir {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if _, ppid, used, ok := procStat(pid); ok && (pid == c.postmaster || ppid == c.postmaster) {
			t.pg[pid] = onCPU(pid, used)
		}
	}
	return t
}

// use returns the CPU used between from and to for jobs jobs. The
// server's figure is the time each server process alive at the second
// reading used since the first (all of it for one started in between); a
// backend that exits in between takes its time with it. It is the whole
// server's: other clients' work is in it too.
func (c *cpuClock) use(from, to cpuTimes, jobs int) cpuUse {
	if jobs <= 0 {
		return cpuUse{}
	}
	var pg time.Duration
	for pid, t := range to.pg {
		pg += max(0, t-from.pg[pid])
	}
	per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(jobs) }
	return cpuUse{bench: per(to.bench - from.bench), pg: per(pg), pgKnown: c.postmaster != 0}
}

// onCPU returns the time a single-threaded process (a PostgreSQL backend
// or helper) ran, in nanoseconds from /proc/<pid>/schedstat where the
// kernel keeps it, else ticks, the coarser figure of /proc/<pid>/stat.
func onCPU(pid int, ticks time.Duration) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return ticks
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ticks
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return ticks
	}
	return time.Duration(ns)
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's
// times; 100 on every Linux platform Go supports.
const clockTicks = 100

// procStat returns a process's command name, parent and user plus system
// CPU time from /proc/<pid>/stat.
func procStat(pid int) (comm string, ppid int, used time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return s[open+1 : end], ppid, time.Duration(utime+stime) * time.Second / clockTicks, true
}
