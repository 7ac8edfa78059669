// Package temporaltool lets an agent workflow written on Temporal call an
// oncegate action exactly once, even when the agent's own worker dies
// between the preview, the user's approval and the confirm.
//
// The shape of one tool call (Call):
//   - the Preview activity asks the gateway for a fingerprint; its result —
//     the fingerprint — is recorded in the agent workflow's history;
//   - the approval is a signal (SignalApproval) that the workflow waits for;
//     it is recorded in the history too, and QueryPendingApproval shows what
//     waits to be approved;
//   - the Confirm activity sends that recorded fingerprint, on every attempt
//     the same, so a retried confirm is answered with the first outcome;
//   - the Status activity polls, from the workflow, with durable timers,
//     until the operation is completed or failed.
//
// A worker that dies at any point is replaced by one that replays the
// history: it never previews a confirmed call again and never confirms
// with another fingerprint, so the gateway executes the action once.
//
// Register the activities on the agent's worker with Register.
package temporaltool

const (
	// ActivityPreview is the registered name of Activities.Preview.
	ActivityPreview = "oncegate.Preview"
	// ActivityConfirm is the registered name of Activities.Confirm.
	ActivityConfirm = "oncegate.Confirm"
	// ActivityStatus is the registered name of Activities.Status.
	ActivityStatus = "oncegate.Status"
	// activityPrefix prefixes the methods of Activities when registered.
	activityPrefix = "oncegate."

	// SignalApproval is the signal that carries the user's Approval.
	SignalApproval = "oncegate-approval"
	// QueryPendingApproval answers the Preview that waits for approval, or null.
	QueryPendingApproval = "oncegate-pending-approval"
)
