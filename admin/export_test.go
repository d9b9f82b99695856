package admin

// ListSQL is the statement Jobs.List runs for a state; JobByIDSQL the one
// of Jobs.Get. For the plan tests.
func (c *Client) ListSQL(state string) string { return c.list[state] }
func (c *Client) JobByIDSQL() string          { return sqlJobByID.For(c.schema) }

// BoundedSettings are the settings the bounded reads run with.
const BoundedSettings = sqlBoundedSettings

// OverviewSQL are the statements of Overview and Workers, and of
// DeadLetters.Groups, with the arguments they run with. For the plan
// tests.
func (c *Client) OverviewSQL() map[string][]any {
	return map[string][]any{
		sqlOverviewQueues.For(c.schema):    {int64(OverviewLimit)},
		sqlOverviewTotals.For(c.schema):    {int64(OverviewLimit)},
		sqlOverviewUnserved.For(c.schema):  {unservedHead},
		sqlWorkers.For(c.schema):           nil,
		sqlUnservedSchedules.For(c.schema): nil,
		sqlTableStatus.For(c.schema):       nil,
		sqlHorizon.For(c.schema):           nil,
		sqlDeadGroups.For(c.schema):        {100, DeadGroupsScope},
		sqlRunningJobs.For(c.schema):       {[]string{"00000000-0000-0000-0000-000000000001"}, MaxRunningJobs},
		sqlScheduleOutcomes.For(c.schema):  nil,
	}
}

// WorkflowPagesSQL are the statements of Workflows.Page, Graph and OfJob
// and of Limits.Usage, each with arguments for a workflow id and a job id.
// For the plan tests.
func (c *Client) WorkflowPagesSQL(workflow, job int64, created any, page []int64) map[string][]any {
	return map[string][]any{
		"scan":      {sqlWorkflowScan.For(c.schema), int64(1<<63 - 1), WorkflowScan},
		"steps":     {sqlWorkflowSteps.For(c.schema), page, WorkflowStepCap},
		"graph":     {sqlWorkflowGraph.For(c.schema), workflow, MaxGraphSteps, created},
		"edges":     {sqlWorkflowEdges.For(c.schema), workflow, 4 * MaxGraphSteps},
		"signals":   {sqlWorkflowSignals.For(c.schema), workflow, true},
		"job":       {sqlJobWorkflow.For(c.schema), job},
		"usage":     {sqlLimitUsage.For(c.schema)},
		"cancelled": {sqlWorkflowScan.For(c.schema), workflow, 1},
	}
}

// CountSQL is the statement of Jobs.CountStates and CountSettings the
// settings it runs with. For the plan tests.
func (c *Client) CountSQL() string { return sqlCountStates.For(c.schema) }

const CountSettings = sqlCountSettings
