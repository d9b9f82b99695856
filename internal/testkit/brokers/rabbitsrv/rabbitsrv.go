package rabbitsrv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/docketq/docket/internal/testkit/pgsrv"
)

// SharedURL is where the machine's own RabbitMQ listens.
const SharedURL = "amqp://guest:guest@127.0.0.1:5672/"

// Server is a RabbitMQ broker, shared or private.
type Server struct {
	// URL is the broker's AMQP URL.
	URL string
	// Private is true for a node this package started.
	Private bool

	port   int
	dir    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// Discover returns the broker of $DOCKET_RABBITMQ_URL when it is set,
// else the shared one when it answers within two seconds and
// DOCKET_RABBITMQ is not "private", else a private node (see Start).
func Discover() (*Server, error) {
	if url := os.Getenv("DOCKET_RABBITMQ_URL"); url != "" {
		return &Server{URL: url}, nil
	}
	if os.Getenv("DOCKET_RABBITMQ") != "private" && answers(SharedURL, 2*time.Second) == nil {
		return &Server{URL: SharedURL}, nil
	}
	return Start()
}

// answers opens and closes an AMQP connection to url.
func answers(url string, timeout time.Duration) error {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(timeout)})
	if err != nil {
		return err
	}
	return conn.Close()
}

// Binary returns the path of the rabbitmq-server script, or an error
// saying how to install it. Debian's own script comes first: the one on
// PATH (/usr/sbin) is a wrapper that, run as root, switches to the
// rabbitmq user, who cannot write a private node's directory.
func Binary() (string, error) {
	if _, err := os.Stat(debianScript); err == nil {
		return debianScript, nil
	}
	if p, err := exec.LookPath("rabbitmq-server"); err == nil {
		return p, nil
	}
	return "", errors.New("rabbitsrv: rabbitmq-server not found: install it (Debian: apt-get install rabbitmq-server)")
}

const debianScript = "/usr/lib/rabbitmq/bin/rabbitmq-server"

// Start starts a private node on free 127.0.0.1 ports, its data in a new
// temporary directory, and waits until it accepts AMQP connections.
func Start() (*Server, error) {
	dir, err := os.MkdirTemp("", "docket-rabbitmq-")
	if err != nil {
		return nil, err
	}
	port, err := pgsrv.FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", port), Private: true, port: port, dir: dir}
	// Only loopback listens, and guest may connect over loopback; no
	// plugin, so no management listener to collide with the shared node's.
	files := map[string]string{
		"rabbitmq.conf":     fmt.Sprintf("listeners.tcp.default = 127.0.0.1:%d\nloopback_users.guest = true\n", port),
		"enabled_plugins":   "[].\n",
		"rabbitmq-env.conf": "",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// startTimeout bounds a node's boot: an Erlang VM and the broker's
// applications take several seconds on a small machine.
const startTimeout = 90 * time.Second

func (s *Server) start() error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	dist, err := pgsrv.FreePort()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"HOME="+s.dir, // the Erlang cookie
		"RABBITMQ_NODENAME=docket"+strconv.Itoa(s.port)+"@localhost",
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(s.port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(dist),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(s.dir, "rabbitmq-env.conf"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(s.dir, "rabbitmq.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(s.dir, "enabled_plugins"),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(s.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(s.dir, "log"),
		"RABBITMQ_PID_FILE="+filepath.Join(s.dir, "rabbitmq.pid"),
		"RABBITMQ_FEATURE_FLAGS_FILE="+filepath.Join(s.dir, "feature_flags"),
		"RABBITMQ_PLUGINS_EXPAND_DIR="+filepath.Join(s.dir, "plugins-expand"),
		"ERL_CRASH_DUMP="+filepath.Join(s.dir, "erl_crash.dump"),
		"ERL_EPMD_ADDRESS=127.0.0.1",
	)
	cmd.Dir = s.dir
	log, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("rabbitsrv: start %s: %w", bin, err)
	}
	log.Close()
	s.cmd = cmd
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(startTimeout)
	for {
		err := answers(s.URL, time.Second)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("rabbitsrv: rabbitmq-server exited before it answered: %w\n%s", err, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("rabbitsrv: rabbitmq-server on port %d did not answer within %s: %w\n%s", s.port, startTimeout, err, s.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logTail returns the end of the node's output, for errors.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b[max(0, len(b)-2048):])
}

// kill ends the node's whole process group (the script, the Erlang VM and
// its port programs) with SIGKILL, as a crash.
func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// Restart kills a private node with SIGKILL and starts it again on the
// same ports with the same data, as a broker crash and recovery: durable
// queues and the persistent messages it confirmed survive. It fails on the
// shared broker.
func (s *Server) Restart() error {
	if !s.Private {
		return errors.New("rabbitsrv: will not restart the shared broker")
	}
	s.kill()
	return s.start()
}

// Stop ends a private node and deletes its data; for the shared broker it
// does nothing.
func (s *Server) Stop() {
	if !s.Private {
		return
	}
	s.kill()
	os.RemoveAll(s.dir)
}
