// Panics with the client-context entry `panic` as its message when the request has one, and
// answers the host's best effort otherwise: for the tests that show a Go panic's message
// reaches the decision's detail.
package export_rebound_policy_strategy

import (
	"wit_component/rebound_policy_failure"
	"wit_component/rebound_policy_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

func Configure(params []witTypes.Tuple2[string, string]) witTypes.Result[witTypes.Unit, string] {
	return witTypes.Ok[witTypes.Unit, string](witTypes.Unit{})
}

func RetryAfter(reason rebound_policy_types.RetryReason) rebound_policy_types.RetryAction {
	if message := rebound_policy_failure.ClientContext("panic"); message.IsSome() {
		panic(message.Some())
	}
	return rebound_policy_types.MakeRetryActionBestEffort()
}
