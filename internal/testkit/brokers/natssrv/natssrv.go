package natssrv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docketq/docket/internal/testkit/pgsrv"
)

// SharedURL is where the machine's own NATS server listens.
const SharedURL = "nats://127.0.0.1:4222"

// Server is a NATS server with JetStream, shared or private.
type Server struct {
	// URL is the server's client URL.
	URL string
	// Private is true for a server this package started.
	Private bool

	port int
	dir  string
	cmd  *exec.Cmd
}

// Discover returns the shared server when it answers with JetStream within
// a second and DOCKET_NATS is not "private"; otherwise it starts a private
// one (see Start).
func Discover() (*Server, error) {
	if os.Getenv("DOCKET_NATS") != "private" && hasJetStream(SharedURL) == nil {
		return &Server{URL: SharedURL}, nil
	}
	return Start()
}

// hasJetStream connects to url and asks for the account's JetStream info.
func hasJetStream(url string) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.MaxReconnects(0))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Binary returns the path of nats-server, or an error saying how to install
// it.
func Binary() (string, error) {
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/nats-server", "/usr/local/bin/nats-server"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("natssrv: nats-server not found: install it (Debian: apt-get install nats-server)")
}

// Start starts a private nats-server with JetStream on a free 127.0.0.1
// port, its store in a new temporary directory, and waits until JetStream
// answers.
func Start() (*Server, error) {
	dir, err := os.MkdirTemp("", "docket-nats-")
	if err != nil {
		return nil, err
	}
	port, err := pgsrv.FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{URL: "nats://127.0.0.1:" + strconv.Itoa(port), Private: true, port: port, dir: dir}
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-sd", filepath.Join(s.dir, "store"))
	log, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("natssrv: start %s: %w", bin, err)
	}
	log.Close()
	s.cmd = cmd
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := hasJetStream(s.URL); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("natssrv: nats-server on port %d did not answer with JetStream within 15s (log in %s): %w", s.port, s.dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart stops a private server with SIGKILL and starts it again on the
// same port with the same store, as a broker crash and recovery. It fails
// on the shared server.
func (s *Server) Restart() error {
	if !s.Private {
		return errors.New("natssrv: will not restart the shared server")
	}
	s.kill()
	return s.start()
}

// Kill stops a private server with SIGKILL, leaving its store for Restart.
func (s *Server) Kill() {
	if s.Private {
		s.kill()
	}
}

// Stop ends a private server and deletes its store; for the shared server
// it does nothing.
func (s *Server) Stop() {
	if !s.Private {
		return
	}
	s.kill()
	os.RemoveAll(s.dir)
}
