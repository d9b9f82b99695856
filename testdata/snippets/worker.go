// The declarations docs/worker.md's Go blocks assume.
package snippet

import "github.com/docketq/docket"

var client *docket.Client
