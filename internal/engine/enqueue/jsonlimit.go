package enqueue

// CheckJSONB reports what PostgreSQL's jsonb would make of the JSON text b
// (as json.Marshal returns it): the length of the text PostgreSQL writes
// back for it, and what keeps jsonb from storing it ("" when nothing; a
// phrase such as "holds an escaped NUL (\u0000)"). See checkJSONB. Job
// results and progress are checked with it.
func CheckJSONB(b []byte) (rendered int64, problem string) {
	size, p := checkJSONB(b)
	return size.rendered, p
}
