package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// How often progress is shown: redrawn on a terminal, printed otherwise.
const (
	barEvery  = 100 * time.Millisecond
	lineEvery = 5 * time.Second
	barWidth  = 30
)

// lockedWriter serializes writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// progress shows how far a phase is, n of total, from a counter the phase
// updates. It reads the counter on a timer, so updating it costs one
// atomic add.
type progress struct {
	r     *Runner
	label string
	total int64
	n     atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

// progress starts showing a phase's progress; call finish when it ends.
func (r *Runner) progress(label string, total int64) *progress {
	p := &progress{r: r, label: label, total: total, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progress) add(n int64) { p.n.Add(n) }
func (p *progress) set(n int64) { p.n.Store(n) }

func (p *progress) loop() {
	defer close(p.done)
	every := lineEvery
	if p.r.cfg.ProgressBar {
		every = barEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.show()
		}
	}
}

func (p *progress) show() {
	n := p.n.Load()
	if !p.r.cfg.ProgressBar {
		p.r.logf("%s: %d/%d", p.label, n, p.total)
		return
	}
	filled := int(int64(barWidth) * min(n, p.total) / max(p.total, 1))
	fmt.Fprintf(p.r.cfg.Progress, "\r[%s%s] %s %d/%d ", strings.Repeat("#", filled),
		strings.Repeat(".", barWidth-filled), p.label, n, p.total)
}

// finish stops the display; a progress bar is drawn one last time and its
// line ended.
func (p *progress) finish() {
	close(p.stop)
	<-p.done
	if p.r.cfg.ProgressBar {
		p.show()
		fmt.Fprintln(p.r.cfg.Progress)
	}
}
