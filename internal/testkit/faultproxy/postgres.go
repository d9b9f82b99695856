package faultproxy

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ForPostgres starts a proxy to the PostgreSQL server that connString names
// (its first host, which must be reached over TCP) and returns it with
// connString changed to connect through it. connString may be a URL
// (postgres://...) or keyword/value pairs; only its host and port change.
// It returns an error if connString does not parse or names a unix socket.
func ForPostgres(connString string) (*Proxy, string, error) {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return nil, "", fmt.Errorf("faultproxy: %w", err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		return nil, "", fmt.Errorf("faultproxy: %s is a unix socket; the proxy forwards TCP only", cfg.Host)
	}
	p, err := New(net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	if err != nil {
		return nil, "", err
	}
	host, port, _ := net.SplitHostPort(p.Addr())
	// Settings given last win in both forms: in a URL's query they also win
	// over the host list before the path.
	var out string
	if scheme, _, ok := strings.Cut(connString, "://"); ok && (scheme == "postgres" || scheme == "postgresql") {
		sep := "?"
		if strings.Contains(connString, "?") {
			sep = "&"
		}
		out = connString + sep + "host=" + host + "&port=" + port
	} else {
		out = connString + " host=" + host + " port=" + port
	}
	if got, err := pgconn.ParseConfig(out); err != nil || got.Host != host || strconv.Itoa(int(got.Port)) != port {
		p.Close()
		return nil, "", fmt.Errorf("faultproxy: cannot point the connection string at %s", p.Addr())
	}
	return p, out, nil
}
