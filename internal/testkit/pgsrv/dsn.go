package pgsrv

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// WithDatabase returns connString with its database replaced by dbname.
// connString may be a URL (postgres://...) or a keyword/value string
// (host=... dbname=...); everything else in it is kept as written, including
// settings that pgx would otherwise take from the environment. It returns an
// error if connString does not parse.
func WithDatabase(connString, dbname string) (string, error) {
	if _, err := pgconn.ParseConfig(connString); err != nil {
		return "", fmt.Errorf("pgsrv: parse connection string: %w", err)
	}
	var out string
	if scheme, rest, ok := strings.Cut(connString, "://"); ok && (scheme == "postgres" || scheme == "postgresql") {
		out = scheme + "://" + urlWithPath(rest, url.PathEscape(dbname))
	} else {
		// In keyword/value form the last occurrence of a keyword wins.
		out = strings.TrimSpace(connString + " dbname='" + kvEscaper.Replace(dbname) + "'")
	}
	if cfg, err := pgconn.ParseConfig(out); err != nil || cfg.Database != dbname {
		return "", fmt.Errorf("pgsrv: cannot set database %q in connection string", dbname)
	}
	return out, nil
}

var kvEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

// urlWithPath replaces the path of a connection URL without its scheme,
// following libpq's grammar: optional userinfo ending at the first '@' before
// any '/', a host list ending at '/' or '?', then /dbname and ?query. Go's
// net/url is not used because it rejects libpq's multi-host lists.
func urlWithPath(rest, path string) string {
	start := 0
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		start = i + 1
	}
	end := len(rest)
	if i := strings.IndexAny(rest[start:], "/?"); i >= 0 {
		end = start + i
	}
	_, query, hasQuery := strings.Cut(rest[end:], "?")
	out := rest[:end] + "/" + path
	if hasQuery {
		// A dbname query parameter would override the path.
		var keep []string
		for p := range strings.SplitSeq(query, "&") {
			if k, _, _ := strings.Cut(p, "="); k != "dbname" && k != "database" {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			out += "?" + strings.Join(keep, "&")
		}
	}
	return out
}
