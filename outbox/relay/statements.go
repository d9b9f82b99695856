package relay

import "github.com/docketq/docket/internal/engine/pgsql"

// statements holds the relay's SQL rendered for its schema; each statement
// is written beside the code that runs it.
type statements struct {
	register, renew, giveBack, take, leave string
	fetch, mark, refuse                    string
	partitions, defaultPrune               string
	createPartition, dropPartition         string
}

func render(schema string) statements {
	r := func(s string) string { return pgsql.Render(s, schema) }
	return statements{
		register: r(sqlRegister), renew: r(sqlRenew), giveBack: r(sqlGiveBack), take: r(sqlTake),
		leave: r(sqlLeave), fetch: r(sqlFetch), mark: r(sqlMark), refuse: r(sqlRefuse),
		partitions: r(sqlPartitions), defaultPrune: r(sqlDefaultPrune),
		createPartition: r(sqlCreatePartition), dropPartition: r(sqlDropPartition),
	}
}
