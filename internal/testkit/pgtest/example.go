package pgtest

// ExampleURL returns the connection string of the package's database for
// runnable examples, which get no *testing.T to pass to [URL]. It is ""
// outside [Main].
func ExampleURL() string { return dbURL }
