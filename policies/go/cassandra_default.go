// The Cassandra driver's DefaultRetryPolicy (reference 003 "Behavior", "Hard-coded rules"): at
// most one retry, only where success is likely. The Go twin of policies/cassandra-default
// (Rust). The request's facts are read from rebound_policy_failure only where a rule needs them.
package export_rebound_policy_strategy

import (
	"wit_component/rebound_policy_failure"
	types "wit_component/rebound_policy_types"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

func rethrow() types.RetryAction { return types.MakeRetryActionRethrow() }

func retryNow(node types.NodeChoice) types.RetryAction {
	return types.MakeRetryActionRetry(types.Retry{DelayMs: 0, Node: node, Consistency: witTypes.None[types.ConsistencyLevel](), AttemptTimeoutMs: witTypes.None[uint64]()})
}

func firstTry() bool { return rebound_policy_failure.RetryAttempts() == 0 }

// On the next node if the request may be sent twice, else rethrown.
func nextIfIdempotent() types.RetryAction {
	if rebound_policy_failure.Idempotent() {
		return retryNow(types.NodeChoice_Next)
	}
	return rethrow()
}

func Configure(params []witTypes.Tuple2[string, string]) witTypes.Result[witTypes.Unit, string] {
	return witTypes.Ok[witTypes.Unit, string](witTypes.Unit{})
}

func RetryAfter(reason types.RetryReason) types.RetryAction {
	// The driver's rules are CQL's: a plain HTTP request or gRPC call gets the host's best effort.
	if service := rebound_policy_failure.Service(); service == types.Service_Http || service == types.Service_Grpc {
		return types.MakeRetryActionBestEffort()
	}
	switch reason.Tag() {
	// The driver's verdict methods.
	case types.RetryReason_ReadTimeout:
		e := reason.ReadTimeout()
		if e.Received >= e.BlockFor && !e.DataPresent && firstTry() {
			return retryNow(types.NodeChoice_Same)
		}
		return rethrow()
	case types.RetryReason_Unavailable:
		if firstTry() {
			return retryNow(types.NodeChoice_Next)
		}
		return rethrow()
	// Asked of the policy for idempotent requests only; rethrown otherwise.
	case types.RetryReason_WriteTimeout:
		if reason.WriteTimeout().WriteType == types.WriteType_BatchLog && rebound_policy_failure.Idempotent() && firstTry() {
			return retryNow(types.NodeChoice_Same)
		}
		return rethrow()
	case types.RetryReason_RequestAborted:
		if reason.RequestAborted() != types.AbortKind_Other {
			return nextIfIdempotent()
		}
		return rethrow()
	case types.RetryReason_SocketClosedWhileInFlight: // a closed connection
		return nextIfIdempotent()
	case types.RetryReason_ErrorResponse:
		switch reason.ErrorResponse() {
		case types.ServerErrorKind_QueryValidation, types.ServerErrorKind_FunctionFailure,
			types.ServerErrorKind_ProtocolError, types.ServerErrorKind_ReadFailure,
			types.ServerErrorKind_WriteFailure: // never retried
			return rethrow()
		}
		return nextIfIdempotent()
	// The driver's hard-coded rules.
	case types.RetryReason_Bootstrapping:
		return retryNow(types.NodeChoice_Next)
	case types.RetryReason_Unprepared:
		return retryNow(types.NodeChoice_Same)
	// Raised before the request was written anywhere: tried again on the next node.
	case types.RetryReason_SocketNotAvailable, types.RetryReason_ServiceNotAvailable,
		types.RetryReason_NodeNotAvailable, types.RetryReason_EndpointNotWritable,
		types.RetryReason_CircuitBreakerOpen, types.RetryReason_BucketNotAvailable,
		types.RetryReason_BucketOpenInProgress, types.RetryReason_GlobalConfigLoadInProgress,
		types.RetryReason_CollectionMapRefreshInProgress, types.RetryReason_AuthenticationError,
		types.RetryReason_TlsError, types.RetryReason_BucketAccessError,
		types.RetryReason_ScopeNotFound, types.RetryReason_CollectionNotFound:
		return retryNow(types.NodeChoice_Next)
	}
	return rethrow()
}
