package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/docketq/docket/internal/engine/partition"
	"github.com/jackc/pgx/v5/pgxpool"
)

// partitionUpkeepEvery is how often partitions are made and dropped.
const partitionUpkeepEvery = time.Hour

// partitions keeps history partitions for today and the next days, and
// drops those older than the retention: before Start returns (prepare), at
// start and then hourly. It does nothing when history is off.
type partitions struct {
	loop
	db        *pgxpool.Pool
	log       *slog.Logger
	history   bool              // false: completed jobs are deleted, nothing to keep
	parts     partition.History // the history table's days
	retention time.Duration
	// now is the clock of partition upkeep; nil means the real clock. Tests
	// set it together with the finisher's.
	now func() time.Time
}

func (p *partitions) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// prepare creates the history partitions Start needs, so that no
// completion has to wait for one (and no transactional handler's completion
// fails for the lack of one). It tries a few times: partition DDL gives up
// quickly when another session holds a lock on the history table.
func (p *partitions) prepare(ctx context.Context) error {
	if !p.history {
		return nil
	}
	var err error
	for try := range 5 {
		if try > 0 {
			select {
			case <-time.After(time.Duration(try) * 100 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err = p.parts.Ensure(ctx, p.db, p.clock(), partition.Ahead); err == nil {
			return nil
		}
	}
	return err
}

func (p *partitions) start(ctx context.Context) {
	if !p.history {
		return
	}
	p.run(ctx, func(ctx context.Context) {
		p.upkeep(ctx)
		every(ctx, partitionUpkeepEvery, p.upkeep)
	})
}

// upkeep runs one round.
func (p *partitions) upkeep(bg context.Context) {
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	now := p.clock()
	if err := p.parts.Ensure(ctx, p.db, now, partition.Ahead); err != nil && ctx.Err() == nil {
		p.log.Warn("creating history partitions failed", slog.String("error", err.Error()))
	}
	dropped, err := p.parts.Drop(ctx, p.db, now.Add(-p.retention))
	if err != nil && ctx.Err() == nil {
		p.log.Warn("dropping old history partitions failed", slog.String("error", err.Error()))
	}
	if len(dropped) > 0 {
		p.log.Info("dropped history partitions past retention", slog.Any("partitions", dropped))
	}
}
